"""Writing imported history: catalog rows and the lake files that make them true, all or nothing.

The case runs, and the pass of outcomes and results over them (:func:`.judgments.stage_pass`), are
staged first; then **one** catalog transaction inserts the catalog rows (cases, suites, their
members and assertions, runs and their case snapshots, in that order), names the case-run files in
the manifest and records the pass. A failure anywhere leaves no row and no named file (a staged file
no row names is never read, and vacuum deletes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from assay.core.failpoints import failpoint

from . import state
from .catalog import tables as t
from .judgments import record_pass, stage_pass
from .lake import Lake

__all__ = ["CATALOG_ORDER", "write_history"]

CATALOG_ORDER = ("cases", "suites", "suite_cases", "assertions", "runs", "run_cases")
"""The catalog tables imported history writes, in an order their foreign keys accept."""


def write_history(
    lake: Lake, rows: Mapping[str, Sequence[dict[str, Any]]], case_runs: pl.DataFrame, outcomes: pl.DataFrame,
    results: pl.DataFrame, *, ref: str, summarise: state.Summarise,
) -> None:
    """Write ``rows`` (catalog table name -> rows), ``case_runs`` (lake rows with ``team_id`` and ``date``)
    and the pass of ``outcomes`` and ``results`` over them (trigger ``import``) in one transaction;
    ``ref`` names the import in the manifest."""
    columns = lake.table("case_runs").arrow_schema.names
    staged = [lake.stage("case_runs", part.select(columns), team_id=team, date=date)
              for (team, date), part in state.partitions(case_runs).items()] if case_runs.height else []
    judged = stage_pass(lake, outcomes, results, trigger="import", judge=None, summarise=summarise)
    failpoint("legacy.staged")
    with lake.engine.begin() as conn:
        for name in CATALOG_ORDER:
            if rows.get(name):
                conn.execute(getattr(t, name).insert(), list(rows[name]))
        lake.commit(conn, staged, origin="report", ref=ref)
        if judged is not None:
            record_pass(conn, lake, judged)
        failpoint("legacy.recorded")
