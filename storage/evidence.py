"""Turn a runner's report into lake rows: add the run's keys, the case snapshots and natural keys.

Vectorised with Polars: a report of 10,000 case runs is a handful of column operations, not 10,000
Python objects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from assay.core.errors import EvidenceError
from assay.core.evidence import Report
from .hashing import stable_ids


def case_run_ids(run_id: str | pl.Series, case_ids: pl.Series, source_refs: pl.Series) -> pl.Series:
    """Natural keys of case runs: the same (run, case, source) always gives the same id (``run_id`` one
    run's id, or a column of them)."""
    return stable_ids(run_id, case_ids, source_refs)


def assemble(report: Report, run: Any, cases: Sequence[Any], reported_at: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Lake rows (case_runs, runner_evaluations) for ``report`` into ``run`` whose cases are ``cases``."""
    snapshots = pl.DataFrame(
        {
            "case_id": [c.case_id for c in cases],
            "case_key": [c.case_key for c in cases],
            "case_snapshot": [json.dumps(c.snapshot, sort_keys=True) for c in cases],
            "case_snapshot_hash": [c.snapshot_hash for c in cases],
        },
        schema={"case_id": pl.String, "case_key": pl.String, "case_snapshot": pl.String, "case_snapshot_hash": pl.String},
    )
    reported = pl.from_arrow(report.case_runs)
    unknown = set(reported["case_id"].unique().to_list()) - set(snapshots["case_id"].to_list())
    if unknown:
        raise EvidenceError(
            f"report {report.request_id} for run {run.run_id} names case ids outside the run: "
            f"{', '.join(sorted(unknown)[:5])}; a runner may only report the run's own cases"
        )
    ids = case_run_ids(run.run_id, reported["case_id"], reported["source_ref"])
    system = {
        "case_run_id": ids,
        "run_id": pl.lit(run.run_id),
        "suite_id": pl.lit(run.suite_id),
        "runner": pl.lit(run.runner),
        "request_id": pl.lit(report.request_id),
        "reported_at": pl.lit(reported_at).dt.cast_time_unit("us"),
    }
    case_runs = reported.with_columns(**system).join(snapshots, on="case_id", how="left", maintain_order="left")

    evaluations = pl.from_arrow(report.evaluations)
    keyed = pl.DataFrame({"case_id": reported["case_id"], "source_ref": reported["source_ref"], "case_run_id": ids})
    evaluations = evaluations.join(keyed, on=["case_id", "source_ref"], how="left", maintain_order="left")
    orphans = evaluations.filter(pl.col("case_run_id").is_null())
    if orphans.height:
        first = orphans.row(0, named=True)
        raise EvidenceError(
            f"report {report.request_id}: {orphans.height} evaluation(s) name a case run not in the report "
            f"(first: case {first['case_id']!r}, source {first['source_ref']!r}); report evaluations with their case run"
        )
    evaluations = evaluations.with_columns(
        evaluation_id=stable_ids(evaluations["case_run_id"], evaluations["evaluator"], evaluations["name"]),
        run_id=pl.lit(run.run_id),
        request_id=pl.lit(report.request_id),
        reported_at=pl.lit(reported_at).dt.cast_time_unit("us"),
    )
    return case_runs, evaluations
