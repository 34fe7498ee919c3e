"""Mapping a validated legacy export (:mod:`.legacy`) onto our model, as history, once.

- a legacy case -> a ``cases`` row of its team, key ``legacy-<prefix>-<legacy id>``;
- per lineage and target (the config or assistant its runs targeted) one suite,
  ``legacy-<prefix>-<target>``, tagged ``legacy`` (nothing to run), with one opaque assertion (:data:`VERDICT_KEY`,
  mechanism :data:`VERDICT_MECHANISM`, which judging never evaluates);
- a legacy run -> a final ``runs`` row (runner ``legacy:<lineage>``, request id
  ``legacy:<lineage>:<legacy id>``: the idempotency key) with its cases snapshotted, no criteria;
- each legacy result -> a case run, an outcome (trigger ``import``) and exactly one result: met and
  value read from the blob, the blob itself (canonical JSON) as the reason.

What the catalog already holds (a case key, a suite, a run's request id) is left as it is and counted
as already imported: importing the same export twice writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.errors import LegacyExportError
from assay.core.ids import canonical_json, content_hash, is_identifier, new_id
from assay.core.names import listed
from assay.storage.catalog import tables as t
from assay.storage.catalog.names import team_ids
from assay.storage.catalog.runs import HISTORY_RUNNER_PREFIX, HISTORY_TAG, snapshot
from assay.storage.evidence import case_run_ids
from assay.storage.history import CATALOG_ORDER, write_history

from .legacy import Export, Row, read_export
from .workspace import Workspace

VERDICT_KEY = "legacy_verdict"
"""The assertion key of every imported legacy verdict."""
VERDICT_MECHANISM = "legacy.verdict"
"""Its mechanism: a stored verdict, never evaluated (judging refuses imported history)."""


@dataclass
class ImportPlan:
    """Everything one import writes: catalog rows by table (in write order) and the lake frames."""

    lineage: str
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    case_runs: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    already: dict[str, int] = field(default_factory=lambda: {"cases": 0, "runs": 0})

    def counts(self) -> dict[str, int]:
        """What the plan imports: cases, suites, runs, case runs and opaque results."""
        tables = {name: len(self.rows.get(name, [])) for name in ("cases", "suites", "runs")}
        return {**tables, "case_runs": len(self.case_runs), "results": len(self.results)}


def _key(prefix: str, ident: str) -> str | None:
    key = f"legacy-{prefix}-{ident.lower()}"
    return key if is_identifier(key) else None


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def plan_import(conn: sa.Connection, export: Export, team: str | None, now: datetime) -> ImportPlan:
    """What importing ``export`` for ``team`` (default: each row's ``team_id``) writes now; raises
    :class:`LegacyExportError` (nothing written) for rows without a known team or a usable key."""
    line = export.lineage
    problems: list[str] = []
    known = set(team_ids(conn))

    unknown: dict[str, list[str]] = {}  # a team the catalog lacks -> the rows naming it

    def team_of(row: Row) -> str:
        owner = team or row.get("team_id")
        where = f"{row['_file']}: row {row['_row']}"
        if owner is None:
            problems.append(f"{where}, column 'team_id': empty; give it, or import with --team TEAM")
        elif owner not in known:
            unknown.setdefault(owner, []).append(where)
        return owner or ""

    def key_of(row: Row, column: str) -> str:
        key = _key(line.key_prefix, row[column])
        if key is None:
            problems.append(f"{row['_file']}: row {row['_row']}, column {column!r}: {row[column]!r} cannot name a "
                            "key (letters, digits, '_' and '-', at most 64 characters with its legacy- prefix)")
        return key or ""

    cases = {c["id"]: {**c, "_team": team_of(c), "_key": key_of(c, "id")} for c in export.cases}
    runs = {r["id"]: {**r, "_team": team_of(r), "_suite": key_of(r, line.run_target)} for r in export.runs}
    if line.case_target:
        for c in cases.values():
            c["_suite"] = key_of(c, line.case_target)
    for r in export.results:
        run, case = runs[r[line.result_run]], cases[r[line.result_case]]
        if run["_team"] != case["_team"]:
            problems.append(f"{r['_file']}: row {r['_row']}: its run belongs to team {run['_team']!r} and its case "
                            f"to {case['_team']!r}; a run tests its own team's cases (or import with --team TEAM)")
    for owner, rows in unknown.items():
        more = f" and {len(rows) - 1} more row(s)" if len(rows) > 1 else ""
        problems.append(f"{rows[0]}{more}: team {owner!r} is not in the catalog (known: {listed(sorted(known))}); "
                        "load a bundle that declares it (`assay load BUNDLE`) or import with --team TEAM")
    if problems:
        raise LegacyExportError(export.folder, problems)
    return _Planner(conn, export, cases, runs, now).plan()


class _Planner:
    def __init__(self, conn: sa.Connection, export: Export, cases: dict[str, Row], runs: dict[str, Row],
                 now: datetime):
        self.conn, self.export, self.line, self.now = conn, export, export.lineage, now
        self.cases, self.runs = cases, runs
        self.runner = f"{HISTORY_RUNNER_PREFIX}{self.line.name}"
        self.out = ImportPlan(self.line.name, {name: [] for name in CATALOG_ORDER})

    def plan(self) -> ImportPlan:
        line, results_of = self.line, self._results_by_run()
        fresh_runs = self._fresh_runs()
        case_rows = self._cases()
        members: dict[tuple[str, str], tuple[str, set[str]]] = {}  # (team, suite key) -> (target, legacy case ids)
        for c in self.cases.values():
            if line.case_target:
                members.setdefault((c["_team"], c["_suite"]), (c[line.case_target], set()))[1].add(c["id"])
        for r in self.runs.values():
            members.setdefault((r["_team"], r["_suite"]), (r[line.run_target], set()))[1].update(
                x[line.result_case] for x in results_of.get(r["id"], []))
        suites = self._suites(members, case_rows)
        for r in sorted(self.runs.values(), key=lambda r: (r["started_at"], r["id"])):
            if r["id"] in fresh_runs:
                self._run(r, results_of.get(r["id"], []), suites[(r["_team"], r["_suite"])], case_rows)
        return self.out

    def _results_by_run(self) -> dict[str, list[Row]]:
        by_run: dict[str, list[Row]] = {}
        for x in self.export.results:
            by_run.setdefault(x[self.line.result_run], []).append(x)
        return by_run

    def _fresh_runs(self) -> set[str]:
        ids = {self._request_id(r): r["id"] for r in self.runs.values()}
        q = sa.select(t.runs.c.request_id).where(t.runs.c.request_id.in_(list(ids)))
        done = set(self.conn.execute(q).scalars())
        self.out.already["runs"] = len(done)
        return {legacy for request, legacy in ids.items() if request not in done}

    def _request_id(self, run: Row) -> str:
        return f"{self.runner}:{run['id']}"

    def _cases(self) -> dict[str, Any]:
        """Legacy case id -> its catalog row (stored, or new and planned)."""
        c = t.cases
        keys = [x["_key"] for x in self.cases.values()]
        stored = {(r.team_id, r.case_key): r for r in self.conn.execute(sa.select(c).where(c.c.case_key.in_(keys)))}
        rows: dict[str, Any] = {}
        for x in sorted(self.cases.values(), key=lambda x: x["_key"]):
            row = stored.get((x["_team"], x["_key"]))
            if row is not None:
                self.out.already["cases"] += 1
                rows[x["id"]] = row
                continue
            columns = {k: _iso(v) for k, v in x.items() if not k.startswith("_") and k != "team_id"}
            content = {"legacy": {"lineage": self.line.name, **columns}}
            new = {"case_id": new_id(), "team_id": x["_team"], "case_key": x["_key"],
                   "title": x[self.line.case_title], "content": content, "content_hash": content_hash(content),
                   "source_recipe_id": None, "created_at": x.get("created_at") or self.now, "updated_at": self.now}
            self.out.rows["cases"].append(new)
            rows[x["id"]] = SimpleNamespace(**new)
        return rows

    def _suites(self, members: dict[tuple[str, str], tuple[str, set[str]]], case_rows: dict[str, Any]
                ) -> dict[tuple[str, str], tuple[str, str]]:
        """(team, suite key) -> (suite id, its verdict assertion's id); new suites, their assertion and new
        memberships are planned."""
        s, sc, a = t.suites, t.suite_cases, t.assertions
        keys = sorted({k for _, k in members})
        q = sa.select(s.c.team_id, s.c.suite_key, s.c.suite_id).where(s.c.suite_key.in_(keys))
        stored = {(r.team_id, r.suite_key): r.suite_id for r in self.conn.execute(q)}
        positions: dict[str, dict[str, int]] = {}
        q = sa.select(sc.c.suite_id, sc.c.case_id, sc.c.position).where(sc.c.suite_id.in_(list(stored.values())))
        for r in self.conn.execute(q):
            positions.setdefault(r.suite_id, {})[r.case_id] = r.position
        q = sa.select(a.c.owner, a.c.assertion_id).where(
            a.c.owner.in_([f"suite:{i}" for i in stored.values()]), a.c.assertion_key == VERDICT_KEY, a.c.version == 1)
        asserted = dict(self.conn.execute(q).all())
        out: dict[tuple[str, str], tuple[str, str]] = {}
        for (team, key), (target, legacy_cases) in sorted(members.items()):
            suite_id = stored.get((team, key)) or self._suite(team, key, target)
            assertion_id = asserted.get(f"suite:{suite_id}")
            if assertion_id is None:
                assertion = self._assertion(team, suite_id)
                self.out.rows["assertions"].append(assertion)
                assertion_id = assertion["assertion_id"]
            have = positions.get(suite_id, {})
            position = max(have.values(), default=-1)
            for case_id in sorted(case_rows[c].case_id for c in legacy_cases):
                if case_id not in have:
                    position += 1
                    self.out.rows["suite_cases"].append(
                        {"suite_id": suite_id, "case_id": case_id, "position": position})
            out[(team, key)] = (suite_id, assertion_id)
        return out

    def _suite(self, team: str, key: str, target_id: str) -> str:
        suite_id, target = new_id(), {"legacy": self.line.name, self.line.run_target: target_id}
        self.out.rows["suites"].append({
            "suite_id": suite_id, "team_id": team, "suite_key": key, "target_kind": "config", "target": target,
            "name": f"Legacy history: {self.line.title}, {self.line.run_target} {target_id}",
            "target_hash": content_hash(target), "tags": [HISTORY_TAG], "created_at": self.now, "updated_at": self.now})
        return suite_id

    def _assertion(self, team: str, suite_id: str) -> dict[str, Any]:
        stored = {"mechanism": VERDICT_MECHANISM, "params": {"lineage": self.line.name}, "role": None,
                  "description": f"The verdict {self.line.title} stored, imported once as history: one opaque "
                                 "result per legacy result, never one per check it lists."}
        return {"assertion_id": new_id(), "team_id": team, "case_id": None, "suite_id": suite_id,
                "owner": f"suite:{suite_id}", "assertion_key": VERDICT_KEY, **stored, "version": 1,
                "content_hash": content_hash(stored), "created_at": self.now}

    def _run(self, run: Row, results: list[Row], suite: tuple[str, str], case_rows: dict[str, Any]) -> None:
        line, run_id = self.line, new_id()
        started: datetime = run["started_at"]
        snaps = {}
        legacy_cases = sorted({x[line.result_case] for x in results}, key=lambda c: case_rows[c].case_key)
        for position, legacy in enumerate(legacy_cases):
            row = case_rows[legacy]
            snaps[row.case_id] = snap = snapshot(row)
            self.out.rows["run_cases"].append({"run_id": run_id, "case_id": row.case_id, "case_key": row.case_key,
                                               "position": position, "snapshot": snap,
                                               "snapshot_hash": content_hash(snap)})
        self.out.rows["runs"].append({
            "run_id": run_id, "suite_id": suite[0], "team_id": run["_team"], "runner": self.runner, "provider": None,
            "provider_ref": run["id"], "request_id": self._request_id(run), "status": line.run_status[run["status"]],
            "status_reason": f"imported history: {line.name} run {run['id']} ended {run['status']!r}",
            "claimed_at": started, "finalised_at": run.get("finished_at") or started, "case_count": len(snaps),
            "case_runs": len(results), "evaluations": 0, "lake_date": started.date().isoformat(), "created_at": started,
        })
        for x in results:
            self._result(x, run, run_id, suite, case_rows[x[line.result_case]], snaps)

    def _result(self, x: Row, run: Row, run_id: str, suite: tuple[str, str], case: Any, snaps: dict[str, Any]
                ) -> None:
        line, (suite_id, assertion_id) = self.line, suite
        executed = x[line.result_status] in line.executed
        error = None if executed else (line.error and x.get(line.error)) or f"legacy status {x[line.result_status]!r}"
        payload = {k: _iso(v) for k, v in x.items() if not k.startswith("_") and k != line.transcript}
        duration = x.get(line.duration) if line.duration else None
        self.out.case_runs.append({
            "run_id": run_id, "suite_id": suite_id, "case_id": case.case_id, "case_key": case.case_key,
            "source_ref": x["id"], "status": "executed" if executed else "error", "error": error,
            "transcript": x["_turns"], "tool_calls": [], "artefact": None,
            "provider_ref": x.get(line.call_id) if line.call_id else None,
            "provider_payload": json.dumps(payload, sort_keys=True), "cost_usd": None,
            "vendor_cost": None, "vendor_cost_unit": None,
            "duration_ms": None if duration is None else duration * 1000.0,
            "started_at": x.get("started_at") or x.get("created_at"), "runner": self.runner,
            "request_id": self._request_id(run), "case_snapshot": json.dumps(snaps[case.case_id], sort_keys=True),
            "case_snapshot_hash": content_hash(snaps[case.case_id]), "team_id": run["_team"],
            "date": run["started_at"].date().isoformat(), "reported_at": self.now,
        })
        self.out.results.append({"source_ref": x["id"], "run_id": run_id, "case_id": case.case_id,
                                 "assertion_id": assertion_id, "met": x["_met"], "value": x["_value"],
                                 "reason": canonical_json(x[line.blob])})


def lake_frames(plan: ImportPlan) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The case runs, outcomes and results (:func:`assay.storage.judgments.stage_pass`) of ``plan``."""
    case_runs = pl.DataFrame(plan.case_runs, infer_schema_length=None)
    ids = case_run_ids(case_runs["run_id"], case_runs["case_id"], case_runs["source_ref"])
    case_runs = case_runs.with_columns(case_run_id=ids)
    outcomes = case_runs.select("case_run_id", "run_id", "case_key", "team_id", "date").with_columns(
        evaluated=pl.lit(1, pl.Int64), carried=pl.lit(0, pl.Int64))
    schema = {"assertion_id": pl.String, "met": pl.Boolean, "value": pl.Float64, "reason": pl.String}
    results = pl.DataFrame([{k: r[k] for k in schema} for r in plan.results], schema=schema).with_columns(
        case_run_id=ids, assertion_key=pl.lit(VERDICT_KEY), assertion_version=pl.lit(1, pl.Int32),
        mechanism=pl.lit(VERDICT_MECHANISM), evaluator=pl.lit(f"{HISTORY_RUNNER_PREFIX}{plan.lineage}"),
        evaluator_version=pl.lit(1, pl.Int32))
    return case_runs, outcomes, results


def import_history(ws: Workspace, lineage: str, path: str, team: str | None = None) -> dict[str, Any]:
    """Import the export of ``lineage`` at ``path`` (:func:`.legacy.read_export`) into the workspace ``ws``,
    once: validate everything, then write what is new in one transaction. Returns what was imported,
    what was already there and the rows of the other lane of the shared Hamming tables left out."""
    from assay.transforms.rescore import key_counts

    export = read_export(lineage, path)
    with ws.engine.connect() as conn:
        plan = plan_import(conn, export, team, datetime.now(UTC))
    if plan.case_runs:
        case_runs, outcomes, results = lake_frames(plan)
    else:  # new cases only (a grown export whose new cases have not run yet): no lake rows
        case_runs = outcomes = results = pl.DataFrame()
    if plan.case_runs or any(plan.rows.values()):
        write_history(ws.lake, plan.rows, case_runs, outcomes, results, summarise=key_counts,
                      ref=f"{HISTORY_RUNNER_PREFIX}{lineage} import of {len(plan.rows['runs'])} run(s)")
    return {"lineage": lineage, "path": str(path), "team": team, "imported": plan.counts(),
            "already_imported": dict(plan.already), "skipped_rows": export.skipped,
            "runs": [r["run_id"] for r in plan.rows["runs"]]}
