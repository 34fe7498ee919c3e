"""Judging as a separate act: new outcomes over stored evidence, and verdicts read from them.

Orchestration only: the catalog is read through :mod:`assay.storage.catalog`, what to evaluate is the
policy of :mod:`assay.transforms.carry`, evaluation is :mod:`assay.transforms.judge`, and what a pass
concluded is written by :mod:`assay.storage.judgments`.

- :func:`judge_runs` writes one outcome per case run per judging pass, with one result per current
  assertion version. Unchanged pairs (same assertion version, same evidence, same evaluator version,
  same judge) are carried forward from the previous outcome instead of re-evaluated, unless ``force``.
  It reads the lake and the catalog and calls the judge; it never calls a runner.
- :func:`verdicts_for` reads each run's verdict per consumer under its stamped criteria version.
- :func:`rescore` applies another criteria version (or a candidate spec) to stored history: a query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec, resolve
from assay.core.ids import content_hash, id_code, name_code
from assay.core.plugins import registered
from assay.storage.catalog.assertions import assignments, criteria_spec, stamped_criteria, stamped_verdicts
from assay.storage.catalog.runs import finalised_runs, find_suite, suite_assertion_keys
from assay.storage.judgments import write_pass, write_verdicts
from assay.storage.lake import FileFilter, codes
from assay.transforms.carry import STORED, new_outcomes, pass_results, plan_pass
from assay.transforms.judge import evaluate
from assay.transforms.mechanisms import evaluator_versions
from assay.transforms.rescore import counted_run_verdicts, key_counts
from assay.transforms.verdicts import VERDICT_COLUMNS, case_verdicts, flips, latest, run_verdicts

from .workspace import Workspace


def supported_mechanisms() -> dict[str, frozenset[str]]:
    """Runner name -> mechanisms its evidence supports, from the registry (capabilities as data)."""
    return {name: frozenset(cls.mechanisms) for name, cls in registered().items()}


def _in(column: str, values: Sequence[str]) -> pl.Expr:
    return pl.col(column).is_in(list(values))


def judge_runs(
    ws: Workspace,
    run_ids: Sequence[str],
    *,
    trigger: str = "judge",
    keys: Iterable[str] | None = None,
    new_versions_only: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Write a new outcome for every case run of ``run_ids`` whose judgement would change.

    Which pairs are evaluated afresh and which are carried forward is the policy of
    :mod:`assay.transforms.carry`: ``keys`` limits re-evaluation to those assertion keys,
    ``new_versions_only`` to pairs with no earlier result, and ``force`` re-evaluates unchanged pairs.
    """
    run_ids = list(dict.fromkeys(run_ids))
    lake = ws.lake
    these = FileFilter(runs=run_ids)
    case_runs = lake.read("case_runs", these).filter(_in("run_id", run_ids))
    evaluations = lake.read("runner_evaluations", these).filter(_in("run_id", run_ids))
    with ws.engine.connect() as conn:
        todo = assignments(conn, run_ids, case_runs)
    previous = (
        latest(ws.lake.scan("assertion_results", runs=run_ids).filter(_in("run_id", run_ids)))
        .select("case_run_id", "assertion_id", *STORED)
        .collect()
    )
    judge = ws.settings.judge_model if ws.settings.judge_base_url else None
    versions = evaluator_versions()
    plan = plan_pass(todo, previous, versions=versions, judge=judge, keys=keys,
                     new_versions_only=new_versions_only, force=force)
    evaluated = evaluate(case_runs, evaluations, plan.fresh, supported_mechanisms(), judge)
    results = pass_results(evaluated, plan.carried, versions)
    outcomes = new_outcomes(case_runs.select("case_run_id", "run_id", "case_key", "team_id", "date"), results, previous)
    written = write_pass(lake, outcomes, results, trigger=trigger, judge=judge, summarise=key_counts)
    return {
        "runs": len(run_ids), "case_runs": case_runs.height, "outcomes": written,
        "evaluated": evaluated.height, "carried": plan.carried.height, "unjudged": plan.left_out,
        "judge_calls": evaluated.filter(pl.col("mechanism") == "rubric").height if judge else 0,
    }


def _atoms(ws: Workspace, run_ids: Sequence[str], suite_id: str | None = None) -> pl.LazyFrame:
    """The current atoms (each case run's latest outcome's) of ``run_ids``, read from the lake's state."""
    where = FileFilter(suites=[suite_id]) if suite_id else FileFilter(runs=run_ids)
    return ws.lake.scan("current_results", where).filter(_in("run_id", run_ids))


