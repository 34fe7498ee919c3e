"""The query reference, ``docs/reference/query.md``: every relation of :func:`assay.connect` and its columns.

Generated, never written by hand: relations, column names, DuckDB types and nullability come from the
connection itself over no rows (:func:`assay.storage.query.blank`), which is built from the lake's
Arrow schemas, the catalog's SQLAlchemy tables and the derived views' SQL. A column's description is
the first of: its schema's own (``doc`` in an Arrow field's metadata, ``doc`` or ``comment`` on a
catalog column, the derived views' column notes), the attribute docstring of the :mod:`assay.core.evidence`
model it was built from, and :data:`GLOSSARY` (what a column name means wherever it appears).

Regenerate with ``python -m assay.storage.reference docs/reference/query.md``; a test fails while the
committed file differs from what this module renders.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import sqlalchemy as sa

from assay.core.evidence import CaseRun, Evaluation

from . import views
from .lake.schema import PARTITIONS, LakeTable
from .lake.tables import TABLES
from .query import CATALOG_TABLES, blank

if TYPE_CHECKING:
    import duckdb

__all__ = ["COMMAND", "GLOSSARY", "main", "render"]

COMMAND = "python -m assay.storage.reference docs/reference/query.md"
"""The command that regenerates the committed reference."""

SUMMARIES = {
    "case_runs": "Evidence of one execution of one case, as the runner reported it.",
    "runner_evaluations": "A runner's own judgments of a case run, kept as evidence on the vendor's scale.",
    "outcomes": "One judging pass's outcome for one case run (every pass, not only the latest).",
    "assertion_results": "The atom: one result per (outcome, assertion version), from every judging pass.",
    "current_results": "The atoms of each case run's latest outcome (the rule of `latest_outcomes`), narrowed to "
    "what verdicts read; rewritten by every judging pass for the runs it judged.",
    "verdicts": "Materialised re-scores (`assay rescore --materialise`): one verdict per run, consumer and spec.",
    "run_verdicts": "Projected (the `projections` flow): per finalised run, consumer and criteria version -- the stamped "
    "one and the current one -- the verdict over the current results, with its coverage.",
    "case_verdicts": "Projected: the per-case breakdown of `run_verdicts`.",
    "behaviour_stats": "Projected: per run, assertion version and evaluator, how the current results came out; the "
    "fleet rollups (`fleet_weekly`, `behaviour_teams`, `behaviour_trend`) group these.",
    "evaluator_pairs": "Projected: our result of a behaviour against a vendor's evaluation of the same behaviour on the "
    "same case run (a `vendor.evaluation` naming it in `same_behaviour_as`).",
    "run_costs": "Projected: per run, what the runner reported spending and what our judge spent.",
    "teams": "The teams that own cases and suites.",
    "consumers": "Who reads verdicts (a CI gate, a publish gate, a nightly sweep).",
    "suites": "A run target and a selection of cases, owned by a team.",
    "cases": "A situation to test, owned by a team (its current content; runs snapshot it).",
    "assertions": "Every version of every assertion (a behaviour to check), of a suite or of a case.",
    "criteria": "Every version of every consumer's criteria for a suite.",
    "runs": "The run ledger: one row per run, its status and, once finalised, its outcome.",
    "run_criteria": "Per run and consumer: the criteria version stamped at the run's start and the verdict "
    "stamped at finalisation.",
    "criteria_terms": "Each criteria version's counted keys, one row per (term, key): what `verdicts_now` joins.",
}
"""One line per table saying what a row is (the derived views carry theirs in :data:`.views.DERIVED`)."""

GLOSSARY = {
    "team_id": "The owning team (in the lake: the partition folder `team_id=`).",
    "date": "The lake partition date, YYYY-MM-DD (the run's date; the folder `date=`).",
    "run_id": "The run (`runs.run_id`).",
    "suite_id": "The suite (`suites.suite_id`).",
    "case_id": "The case (`cases.case_id`).",
    "case_key": "The case's key, unique within its team.",
    "case_run_id": "One execution of one case in one run.",
    "consumer_key": "The consumer (`consumers.consumer_key`).",
    "criteria_id": "One version of a consumer's criteria for a suite (`criteria.criteria_id`).",
    "assertion_id": "One version of an assertion (`assertions.assertion_id`).",
    "assertion_key": "The behaviour's key; criteria name keys, never versions.",
    "assertion_version": "The version of the assertion that produced the result.",
    "outcome_id": "One judging pass's outcome for one case run (`outcomes.outcome_id`).",
    "pass_id": "The judging pass.",
    "result_id": "The atom's id, derived from (outcome, assertion version).",
    "evaluation_id": "The runner evaluation's id.",
    "verdict_id": "The materialised verdict's id, derived from (run, consumer, spec).",
    "runner": "The runner's registered name.",
    "request_id": "The report's idempotency key: reporting the same id twice changes nothing.",
    "case_snapshot": "The case's content as the run executed it (JSON text).",
    "case_snapshot_hash": "sha256 of the snapshot's canonical JSON.",
    "reported_at": "When the report was accepted.",
    "status": "Whether the case executed (`executed`, `error`), never whether it was good.",
    "transcript": "The conversation: role (caller, agent, system), text, t (seconds from the start).",
    "tool_calls": "The agent's tool calls: name, arguments and result (JSON text), is_error, t.",
    "provider_ref": "The vendor's id for this execution, when there is one.",
    "provider_payload": "The vendor's response as received, redacted (JSON text).",
    "cost_usd": "What the execution cost, in US dollars, when known.",
    "duration_ms": "How long the execution took, in milliseconds, when known.",
    "started_at": "When the execution started, when known.",
    "scale_min": "The low end of the runner's score scale.",
    "scale_max": "The high end of the runner's score scale.",
    "rationale": "The runner's explanation of its judgment, if it gave one.",
    "trigger": "Why the pass ran: `run` (after a run), `judge` (`assay judge`), `rejudge`, or `import` (`assay legacy import`: imported history).",
    "judged_at": "When the judging pass wrote the outcome (UTC).",
    "evaluated": "Results this outcome evaluated afresh.",
    "carried": "Results this outcome carried forward unchanged from the previous one.",
    "judge": "The judge model the pass used for rubric assertions (null: no judge configured).",
    "mechanism": "How the assertion is checked (a registered mechanism).",
    "met": "Whether the behaviour held; null when it could not be determined (never a pass).",
    "value": "The measured value behind `met`, for mechanisms that measure one.",
    "reason": "Why, in words.",
    "evaluator": "Who judged, as `<who>:<what>` (`assay:transcript`, `hamming:guardrail`, ...).",
    "current_results.run": "A 64-bit code of `run_id` (its first 64 bits), for the re-score; use `run_id`.",
    "current_results.case_run": "A 64-bit code of `case_run_id`, for the re-score; use `case_run_id`.",
    "current_results.key": "A 64-bit code of `assertion_key`, for the re-score; use `assertion_key`.",
    "evaluator_code": "A 64-bit code of `evaluator`, for the re-score; use `evaluator`.",
    "run_key_counts.null_case_runs": "Codes of the run's case runs with an undetermined result of this key "
                                     "(null: summarised before v2).",
    "run_key_counts.null_reason": "The smallest non-empty reason given for an undetermined result of this key.",
    "run_key_counts.case_runs": "The run's judged case runs, the same on each of its rows (null: summarised "
                                "before v2).",
    "evaluator_version": "The version of the evaluator that produced the result (a fixed evaluator bumps it).",
    "judge_tokens_in": "Our judge's prompt tokens for this result's judgement (null for other evaluators); a carried or "
                       "cached result repeats the figures of the judgement it reuses.",
    "judge_tokens_out": "Our judge's completion tokens for this result's judgement (null for other evaluators).",
    "judge_cost_usd": "What the judgement cost at the configured price (null when the price or the usage is unknown).",
    "criteria": "The criteria label: `vN` for a stored version, `candidate` for a spec file.",
    "spec_hash": "sha256 of the criteria spec's canonical JSON.",
    "verdicts.verdict": "The verdict under that spec: pass, fail or error.",
    "counted": "Results the criteria counts.",
    "verdicts.met": "Counted results that are met.",
    "nulls": "Counted results that could not be determined.",
    "computed_at": "When the verdict was materialised.",
    "created_at": "When the row was created (UTC).",
    "updated_at": "When the row last changed (UTC).",
    "name": "A human-readable name.",
    "description": "What it means, in words.",
    "suite_key": "The suite's key, unique within its team.",
    "target_kind": "What the suite runs against: `config` (a compiled config), `call_set` (recorded calls) or `exam` (a coding-agent exam).",
    "target": "The target itself (JSON).",
    "target_hash": "sha256 of the target's canonical JSON.",
    "title": "One line naming the situation.",
    "content": "The case's content: title and situation (JSON).",
    "content_hash": "sha256 of the content's canonical JSON.",
    "source_recipe_id": "The template (recipe) the case came from, if any.",
    "owner": "`suite:<suite_id>` or `case:<case_id>`: the assertion's owner.",
    "params": "The mechanism's parameters (JSON).",
    "role": "Optional vendor-slot hint: which designated slot of a vendor the assertion goes into.",
    "version": "The version number, from 1, unique per owner and key.",
    "spec": "The criteria spec (JSON: required, threshold, ignore).",
    "provider": "The vendor the runner talks to, when it has one.",
    "runs.request_id": "The idempotency key the run was created with, if any.",
    "runs.provider_ref": "The vendor's id for the run, when it has one.",
    "criteria.version": "The version number, from 1, unique per suite and consumer.",
    "assertions.content_hash": "sha256 of the stored definition (mechanism, params, role, description).",
    "runs.status": "pending, running, released, completed, error or timed_out.",
    "status_reason": "Why the run ended in error or timed out.",
    "lease_owner": "Who holds the run's lease (host:pid), while one is held.",
    "lease_expires_at": "When the lease lapses unless renewed.",
    "deadline_at": "When the run stops being worth waiting for.",
    "claimed_at": "When a runner first claimed the run.",
    "last_report_at": "When the last report was accepted.",
    "finalised_at": "When the run was frozen (completed, error or timed out).",
    "outcome": "The most severe stamped verdict of the run's consumers: error, then fail, then pass.",
    "case_count": "How many cases the run executes.",
    "runs.case_runs": "Case runs accepted so far.",
    "evaluations": "Runner evaluations accepted so far.",
    "lake_date": "The lake partition date of the run's files.",
    "run_criteria.version": "The criteria version stamped at the run's start.",
    "run_criteria.verdict": "The verdict stamped at finalisation (pass, fail, error); null before.",
    "verdict_reason": "Why, as stamped.",
}
"""What a column means, by ``table.column`` or, for a name that means the same everywhere, by ``column``."""


def render() -> str:
    """The reference as Markdown."""
    con = blank()
    case_run = _attribute_docs(CaseRun)  # an evaluation names its case run by the case run's case_id and source_ref
    models = {"case_runs": case_run, "runner_evaluations": {**case_run, **_attribute_docs(Evaluation)}}
    out = [
        "# Query reference",
        "",
        f"<!-- Generated by `{COMMAND}` from the schemas; do not edit by hand. -->",
        "",
        "Every relation of `assay.connect()` and `assay query`, with its columns and their DuckDB types.",
        "Lake tables read the Parquet files the catalog's manifest lists; catalog tables are copied from the",
        "catalog when the connection opens (JSON columns are typed `JSON`); derived views are SQL over both.",
        "",
        "## Derived views",
    ]
    for name, (_, summary, notes) in views.DERIVED.items():
        if name not in TABLES:
            out += _relation(con, name, summary, lambda c, notes=notes, n=name: notes.get(c) or _gloss(n, c))
    out += _relation(con, "criteria_terms", SUMMARIES["criteria_terms"], lambda c: _field_doc(views.CRITERIA_TERMS, c)
                     or _gloss("criteria_terms", c), _nullable(views.CRITERIA_TERMS))
    out += ["", "## Lake tables"]
    for name, table in TABLES.items():
        described = models.get(name, {})
        out += _relation(con, name, f"{SUMMARIES.get(name, '')} {_lake_facts(table)}".strip(),
                         lambda c, t=table, d=described: _field_doc(t.read_schema, c) or d.get(c) or _gloss(t.name, c),
                         _nullable(table.read_schema))
    out += ["", "## Catalog tables"]
    for table in CATALOG_TABLES:
        out += _relation(con, table.name, f"{SUMMARIES.get(table.name, '')} {_catalog_facts(table)}".strip(),
                         lambda c, t=table: _column_doc(t.c[c]) or _gloss(t.name, c),
                         {c.name: bool(c.nullable) for c in table.columns})
    return "\n".join(out) + "\n"


def _relation(
    con: "duckdb.DuckDBPyConnection", name: str, summary: str, describe: Callable[[str], str | None],
    nullable: dict[str, bool] | None = None,
) -> list[str]:
    """A relation's heading, summary and one table row per column, as DuckDB describes it."""
    lines = ["", f"### `{name}`", "", summary, "", "| column | type | null | description |", "|---|---|---|---|"]
    for column, kind, *_ in con.sql(f'DESCRIBE "{name}"').fetchall():
        null = "" if nullable is None else ("yes" if nullable[column] else "no")
        lines.append(f"| `{column}` | {_cell(kind)} | {null} | {_cell(describe(column) or '')} |")
    return lines


