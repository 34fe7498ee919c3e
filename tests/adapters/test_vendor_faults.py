"""Evidence is never lost to our own plumbing, counted against the fake vendors: a lease outlived by one
request, a read cut short, a billable create answered after we gave up, a scorer run at its deadline.

Each test counts what matters: evidence rows stored, billable objects the fake holds, verdicts. Time
that must pass is a step of a clock the ledger and the runner share, or a wait on an event (never a
sleep); the tests that need a vendor slower than a lease in real seconds are in ``tests/faults/``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
import sqlalchemy as sa
from pydantic import SecretStr
from factories import Clock
from runner_kit import case_runs, evaluations, seed

from assay.adapters.http import RetryPolicy
from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_evals import VapiEvalsRunner
from assay.adapters.vapi import VapiApi
from assay.core.evidence import CaseRun, Report
from assay.core.runner import Heartbeat, Runner, RunJob, drive
from assay.core.settings import Settings
from assay.fakes.vapi import FakeVapi
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, get_run, job_for_run
from assay.storage.lake import Lake

KEY = "vapi-secret-key-0123456789"
TURNS = ["Hi, my ZIP is 60614", "Can you come today?"]
ASSERTIONS = [
    {"key": "thanks", "mechanism": "transcript.contains", "params": {"text": "Anything else", "role": "agent"}},
    {"key": "polite", "mechanism": "rubric", "params": {"rubric": "Stays polite"}},
]
CASES = {"zip": {"caller": "Dana", "turns": TURNS}, "late": {"caller": "Ravi", "turns": TURNS[:1]}}


@pytest.fixture
def vapi() -> Iterator[FakeVapi]:
    with FakeVapi(key=KEY) as fake:
        fake.faults.scripts = {"replies": [{"match": "today", "reply": "60614 is in our service area. Anything else?"}]}
        yield fake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


class ShortTimeout(VapiEvalsRunner):
    """``vapi_evals`` whose client gives up on an answer after ``timeout`` seconds."""

    timeout: ClassVar[float] = 0.05

    def api(self) -> VapiApi:
        return VapiApi.from_settings(self.settings, retry=self.retry, sleep=self.sleep, timeout=self.timeout)


def _evals(vapi: FakeVapi, cls: type[VapiEvalsRunner] = VapiEvalsRunner, **kwargs) -> VapiEvalsRunner:
    settings = Settings(vapi_base_url=vapi.url, vapi_api_key=SecretStr(KEY))
    kwargs.setdefault("sleep", lambda s: None)
    kwargs.setdefault("poll_interval", 0.01)
    return cls(settings, retry=RetryPolicy(attempts=3, base_delay=0.0), **kwargs)


def _drive(engine: sa.Engine, lake: Lake, runner: Runner, *, deadline: timedelta | None = None,
           clock: Clock | None = None, ttl: float = 120.0) -> tuple[str, str | None]:
    suite = seed(engine, EXAMPLE_CONFIG, CASES, ASSERTIONS)
    run_id = create_run(engine, suite, runner.name, deadline=deadline).run_id
    ledger = CatalogLedger(engine, lake, clock=clock) if clock is not None else CatalogLedger(engine, lake)
    result = drive(runner, ledger, job_for_run(engine, run_id), owner="test", ttl_seconds=ttl)
    return run_id, result.error


def test_a_scorer_run_reports_its_unknown_evaluations_at_its_deadline(engine: sa.Engine, lake: Lake,
                                                                     vapi: FakeVapi) -> None:
    vapi.faults.never_finish = True
    clock = Clock()
    runner = _evals(vapi, clock=clock, sleep=clock.advance, poll_interval=60.0, max_wait=86400.0)
    run_id, error = _drive(engine, lake, runner, deadline=timedelta(minutes=10), clock=clock)
    assert error is None
    stored = case_runs(lake, run_id)
    assert stored.height == len(CASES) and set(stored["status"]) == {"error"}
    verdicts = evaluations(lake, run_id)["verdict"].to_list()
    assert verdicts == ["unknown"] * len(CASES) * len(ASSERTIONS)  # reported, never a fail
    assert get_run(engine, run_id).deadline_at > clock.now  # stopped waiting in time to report
    assert vapi.live_objects().keys() <= {"chat", "eval_run"}  # the scratch evals and assistant are deleted


@pytest.mark.parametrize("fault", ["malformed", "truncated"])
def test_an_eval_poll_cut_short_is_read_again(engine: sa.Engine, lake: Lake, vapi: FakeVapi, fault: str) -> None:
    setattr(vapi.faults, fault, 2)
    vapi.faults.body_route = "GET /eval/run/*"
    run_id, error = _drive(engine, lake, _evals(vapi))
    assert error is None
    assert set(case_runs(lake, run_id)["status"]) == {"executed"}
    assert "unknown" not in evaluations(lake, run_id)["verdict"].to_list()
    assert len(vapi.objects("eval_run")) == len(CASES) * len(ASSERTIONS)


def test_an_eval_run_answered_after_we_gave_up_is_found_never_started_twice(engine: sa.Engine, lake: Lake,
                                                                          vapi: FakeVapi) -> None:
    vapi.faults.answer_late = {"POST /eval/run": 0.08}  # started at once, answered after the client's timeout
    run_id, error = _drive(engine, lake, _evals(vapi, ShortTimeout))
    assert error is None
    assert set(case_runs(lake, run_id)["status"]) == {"executed"}
    assert len(vapi.objects("eval_run")) == len(CASES) * len(ASSERTIONS)  # each billed once
    assert "unknown" not in evaluations(lake, run_id)["verdict"].to_list()


class Slow(Runner):
    """One vendor request in flight, which the runner cannot interrupt, for longer than its lease: while it waits,
    the time the ledger reads moves past the lease's end, a step at a time, each step waiting for a renewal made
    meanwhile (in real time, bounded). Only a lease renewed while the runner waits keeps the run ours."""

    name: ClassVar[str] = "slow"
    mechanisms: ClassVar[frozenset[str]] = frozenset()
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})
    steps: ClassVar[int] = 4
    patience: ClassVar[float] = 10.0
    """Real seconds a step waits for a renewal before it moves on regardless (and the run then loses its lease)."""

    def __init__(self, engine: sa.Engine, clock: Clock, ttl: float) -> None:
        self.engine, self.clock, self.ttl = engine, clock, ttl

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        for _ in range(self.steps):  # no heartbeat meanwhile: the request is in flight
            self.clock.advance(self.ttl * 0.75)
            renewed, waited = threading.Event(), 0.0
            renewed_by_now = self.clock.now + timedelta(seconds=self.ttl)  # what a renewal made after the move sets
            while get_run(self.engine, job.run_id).lease_expires_at < renewed_by_now and waited < self.patience:
                renewed.wait(0.01)
                waited += 0.01
        yield Report.from_case_runs(f"{job.run_id}:slow:0", [CaseRun(case_id=c.case_id) for c in job.cases])


def test_a_request_that_outlives_the_lease_is_stored(engine: sa.Engine, lake: Lake) -> None:
    clock, ttl = Clock(), 0.2
    run_id, error = _drive(engine, lake, Slow(engine, clock, ttl), clock=clock, ttl=ttl)
    assert Slow.steps * 0.75 * ttl > ttl  # the request outlived the lease it started with
    assert error is None and get_run(engine, run_id).status == "released"
    assert case_runs(lake, run_id).height == len(CASES)


def test_the_new_faults_are_steered_through_the_control_api(vapi: FakeVapi) -> None:
    change = {"truncated": 1, "body_route": "GET /assistant", "hang": {"GET /eval*": 0}, "answer_late": {"POST /chat": 0}}
    with httpx.Client(base_url=vapi.url, headers={"authorization": f"Bearer {KEY}"}) as http:
        assert http.post("/_fake/faults", json=change).json()["body_route"] == "GET /assistant"
        assert http.get("/eval").status_code == 200  # another route: whole
        with pytest.raises(httpx.RemoteProtocolError):  # cut mid-body, the connection closed
            http.get("/assistant")
        assert http.get("/assistant").json() == []  # one answer only
        assert http.post("/_fake/faults", json={"late": 1}).status_code == 400  # an unknown fault is refused
