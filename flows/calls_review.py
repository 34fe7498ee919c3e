"""``assay calls review``: draft regression cases, reviewed before they count.

A draft lives in the drafts file beside its call set (``calls.jsonl`` -> ``calls.drafts.yaml``), never in the
catalog: it holds the case made from a template and a production call, the call itself and why it was drafted.
:func:`accept` writes the case into the bundle file that defines the draft's suite (the team's ``cases:`` and
the suite's ``cases:``; the rest of the file, comments included, is kept as it was) and the call into the call
set, then drops the draft; it counts once that bundle is loaded (``assay load``). :func:`delete` drops it and
remembers its call, so importing the same export again does not draft it again. Every file is replaced whole
(a temporary file, then a rename), and only after the edited bundle has been read back and validated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.core.errors import BundleError, CallExportError, NotFoundError
from assay.core.files import replace_text

SCHEMA = "assay.call-drafts/v1"
HEADER = ("# Draft regression cases from production calls, written by `assay calls import`. Review them with\n"
          "# `assay calls review CALL_SET` (--accept KEY --into BUNDLE, or --delete KEY); a draft counts only once\n"
          "# accepted into a bundle and loaded.\n")


def drafts_path(call_set: Path) -> Path:
    """The drafts file of a call set: ``calls.jsonl`` -> ``calls.drafts.yaml``."""
    return call_set.with_name(f"{call_set.stem}.drafts.yaml")


def write_lines(call_set: Path, lines: list[str], new: list[dict[str, Any]]) -> None:
    """The call set as ``lines`` (kept as they were) followed by ``new``, one JSON object a line."""
    replace_text(call_set, "\n".join([*lines, *(json.dumps(c, ensure_ascii=False) for c in new)]) + "\n")


def write_drafts(path: Path, doc: dict[str, Any]) -> None:
    replace_text(path, HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))


def read_drafts(path: Path, suite: str | None = None, call_set: Path | None = None) -> dict[str, Any]:
    """The drafts file (a new, empty one for ``suite`` when it does not exist and ``suite`` is given)."""
    if not path.exists():
        if suite is None:
            raise CallExportError(str(path), [
                "no drafts here: `assay calls import VENDOR FILE --suite TEAM/SUITE --out CALL_SET --template KEY` "
                "drafts the failing calls that match no case"])
        return {"schema": SCHEMA, "suite": suite, "call_set": call_set.name if call_set else None, "drafts": [],
                "deleted": []}
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CallExportError(str(path), [f"not YAML ({exc}); it is written by `assay calls import`"]) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("drafts"), list):
        what = f"not a drafts file (schema {SCHEMA}); it is written by `assay calls import`"
        raise CallExportError(str(path), [what])
    if suite is not None and doc.get("suite") != suite:
        raise CallExportError(str(path), [f"holds drafts for suite {doc.get('suite')}, not {suite}; import into a call "
                                          "set of that suite, or name another --out"])
    doc.setdefault("deleted", [])
    return doc


def _find(doc: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    for draft in doc["drafts"]:
        if draft["key"] == key:
            return draft
    raise NotFoundError("draft", key, f"`assay calls review` lists the drafts in {path}",
                        known=[d["key"] for d in doc["drafts"]])


def listing(call_set: Path) -> dict[str, Any]:
    """The drafts of a call set."""
    path = drafts_path(call_set)
    doc = read_drafts(path)
    drafts = [{"key": d["key"], "call_id": d["call_id"], "template": d["template"], "reason": d["reason"],
               "title": d["case"]["title"], "turns": len(d["case"]["situation"].get("turns", []))}
              for d in doc["drafts"]]  # fmt: skip
    return {"action": "list", "suite": doc["suite"], "call_set": str(call_set), "drafts_file": str(path),
            "drafts": drafts, "deleted": list(doc["deleted"])}


def delete(call_set: Path, key: str) -> dict[str, Any]:
    """Drop a draft; its call is remembered so that importing the export again does not draft it again."""
    path = drafts_path(call_set)
    doc = read_drafts(path)
    draft = _find(doc, key, path)
    doc["drafts"].remove(draft)
    doc["deleted"].append(draft["call_id"])
    write_drafts(path, doc)
    return {**listing(call_set), "action": "deleted", "key": key}


def accept(call_set: Path, key: str, into: Path) -> dict[str, Any]:
    """Write the draft's case into the bundle ``into`` (which defines its suite) and its call into the call set."""
    from assay.core.bundle import _parse_yaml, validate_bundle
    from assay.core.bundle_input import InputLimits

    path = drafts_path(call_set)
    doc = read_drafts(path)
    draft = _find(doc, key, path)
    team, suite = doc["suite"].split("/", 1)
    if into.suffix.lower() not in (".yaml", ".yml") or not into.is_file():
        raise CallExportError(str(into), [f"--into names the YAML bundle that defines suite {doc['suite']} (the "
                                          "bundle you load); the case goes into its team and suite"])
    text = insert_case(into.read_text(encoding="utf-8"), str(into), team, suite, draft["case"])
    limits = InputLimits.from_settings()
    validate_bundle(_parse_yaml(str(into), text, limits.max_nesting), str(into), base_dir=into.resolve().parent,
                    limits=limits)
    lines = [ln for ln in call_set.read_text(encoding="utf-8").splitlines() if ln.strip()] if call_set.exists() else []
    known = {json.loads(ln)["call_id"] for ln in lines}
    replace_text(into, text)
    if draft["call_id"] not in known:
        write_lines(call_set, lines, [draft["call"]])
    doc["drafts"].remove(draft)
    write_drafts(path, doc)
    return {**listing(call_set), "action": "accepted", "key": key, "case": f"{team}/{key}", "into": str(into)}