def _lake_facts(table: LakeTable) -> str:
    return (f"Parquet, partitioned by {' and '.join(f'`{p}`' for p in PARTITIONS)}; schema version {table.version}; "
            f"one row per {', '.join(f'`{k}`' for k in table.natural_key)}.")


def _catalog_facts(table: sa.Table) -> str:
    keys = ", ".join(f"`{c.name}`" for c in table.primary_key.columns)
    refs = [f"`{fk.parent.name}` → `{fk.target_fullname}`"
            for fk in sorted(table.foreign_keys, key=lambda f: f.parent.name)]
    return f"Primary key {keys}" + (f"; references {', '.join(refs)}." if refs else ".")


def _gloss(table: str, column: str) -> str | None:
    return GLOSSARY.get(f"{table}.{column}") or GLOSSARY.get(column)


def _field_doc(schema: pa.Schema, column: str) -> str | None:
    if column not in schema.names:
        return None
    metadata = schema.field(column).metadata or {}
    return metadata[b"doc"].decode() if b"doc" in metadata else None


def _column_doc(column: sa.Column) -> str | None:
    return column.doc or column.comment


def _nullable(schema: pa.Schema) -> dict[str, bool]:
    return {f.name: f.nullable for f in schema}


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings under a class's annotated attributes (how :mod:`assay.core` documents model fields)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    return {
        node.target.id: " ".join(doc.value.value.split()).replace("``", "`")
        for node, doc in zip(body, body[1:])
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> None:
    """Write the reference to the path given (print it when none is)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if args:
        Path(args[0]).write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
