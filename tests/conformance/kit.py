"""Shared pieces of the runner conformance kit: the runners and their declared gaps, a contract
fixture, and the subprocess helpers.

The kit runs against every installed runner: the built-ins and any plug-in in the ``assay.runners``
entry-point group. A runner declares its own known gaps (``Runner.known_gaps``); the kit turns each
into a strict xfail with the runner's reason.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from assay.core.ids import content_hash
from assay.core.plugins import RunnerPluginError, runner_class, runner_names
from assay.core.runner import Runner, RunJob
from assay.storage.catalog import tables as t
from assay.storage.catalog.engine import create_catalog_engine
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, job_for_run
from assay.storage.lake import Lake

RUNNERS = runner_names()
"""Every installed runner by name; listing them imports none."""


def declared_gaps(runner_name: str) -> Mapping[str, str]:
    """The runner's declared gaps (kit test name -> reason).

    None for a plug-in that does not load: its tests run and fail with its :class:`RunnerPluginError`.
    """
    try:
        return runner_class(runner_name).known_gaps
    except RunnerPluginError:
        return {}


@dataclass
class Contract:
    runner: Runner
    ledger: CatalogLedger
    run_id: str
    ref: str | None = None
    """An asynchronous runner's submission, once made: later reports collect it again."""

    @property
    def job(self) -> RunJob:
        return job_for_run(self.ledger.engine, self.run_id)


def prepare(engine: sa.Engine, lake: Lake, runner_name: str, workdir: Path, suite: str) -> Contract:
    """A pending run of ``suite`` whose target is the runner's own example target."""
    cls = runner_class(runner_name)
    run_id = create_run(engine, suite, runner_name).run_id
    kind, target = cls.example_target(workdir, job_for_run(engine, run_id).cases)
    with engine.begin() as conn:
        conn.execute(
            t.suites.update()
            .where(t.suites.c.suite_id == sa.select(t.runs.c.suite_id).where(t.runs.c.run_id == run_id).scalar_subquery())
            .values(target_kind=kind, target=target, target_hash=content_hash(target))
        )
    return Contract(cls(), CatalogLedger(engine, lake), run_id)


def reports_of(runner: Runner, job: RunJob, ctx, *, ref: str | None = None, timeout: float = 60.0) -> list:
    """Every report the runner makes for ``job``: a synchronous runner executes it; an asynchronous one
    submits it (unless ``ref`` names a submission already made: then this is a retried collection), then
    is collected until its vendor has finished (renewing through ``ctx`` meanwhile)."""
    import time

    if runner.synchronous:
        return list(runner.execute(job, ctx))
    ref = ref or runner.submit(job)
    deadline = time.monotonic() + timeout
    while (reports := runner.collect(job, ref)) is None:
        assert time.monotonic() < deadline, f"{runner.name} did not finish {job.run_id} within {timeout} s"
        ctx()
        time.sleep(0.05)
    return list(reports)


def drive_any(runner: Runner, ledger: CatalogLedger, job: RunJob, *, owner: str, ttl_seconds: float,
              on_report=None) -> None:
    """:func:`assay.core.runner.drive` for a synchronous runner; for an asynchronous one the same life cycle
    in one lease: claim, submit, collect, report every batch, release."""
    from assay.core.runner import RunContext, drive

    if runner.synchronous:
        drive(runner, ledger, job, owner=owner, ttl_seconds=ttl_seconds)
        return
    lease = ledger.claim(job.run_id, owner, ttl_seconds)

    def renew() -> None:
        nonlocal lease
        lease = ledger.renew(lease, ttl_seconds)

    ctx = RunContext(renew, run_id=job.run_id, runner=runner.name, scratch=ledger.scratch)
    for report in reports_of(runner, job, ctx):
        renew()
        ledger.report(lease, report)
        if on_report:
            on_report(lease, report)
    ledger.release(lease)


def claim_once(url: str, lake_url: str, run_id: str, owner: str, start, results) -> None:
    """Subprocess body for the race: wait for the start signal, try to claim, report the outcome."""
    from assay.core.errors import LeaseError

    engine = create_catalog_engine(url)
    ledger = CatalogLedger(engine, Lake(lake_url, engine))
    start.wait()
    try:
        ledger.claim(run_id, owner, 60)
        results.put((owner, "won"))
    except LeaseError as exc:
        results.put((owner, f"lost: {exc.reason}"))


def die_after_first_report(url: str, lake_url: str, run_id: str, runner_name: str, workdir: str) -> None:
    """Subprocess body: claim with a short lease, report one batch, then die without releasing."""
    import os

    import duckdb  # noqa: F401  (heavy imports first, so the short lease is spent on the run itself)
    import polars  # noqa: F401

    engine = create_catalog_engine(url)
    ledger = CatalogLedger(engine, Lake(lake_url, engine))
    runner = runner_class(runner_name)()
    runner.batch_size = 1
    original = ledger.report

    def report_then_die(lease, report):
        original(lease, report)
        sys.stdout.flush()
        os._exit(17)  # a crash: no release, no cleanup

    ledger.report = report_then_die
    drive_any(runner, ledger, job_for_run(engine, run_id), owner="doomed", ttl_seconds=4)