def verdicts_for(ws: Workspace, run_ids: Sequence[str], *, cases: bool = False) -> list[dict[str, Any]]:
    """Each run's verdict per consumer under its stamped criteria version, from the latest outcomes.

    Next to it, the verdict stamped at finalisation (which never changes): they differ only when a
    re-judge has since produced newer outcomes.
    """
    with ws.engine.connect() as conn:
        stamped = stamped_criteria(conn, run_ids)
    out: list[dict[str, Any]] = []
    by_spec: dict[tuple[str, int, str], list[sa.Row]] = {}
    for row in stamped:
        by_spec.setdefault((row.consumer_key, row.version, str(row.spec)), []).append(row)
    for (consumer, version, _), rows in by_spec.items():
        spec = CriteriaSpec.model_validate(rows[0].spec)
        ids = [r.run_id for r in rows]
        computed = {v["run_id"]: v for v in run_verdicts(_atoms(ws, ids), spec).collect().to_dicts()}
        breakdown = case_verdicts(_atoms(ws, ids), spec).collect() if cases else None
        for r in rows:
            v = computed.get(r.run_id, {"verdict": None, "reason": "not judged yet"})
            entry = {
                "run_id": r.run_id, "consumer": consumer, "criteria_version": version,
                "stamped": r.verdict, "verdict": v["verdict"], "reason": v["reason"],
                "evaluators": v.get("evaluators", []),
            }
            if breakdown is not None:
                entry["cases"] = breakdown.filter(pl.col("run_id") == r.run_id).select(
                    "case_key", "verdict", "reason").sort("case_key").to_dicts()
            out.append(entry)
    return sorted(out, key=lambda e: (e["run_id"], e["consumer"]))


def _rescored(ws: Workspace, suite_id: str, run_ids: list[str], spec: CriteriaSpec, keys: set[str]) -> pl.DataFrame:
    """Each run's verdict under ``spec``, from the per-(run, key) counts the lake keeps (the suite's files only).

    Codes are 64 bits of each id or name; should two of the suite's runs or keys ever share one, the
    verdicts are computed from the text columns instead (same rules, slower).
    """
    where = FileFilter(suites=[suite_id])
    by_code = {id_code(r): r for r in run_ids}
    key_codes = {k: name_code(k) for k in keys | set(spec.required) | set(spec.ignore)
                 | {k for g in spec.threshold for k in g.keys}}
    if len(by_code) < len(run_ids) or len(set(key_codes.values())) < len(key_codes):
        return ws.lake.collect(run_verdicts(_atoms(ws, run_ids, suite_id), spec), "current_results", where)
    with ws.engine.connect() as conn:
        names = codes.names_of(conn)
    counts = ws.lake.scan("run_key_counts", where).filter(pl.col("run").is_in(list(by_code)))
    coded = ws.lake.collect(counted_run_verdicts(counts, spec, key_codes, names), "run_key_counts", where)
    run_ids_of = pl.DataFrame({"run": list(by_code), "run_id": list(by_code.values())})
    return coded.join(run_ids_of, on="run").select("run_id", *VERDICT_COLUMNS).sort("run_id")


def rescore(
    ws: Workspace,
    suite: str,
    consumer: str,
    *,
    version: int | None = None,
    spec: CriteriaSpec | None = None,
    run_ids: Sequence[str] | None = None,
    materialise: bool = False,
) -> dict[str, Any]:
    """Apply a criteria version (or a candidate spec) to the suite's judged history.

    Reports every run's verdict under it and which runs flip against their stamped verdict for this
    consumer. Calls neither a runner nor the judge: it is a query over stored atoms. It writes
    nothing unless ``materialise``, which appends the verdicts to the lake's ``verdicts`` table.
    """
    with ws.engine.connect() as conn:
        s = find_suite(conn, suite)
        if spec is None:
            version, spec = criteria_spec(conn, s.suite_id, consumer, version)
            label = f"v{version}"
        else:
            label = "candidate"
        keys = suite_assertion_keys(conn, s.suite_id)
        resolve(consumer, spec, keys)
        rows = finalised_runs(conn, s.suite_id, run_ids)
        runs = {r.run_id: r.created_at for r in rows}
        stamped = {r: v for r, v in stamped_verdicts(conn, s.suite_id, consumer).items() if r in runs}
    verdicts = _rescored(ws, s.suite_id, list(runs), spec, keys)
    table = verdicts.select("run_id", "verdict", "reason").with_columns(
        stamped=pl.col("run_id").replace_strict({k: v[0] for k, v in stamped.items()}, default=None,
                                                 return_dtype=pl.String),
    )
    flipped = flips(verdicts, table.select("run_id", "stamped").drop_nulls()) if stamped else pl.DataFrame()
    if materialise and verdicts.height:
        where = pl.DataFrame({"run_id": [r.run_id for r in rows], "team_id": [r.team_id for r in rows],
                              "date": [r.lake_date for r in rows]})
        write_verdicts(ws.lake, verdicts.join(where, on="run_id"), suite_id=s.suite_id, consumer=consumer,
                       criteria=label, spec_hash=content_hash(spec.model_dump()))
    return {
        "suite": f"{s.team_id}/{s.suite_key}", "consumer": consumer, "criteria": label, "spec": spec.model_dump(),
        "runs": [
            {**r, "created_at": runs[r["run_id"]].isoformat(),
             "stamped_version": stamped.get(r["run_id"], (None, None))[1]}
            for r in table.sort("run_id").to_dicts()
        ],
        "flips": flipped.to_dicts() if flipped.height else [],
    }
