"""Shared by the vendor runner tests: a suite whose cases are situations, run through ``drive`` with the
catalog's ledger (scratch book included), and its evidence read back from the lake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import sqlalchemy as sa
from factories import seed_suite

from assay.core.ids import content_hash, new_id
from assay.core.runner import DriveResult, Runner, drive
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, find_suite, job_for_run
from assay.storage.lake import Lake


def seed(engine: sa.Engine, config: dict[str, Any], situations: dict[str, dict[str, Any]],
         assertions: list[dict[str, Any]] = ()) -> str:
    """A suite targeting ``config`` whose cases have these situations, plus suite assertions
    (``{"key", "mechanism", "params"}``) besides the factory's structural ``a1``."""
    ref = seed_suite(engine, cases=tuple(situations), target={"config": config}, criteria={})
    now = datetime.now(UTC)
    with engine.begin() as conn:
        suite = find_suite(conn, ref)
        for key, situation in situations.items():
            content = {"situation": situation}
            conn.execute(t.cases.update().where(t.cases.c.case_key == key, t.cases.c.team_id == suite.team_id)
                         .values(content=content, content_hash=content_hash(content)))
        for a in assertions:
            conn.execute(t.assertions.insert().values(
                assertion_id=new_id(), team_id=suite.team_id, suite_id=suite.suite_id, owner=f"suite:{suite.suite_id}",
                assertion_key=a["key"], version=1, mechanism=a["mechanism"], params=a["params"],
                content_hash=content_hash(a["params"]), created_at=now))
    return ref


def run(engine: sa.Engine, lake: Lake, suite: str, runner: Runner, *, deadline: timedelta | None = None) -> tuple[str, DriveResult, CatalogLedger]:
    """Create a run of ``suite`` for ``runner`` and drive it to release."""
    run_id = create_run(engine, suite, runner.name, deadline=deadline).run_id
    ledger = CatalogLedger(engine, lake)
    result = drive(runner, ledger, job_for_run(engine, run_id), owner="test", ttl_seconds=120)
    return run_id, result, ledger


def case_runs(lake: Lake, run_id: str) -> pl.DataFrame:
    return lake.read("case_runs", run_id=run_id).sort("case_key")


def evaluations(lake: Lake, run_id: str) -> pl.DataFrame:
    return lake.read("runner_evaluations", run_id=run_id)


def scratch_rows(engine: sa.Engine, run_id: str) -> list[sa.Row]:
    with engine.connect() as conn:
        return conn.execute(sa.select(t.scratch_objects).where(t.scratch_objects.c.run_id == run_id)).all()
