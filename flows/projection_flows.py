"""The projections flow: the evidence turned into the tables analysts read, incrementally.

Each pass recomputes only the finalised runs whose projection is stale (new evidence or judging,
a finalisation, a new criteria version of their suite: :func:`assay.storage.projection.begin`), one
mapped task per batch of at most a thousand runs and a bounded number of case runs (a large suite spans
batches; two at a time in threads, each holding one batch's atoms; wide work goes to the configured
task runner, :mod:`.task_runners`), and replaces their rows in one catalog transaction. ``full=True`` rebuilds everything; a test holds an
incremental history equal to a full rebuild. The deployment runs it hourly.

The tables (:mod:`assay.storage.lake.projection_tables`): ``run_verdicts`` and ``case_verdicts``
(every consumer's verdict under the stamped and the current criteria version, with coverage and the
per-case breakdown), ``behaviour_stats`` (per run, assertion version and evaluator), ``evaluator_pairs``
(our result against a vendor's on the same behaviour) and ``run_costs``; the fleet-wide rollups are
views over them (:mod:`assay.storage.fleet_views`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl
from prefect import unmapped
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.artifacts import create_table_artifact

from assay.storage import projection
from assay.storage.lake import FileFilter
from assay.transforms import fleet
from assay.transforms.verdicts import latest

from .flow_context import assay_flow, flow_workspace, io_task, to_server, workspace
from .workspace import Workspace


def project_runs(ws: Workspace, suites: dict[str, list[str]], pairs: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Every projected table's rows for the runs of ``suites`` (suite_id -> finalised run ids), each row with
    suite_id, team_id and date."""
    run_ids = [run for runs in suites.values() for run in runs]
    inputs = projection.inputs(ws.engine, suites)
    where = FileFilter(runs=run_ids)
    mine = pl.col("run_id").is_in(run_ids)
    atoms = ws.lake.collect(ws.lake.scan("assertion_results", where).filter(mine), "assertion_results", where)
    now = ws.lake.collect(latest(atoms.lazy()), "assertion_results", where)
    case_runs = ws.lake.collect(ws.lake.scan("case_runs", where).filter(mine).select("run_id", "case_key", "cost_usd", "case_run_id", "source_ref"),
                                "case_runs", where)
    runs = inputs.runs.join(case_runs.group_by("run_id").agg(cases_run=pl.col("case_key").n_unique()), on="run_id",
                            how="left").with_columns(pl.col("cases_run").fill_null(0))

    meta = inputs.runs.select("run_id", "suite_id", "suite_key", "runner", "team_id", "date",
                              week=fleet.week_of(pl.col("created_at")))
    stamp = {"computed_at": pl.lit(datetime.now(UTC)).dt.cast_time_unit("us")}
    run_rows, case_rows = fleet.project_verdicts(now, runs, inputs.versions, inputs.specs,
                                                 order=case_runs.select("case_run_id", "source_ref"))
    costs = meta.join(fleet.run_costs(case_runs.lazy(), atoms.lazy()).collect(), on="run_id", how="left").with_columns(
        pl.col("case_runs", "judge_requests", "judge_tokens_in", "judge_tokens_out").fill_null(0))
    out = {
        "behaviour_stats": meta.join(fleet.behaviour_stats(now.lazy()).collect(), on="run_id"),
        "evaluator_pairs": meta.join(fleet.evaluator_pairs(now.lazy(), pairs).collect(), on="run_id"),
        "run_costs": costs,
    }
    if run_rows.height:
        out["run_verdicts"] = meta.join(run_rows, on="run_id")
        out["case_verdicts"] = meta.select("run_id", "suite_id", "team_id", "date").join(case_rows, on="run_id")
    return {name: frame.with_columns(**stamp) for name, frame in out.items()}


def stage(ws: Workspace, plan: projection.Pass, suites: dict[str, list[str]], pairs: pl.DataFrame) -> list[projection.Staged]:
    """One batch of suites' projected rows, computed together and staged suite by suite (visible once the pass
    commits)."""
    rows = project_runs(ws, suites, pairs)
    projection.check(ws.lake, rows)
    return [projection.stage_suite(ws.lake, plan, suite_id,
                                   {name: frame.filter(pl.col("suite_id") == suite_id) for name, frame in rows.items()},
                                   runs)
            for suite_id, runs in suites.items()]


def project_all(ws: Workspace, *, full: bool = False) -> dict[str, Any]:
    """One projection pass in this process, batch after batch (what the flow maps over its task runner)."""
    plan = projection.begin(ws.engine, full=full)
    pairs = projection.vendor_pairs(ws.engine)
    parts = [part for batch in projection.batches(plan) for part in stage(ws, plan, batch, pairs)]
    return _summary(plan, projection.commit(ws.lake, plan, parts))


def _summary(plan: projection.Pass, written: dict[str, int]) -> dict[str, Any]:
    return {"full": plan.full, "suites": len(plan.suites), "runs": len(plan.runs), "rows": written}


@io_task
def stage_task(plan: projection.Pass, suites: dict[str, list[str]], pairs: pl.DataFrame) -> list[projection.Staged]:
    """Retried like every store writer: a second attempt stages afresh (the first attempt's files stay unnamed)."""
    return stage(workspace(), plan, suites, pairs)


@assay_flow(name="projections", task_runner=ThreadPoolTaskRunner(max_workers=2))
def projections(full: bool = False) -> dict[str, Any]:
    """Bring the projected tables up to date: recompute the runs whose projection is stale (all of them with
    ``full``), one task per suite; publishes what it wrote as the table artifact ``projections``."""
    with flow_workspace() as ws:
        plan = projection.begin(ws.engine, full=full)
        pairs = projection.vendor_pairs(ws.engine)
        batches = projection.batches(plan)
        staged = stage_task.map(unmapped(plan), batches, unmapped(pairs)).result() if batches else []
        summary = _summary(plan, projection.commit(ws.lake, plan, [part for parts in staged for part in parts]))
        written = summary["rows"]
        to_server(lambda: create_table_artifact(
            [{"table": name, "rows": rows} for name, rows in written.items()], key="projections",
            description=f"{len(plan.runs)} run(s) of {len(plan.suites)} suite(s) projected"
            + (" (full rebuild)" if plan.full else "")))
        return summary
