"""Shared pieces of the runner conformance kit: the runners and their declared gaps, a contract
fixture, and the subprocess helpers.

The kit runs against every installed runner: the built-ins and any plug-in in the ``assay.runners``
entry-point group. A runner declares its own known gaps (``Runner.known_gaps``); the kit turns each
into a strict xfail with the runner's reason (:func:`per_runner`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from factories import base, write

from assay.core.ids import content_hash
from assay.core.plugins import RunnerPluginError, runner_class, runner_names
from assay.core.runner import CaseSpec, Runner, RunJob
from assay.storage.catalog import tables as t
from assay.storage.catalog.engine import create_catalog_engine
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.load import load_bundle
from assay.storage.catalog.runs import create_run, find_suite, job_for_run, snapshot
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


KIT_TESTS: set[str] = set()
"""The names of the per-runner tests (:func:`per_runner`): what a runner's declared gap may name."""


def gap_params(test: str) -> list:
    """Every runner as a parameter of ``test``; one that declares a gap in it is a strict xfail with its reason."""
    params: list = []
    for name in RUNNERS:
        reason = declared_gaps(name).get(test)
        if reason is None:
            params.append(name)
        else:
            params.append(pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason)))
    return params


def per_runner(test):
    """Run ``test`` once per installed runner (argument ``runner_name``), honouring declared gaps."""
    KIT_TESTS.add(test.__name__)
    return pytest.mark.parametrize("runner_name", gap_params(test.__name__))(test)


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
    run = create_run(engine, suite, runner_name)
    use_example_target(engine, run.suite_id, runner_name, workdir, job_for_run(engine, run.run_id).cases)
    return Contract(runner_class(runner_name)(), CatalogLedger(engine, lake), run.run_id)


def use_example_target(engine: sa.Engine, suite_id: str, runner_name: str, workdir: Path,
                       cases: Sequence[CaseSpec]) -> None:
    """Point the suite at the runner's own example target for ``cases`` (written under ``workdir``)."""
    kind, target = runner_class(runner_name).example_target(workdir, cases)
    with engine.begin() as conn:
        conn.execute(t.suites.update().where(t.suites.c.suite_id == suite_id)
                     .values(target_kind=kind, target=target, target_hash=content_hash(target)))


FLOW_ASSERTIONS: tuple[dict[str, Any], ...] = (
    {"key": "area_tool", "mechanism": "structural.tool_attached", "params": {"tool": "check_service_area"}},
    {"key": "agent_speaks", "mechanism": "transcript.regex", "params": {"text": r"\w", "role": "agent"}},
    {"key": "no_transfer", "mechanism": "tool.not_called", "params": {"tool": "transfer_call"}},
)
"""Deterministic assertions (no judge needed), one per family of evidence a runner may declare."""

VENDOR_ASSERTION = {"key": "vendor_pass", "mechanism": "vendor.evaluation", "params": {"name": "fixed"}}
"""For a runner whose evidence is only its own evaluations (``fixed`` names each of them so)."""


def assertions_for(runner_name: str) -> list[dict[str, Any]]:
    """The suite assertions a runner's evidence supports: each of :data:`FLOW_ASSERTIONS` whose mechanism
    it declares; with none, its own evaluations if it declares them, else the first (which judging fails
    with a reason naming the runner: a result all the same)."""
    declared = runner_class(runner_name).mechanisms
    chosen = [a for a in FLOW_ASSERTIONS if a["mechanism"] in declared]
    return chosen or [VENDOR_ASSERTION if VENDOR_ASSERTION["mechanism"] in declared else FLOW_ASSERTIONS[0]]


def flow_suite(engine: sa.Engine, runner_name: str, workdir: Path, consumer: str = "ci") -> str:
    """Load a suite for ``runner_name`` and return its ``team/suite`` name: two cases whose callers have
    scripted turns, the assertions of :func:`assertions_for`, ``consumer`` requiring every one, and the
    runner's own example target."""
    doc = base()
    team = doc["teams"][0]
    team["cases"] = [
        {"key": key, "title": key, "situation": {"caller": f"Caller of {key}", "wants": "A repair today",
                                                 "turns": ["Hi, my water heater is leaking.", "Thanks, bye."]}}
        for key in ("case-1", "case-2")
    ]
    assertions = assertions_for(runner_name)
    team["suites"] = [{"key": "flows", "name": "flows", "target": {"config": "configs/main.json"},
                       "cases": ["case-1", "case-2"], "assertions": assertions,
                       "criteria": {consumer: {"required": [a["key"] for a in assertions]}}}]
    doc["consumers"] = [{"key": consumer, "description": "The kit's consumer."}]
    load_bundle(engine, write(workdir, doc, "bundle.json"))
    name = f"{team['id']}/flows"
    with engine.connect() as conn:
        suite_id = find_suite(conn, name).suite_id
        rows = conn.execute(
            sa.select(t.cases).join(t.suite_cases, t.suite_cases.c.case_id == t.cases.c.case_id)
            .where(t.suite_cases.c.suite_id == suite_id).order_by(t.suite_cases.c.position)
        ).all()
    cases = [CaseSpec(case_id=r.case_id, case_key=r.case_key, content=snapshot(r)) for r in rows]
    use_example_target(engine, suite_id, runner_name, workdir / "target", cases)
    return name


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


def claim_once(url: str, lake_url: str, run_id: str, owner: str, start, ready, results) -> None:
    """Subprocess body for the race: connect, say so on ``ready``, wait for the start signal, try to claim,
    report the outcome."""
    from assay.core.errors import LeaseError

    engine = create_catalog_engine(url)
    ledger = CatalogLedger(engine, Lake(lake_url, engine))
    with engine.connect():
        pass
    ready.put(owner)
    start.wait()
    try:
        ledger.claim(run_id, owner, 60)
        results.put((owner, "won"))
    except LeaseError as exc:
        results.put((owner, f"lost: {exc.reason}"))


DOOMED_LEASE_SECONDS = 120
"""The lease the dying process claims: it must outlive the process's start on a loaded machine."""


def die_after_first_report(url: str, lake_url: str, run_id: str, runner_name: str, workdir: str) -> None:
    """Subprocess body: claim a lease, report one batch, then die without releasing. The lease is long
    enough for a loaded machine; the test then steps the reaper's clock past it instead of waiting."""
    import os

    engine = create_catalog_engine(url)
    ledger = CatalogLedger(engine, Lake(lake_url, engine))
    runner = runner_class(runner_name)()
    runner.batch_size = 1
    original = ledger.commit_report  # drive stages each report, then commits it

    def commit_then_die(lease, staged):
        original(lease, staged)
        sys.stdout.flush()
        os._exit(17)  # a crash: no release, no cleanup

    ledger.commit_report = commit_then_die
    drive_any(runner, ledger, job_for_run(engine, run_id), owner="doomed", ttl_seconds=DOOMED_LEASE_SECONDS)