# ------------------------------------------------------------------------------------ the bundle, edited in place

def _value(node: Any, key: str) -> Any:
    for k, v in node.value if isinstance(node, yaml.MappingNode) else ():
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
    return None


def _last_end(node: Any) -> int:
    """Where the last character of ``node``'s content is (the end of its last scalar or flow collection)."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return node.end_mark.index
    children = [v for pair in node.value for v in pair] if isinstance(node, yaml.MappingNode) else node.value
    return max((_last_end(c) for c in children), default=node.start_mark.index)


def _append(text: str, seq: Any, item: Any) -> tuple[int, str]:
    """(where, what) to insert so that ``seq`` (a sequence node of ``text``) ends with ``item``."""
    if seq.flow_style:
        at = text.rfind("]", 0, seq.end_mark.index)
        shown = json.dumps(item, ensure_ascii=False) if isinstance(item, dict) else item
        return at, (", " if seq.value else "") + shown
    first = seq.value[0].start_mark.index
    prefix = text[text.rfind("\n", 0, first) + 1:first]  # "      - " before the first item
    dash = prefix.index("-")
    body = (yaml.safe_dump(item, sort_keys=False, allow_unicode=True, width=1000) if isinstance(item, dict)
            else f"{item}\n").rstrip("\n").split("\n")  # fmt: skip
    lead = " " * dash + "-" + " " * (len(prefix) - dash - 1)
    block = "\n".join([lead + body[0], *(" " * len(prefix) + ln for ln in body[1:])])
    end = text.find("\n", _last_end(seq.value[-1]))
    return (len(text), "\n" + block) if end < 0 else (end, "\n" + block)


def insert_case(text: str, file: str, team: str, suite: str, case: dict[str, Any]) -> str:
    """``text`` (a bundle) with ``case`` added to ``team``'s cases and its key to ``suite``'s cases."""
    problem = None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise BundleError(file, [("", f"not YAML: {exc}")]) from None
    teams = _value(root, "teams")
    node = next((n for n in getattr(teams, "value", []) if getattr(_value(n, "id"), "value", None) == team), None)
    cases = _value(node, "cases") if node is not None else None
    suites = getattr(_value(node, "suites"), "value", []) if node is not None else []
    suite_node = next((s for s in suites if getattr(_value(s, "key"), "value", None) == suite), None)
    members = _value(suite_node, "cases") if suite_node is not None else None
    if node is None or suite_node is None:
        problem = f"defines no suite {team}/{suite}: name the bundle that does (the one you load for it)"
    elif not isinstance(cases, yaml.SequenceNode) or not isinstance(members, yaml.SequenceNode):
        problem = f"team {team} has no `cases:` list to add the case to; add `cases: []` under it"
    elif any(getattr(_value(c, "key"), "value", None) == case["key"] for c in cases.value):
        problem = f"team {team} already has a case {case['key']!r}; delete the draft or rename that case"
    if problem:
        raise CallExportError(file, [problem])
    edits = sorted([_append(text, cases, case), _append(text, members, case["key"])], reverse=True)
    for at, what in edits:
        text = text[:at] + what + text[at:]
    return text


__all__ = ["SCHEMA", "accept", "delete", "drafts_path", "insert_case", "listing", "read_drafts", "write_drafts",
           "write_lines"]
