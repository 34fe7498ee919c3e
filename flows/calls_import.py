"""``assay calls import``: a vendor's call export into a suite's call set, with failing strangers drafted as cases.

Each call of the export (:mod:`assay.adapters.call_exports`) is matched to a case of the suite: ``--case KEY``
for every call, else the value of ``--match FIELD`` (default ``assay_case``) in the call's own metadata,
which must be a case key of the suite. A matched call becomes a line of the call set ``--out`` with that
``case`` (a call that failed to execute too: replayed, it is an ERROR case run). A call that matches no case:

- failed by the vendor's own verdict (any of its evaluations ``fail``): a **draft** regression case from
  ``--template KEY``, filled with the team's ``--facts FILE`` and the values the vendor extracted from the call,
  with the caller's turns as its scripted ``turns`` and the vendor's summary as what the caller ``wants``. The
  draft and its call go to the drafts file beside the call set (:func:`assay.flows.calls_review.drafts_path`),
  never to the catalog; ``assay calls review`` accepts or deletes it;
- passed, had no verdict, or did not execute: skipped, and listed with why.

Nothing is written unless every call reads and every line checks (:func:`assay.core.callset.check_line`);
each file is then replaced whole (a temporary file, then a rename). What is written is redacted first
(:func:`assay.core.redact.redact`: transcripts, tool calls, payloads, the drafts' titles), as a call set
and its drafts are files people share and commit. A call already in the call set, already
drafted or already deleted as a draft is left alone, so importing the same export again changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from assay.adapters.call_exports import ExportedCall, read_export
from assay.core.callset import check_line, explain
from assay.core.errors import CallExportError, NotFoundError, UsageError

from .calls_review import read_drafts, write_drafts, write_lines

MATCH_DEFAULT = "assay_case"


def _suite(conn: sa.Connection, suite: str) -> tuple[str, list[str]]:
    """(TEAM/SUITE, the suite's case keys in order)."""
    from assay.storage.catalog import tables as t
    from assay.storage.catalog.runs import find_suite

    row = find_suite(conn, suite)
    keys = conn.execute(sa.select(t.cases.c.case_key).join(t.suite_cases, t.suite_cases.c.case_id == t.cases.c.case_id)
                        .where(t.suite_cases.c.suite_id == row.suite_id).order_by(t.suite_cases.c.position)).scalars()
    return f"{row.team_id}/{row.suite_key}", list(keys)


def _template(conn: sa.Connection, key: str) -> Any:
    from assay.storage.catalog.templates import latest_templates, template_def

    rows = latest_templates(conn)
    if key not in rows:
        raise NotFoundError("template", key, "load a bundle that declares it under `templates:` (`assay load BUNDLE`); "
                            "`assay template ls` lists them", known=list(rows))
    return template_def(rows[key]), rows[key].version


def _existing(out: Path, case_keys: list[str]) -> list[str]:
    """The call set's lines as they are (raw text), after checking the whole file against the suite."""
    if not out.exists():
        return []
    problems, more = explain(out, case_keys)
    if problems:
        said = [f"line {n}, {f or 'the line'}: {what}" if n else what for n, f, what in problems]
        raise CallExportError(str(out), [*said, *(["and more"] if more else []),
                                         "--out is a call set of this suite: fix it, or name a new file"])
    return [ln for ln in out.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _ids(lines: list[str]) -> set[str]:
    import json

    return {json.loads(ln)["call_id"] for ln in lines}


def draft_key(template: str, call: ExportedCall, taken: set[str]) -> str:
    """``<template>-<vendor>-<first 8 characters of the vendor's id>``, longer when that is taken."""
    ref = re.sub(r"[^a-z0-9]+", "-", str(call.line["provider_ref"]).lower()).strip("-")
    for size in (8, 16, 64):
        key = f"{template}-{call.line['provider']}-{ref[:size]}".strip("-")[:64].rstrip("-_")
        if key not in taken:
            return key
    raise CallExportError(call.line["call_id"], [f"no free case key for a draft from template {template!r}"])


def _draft(call: ExportedCall, key: str, template: Any, version: int, facts: dict[str, Any], facts_file: str,
           why: str) -> dict[str, Any]:
    """A draft: the case made from the template and the call, the call itself, and why it was drafted."""
    from assay.core.bundle_models import CaseDef
    from assay.core.template_facts import instantiate_all

    mine = {k: v for k, v in {**facts, **call.facts}.items() if k in template.placeholders}
    made = instantiate_all(template.key, [template], mine, facts_file).pop()
    body = made.model_dump(mode="json", exclude_defaults=True)
    situation = body["situation"]
    turns = [t["text"] for t in call.line.get("transcript", []) if t["role"] == "caller" and t["text"].strip()]
    if turns:
        situation["turns"] = turns
    if call.summary:
        situation["wants"] = call.summary
    body = {**body, "key": key, "title": f"{made.title} (regression from call {call.line['call_id']})"}
    CaseDef.model_validate(body)
    return {"key": key, "call_id": call.line["call_id"], "template": template.key, "template_version": version,
            "reason": why, "case": body, "call": {**call.line, "case": key}}


def _why(call: ExportedCall, match: str, case: str | None) -> str:
    failed = [e["name"] for e in call.line.get("evaluations", []) if e.get("verdict") == "fail"]
    named = call.metadata.get(match)
    how = f"--case {case}" if case else (f"its metadata {match} {named!r} is no case of the suite" if named
                                         else f"it has no {match} in its metadata")
    return f"failed by {call.line['provider']}'s own verdict ({', '.join(failed)}) and matches no case: {how}"


def import_calls(engine: sa.Engine, vendor: str, file: str, suite: str, out: str, *, match: str = MATCH_DEFAULT,
                 case: str | None = None, template: str | None = None, facts: str | None = None) -> dict[str, Any]:
    """Import ``file`` (``vendor``'s export) into the call set ``out`` of ``suite``; failing strangers as drafts."""
    from assay.core.bundle_input import InputProblem, resolved
    from assay.core.redact import redact
    from assay.core.template_facts import read_facts

    from .calls_review import drafts_path

    for named in (file, out):
        try:
            resolved(Path(named))
        except InputProblem as exc:
            raise CallExportError(named, [str(exc)]) from None
    calls = read_export(vendor, file)
    with engine.connect() as conn:
        suite_name, case_keys = _suite(conn, suite)
        tpl = _template(conn, template) if template else None
    if case is not None and case not in case_keys:
        raise NotFoundError("case", case, f"--case names a case of {suite_name}", known=case_keys)
    if facts and not template:
        raise UsageError("--facts fills the template of a draft: give --template KEY with it")
    team_facts = read_facts(facts) if facts else {}
    call_set = Path(out)
    lines = _existing(call_set, case_keys)
    drafts_file = drafts_path(call_set)
    doc = read_drafts(drafts_file, suite_name, call_set)
    known = _ids(lines) | {d["call_id"] for d in doc["drafts"]} | set(doc["deleted"])
    taken = set(case_keys) | {d["key"] for d in doc["drafts"]}
    body: dict[str, Any] = {"vendor": vendor, "file": file, "suite": suite_name, "call_set": str(call_set),
                            "drafts_file": str(drafts_file), "matched": [], "drafted": [], "skipped": [],
                            "already_imported": []}  # fmt: skip
    new_lines: list[dict[str, Any]] = []
    problems: list[str] = []
    for call in calls:
        call_id = call.line["call_id"]
        if call_id in known:
            body["already_imported"].append(call_id)
            continue
        key = case if case is not None else call.metadata.get(match)
        if isinstance(key, str) and key in case_keys:
            line = redact({**call.line, "case": key})
            problems += [f"call {call_id}: {f or 'the line'}: {what}" for f, what in check_line(line, case_keys)]
            new_lines.append(line)
            body["matched"].append({"call_id": call_id, "case": key, "verdict": call.verdict})
        elif call.verdict != "fail":
            why = {"error": "did not execute (vendor-side error)", "pass": "passed",
                   "unknown": "no verdict of the vendor's"}
            body["skipped"].append({"call_id": call_id, "verdict": call.verdict,
                                    "reason": f"matches no case and {why[call.verdict]}: nothing to draft"})
        elif tpl is None:
            body["skipped"].append({"call_id": call_id, "verdict": call.verdict, "reason": _why(call, match, case)
                                    + "; give --template KEY (and --facts FILE) to draft a regression case from it"})
        else:
            draft = redact(_draft(call, draft_key(tpl[0].key, call, taken), *tpl, team_facts,
                                  facts or "--facts FILE", _why(call, match, case)))
            problems += [f"draft {draft['key']}: {f}: {what}" for f, what in check_line(draft["call"], {draft["key"]})]
            taken.add(draft["key"])
            doc["drafts"].append(draft)
            body["drafted"].append({"key": draft["key"], "call_id": call_id, "reason": draft["reason"]})
    if problems:
        raise CallExportError(file, problems)
    if new_lines:
        write_lines(call_set, lines, new_lines)
    if body["drafted"]:
        write_drafts(drafts_file, doc)
    body["changed"] = bool(new_lines or body["drafted"])
    return body


__all__ = ["MATCH_DEFAULT", "draft_key", "import_calls"]
