"""Vendors slower than our leases, our timeouts and our deadlines, in real seconds: nothing the vendor did is
lost, nothing billable is made twice, and a run past its deadline ends ``timed_out`` with what arrived.

Each test counts: case runs stored, billable objects at the fake (chats, simulations), statuses. The
fakes' ``hang`` holds a request before the work is done; ``answer_late`` does the work, then holds the
answer past the client's timeout (what a blind retry turns into duplicated, billed work).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import SecretStr
from fake_servers import fake_hamming, hamming_env
from runner_kit import case_runs, seed

from assay.adapters.elevenlabs import ElevenLabsApi
from assay.adapters.http import RetryPolicy, VendorClient
from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
from assay.adapters.runners.hamming import HammingRunner
from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_chat import VapiChatRunner
from assay.adapters.vapi import VapiApi
from assay.core import runner as runner_module
from assay.core.errors import UnconfirmedCreateError
from assay.core.runner import CaseSpec, Runner, RunJob, drive
from assay.core.settings import Settings
from assay.fakes.elevenlabs import FakeElevenLabs
from assay.fakes.vapi import FakeVapi
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import create_run, get_run, job_for_run
from assay.storage.lake import Lake

KEY = "vendor-key-0123456789"
CHAT = "POST /chat"
SIMULATE = "POST /v1/convai/agents/*/simulate-conversation"
TIMEOUT = 0.3
"""The clients' read timeout in these tests: the vendors below answer later."""


class QuickVapi(VapiChatRunner):
    def api(self) -> VapiApi:
        return VapiApi.from_settings(self.settings, retry=self.retry, sleep=self.sleep, timeout=TIMEOUT)


class QuickElevenLabs(ElevenLabsChatRunner):
    def api(self) -> ElevenLabsApi:
        return ElevenLabsApi.from_settings(self.settings, retry=self.retry, sleep=self.sleep, timeout=TIMEOUT)


VENDORS = {
    "vapi": (FakeVapi, VapiChatRunner, QuickVapi, CHAT,
             lambda url: Settings(vapi_base_url=url, vapi_api_key=SecretStr(KEY))),
    "elevenlabs": (FakeElevenLabs, ElevenLabsChatRunner, QuickElevenLabs, SIMULATE,
                   lambda url: Settings(elevenlabs_base_url=url, elevenlabs_api_key=SecretStr(KEY))),
}
CASES = {f"case-{n}": {"caller": "Dana", "wants": "a plumber", "turns": ["Hi, my ZIP is 60614"]} for n in range(3)}


@pytest.fixture(params=sorted(VENDORS))
def vendor(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    fake_class = VENDORS[request.param][0]
    with fake_class(key=KEY) as fake:
        yield request.param, fake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _runner(name: str, fake: Any, *, quick: bool = False) -> Runner:
    _, plain, fast, _, settings = VENDORS[name]
    return (fast if quick else plain)(settings(fake.url), retry=RetryPolicy(attempts=3, base_delay=0.0))


def _billed(name: str, fake: Any) -> int:
    """Billable work the fake did: chats it holds (VAPI), simulations it answered (ElevenLabs)."""
    if name == "vapi":
        return len(fake.objects("chat"))
    return sum(1 for r in fake.requests if r["path"].endswith("/simulate-conversation") and r["status"] == 200)


def _drive(engine: sa.Engine, lake: Lake, runner: Runner, ttl: float = 120.0,
           deadline: timedelta | None = None) -> tuple[str, str | None]:
    suite = seed(engine, EXAMPLE_CONFIG, CASES)
    run_id = create_run(engine, suite, runner.name, deadline=deadline).run_id
    result = drive(runner, CatalogLedger(engine, lake), job_for_run(engine, run_id), owner="test", ttl_seconds=ttl)
    return run_id, result.error


def test_a_vendor_slower_than_the_lease_loses_nothing(engine: sa.Engine, lake: Lake, vendor: tuple[str, Any]) -> None:
    name, fake = vendor
    fake.faults.hang = {VENDORS[name][3]: 1.8}  # each conversation outlasts the lease below
    run_id, error = _drive(engine, lake, _runner(name, fake), ttl=1.2)  # renewed every 0.3 s: margin for a busy machine
    assert error is None and get_run(engine, run_id).status == "released"
    stored = case_runs(lake, run_id)
    assert stored.height == len(CASES) and set(stored["status"]) == {"executed"}
    assert _billed(name, fake) == len(CASES)


def test_billable_work_answered_after_we_gave_up_is_never_made_twice(engine: sa.Engine, lake: Lake,
                                                                    vendor: tuple[str, Any]) -> None:
    name, fake = vendor
    fake.faults.answer_late = {VENDORS[name][3]: TIMEOUT + 0.3}
    run_id, error = _drive(engine, lake, _runner(name, fake, quick=True))
    time.sleep(TIMEOUT + 0.3)  # the last answer the client gave up on is still on its way: let the fake finish
    assert error is None
    stored = case_runs(lake, run_id)
    assert stored.height == len(CASES)
    assert _billed(name, fake) == len(CASES)  # one chat or simulation per case: none made twice
    if name == "vapi":  # found by the name each chat carries: the evidence is whole
        assert set(stored["status"]) == {"executed"}
    else:  # ElevenLabs offers no way to find a simulation: an error that says so, never a failure
        assert set(stored["status"]) == {"error"}
        assert all("not sent again" in e for e in stored["error"])


def test_a_run_past_its_deadline_ends_timed_out_keeping_what_arrived(
        engine: sa.Engine, lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "REPORT_RESERVE", timedelta(seconds=0.3))
    turns = ["Hi", "My ZIP is 60614", "Can you come today?", "Thanks"]
    cases = {"short": {"caller": "Dana", "turns": turns[:1]}, "long": {"caller": "Ravi", "turns": turns}}
    with FakeVapi(key=KEY) as fake:
        fake.faults.hang = {CHAT: 0.3}  # five chats of 0.3 s; the run stops waiting 1.2 s in, during the long case
        suite = seed(engine, EXAMPLE_CONFIG, cases)
        run_id = create_run(engine, suite, "vapi_chat", deadline=timedelta(seconds=1.5)).run_id
        result = drive(_runner("vapi", fake), CatalogLedger(engine, lake), job_for_run(engine, run_id), owner="test",
                       ttl_seconds=120)
    assert get_run(engine, run_id).status == "timed_out"
    assert result.error is not None and result.error.startswith("timed out after") and "waiting for VAPI" in result.error
    assert "lease" not in result.error
    stored = {r["case_key"]: r for r in case_runs(lake, run_id).to_dicts()}
    assert stored["short"]["status"] == "executed"
    cut = stored["long"]  # cut short: an error that says so, with every reply that arrived before the deadline
    assert cut["status"] == "error" and cut["error"].startswith("timed out after")
    assert 1 <= sum(t["role"] == "agent" for t in cut["transcript"]) < len(turns)


def test_a_hamming_start_answered_after_we_gave_up_is_never_sent_again() -> None:
    cases = tuple(CaseSpec(f"c{n}", f"case-{n}", {"content": {"situation": s}}) for n, s in enumerate(CASES.values()))
    job = RunJob(run_id="run-1", team_id="t", suite_key="s", target_kind="config", target={"config": {}}, cases=cases)
    with fake_hamming() as fake:
        fake.faults.answer_late = {"POST /test-runs/test-inbound-agent": TIMEOUT + 0.3}
        env = {k.removeprefix("ASSAY_").lower(): v for k, v in hamming_env(fake).items()}
        settings = Settings(**{**env, "hamming_phone_numbers": ["+15555550100"]})
        client = VendorClient("hamming", fake.url, {"Authorization": f"Bearer {fake.key}"}, timeout=TIMEOUT,
                              retry=RetryPolicy(attempts=3, base_delay=0.0))
        runner = HammingRunner(settings=settings, client=client)
        try:
            with pytest.raises(UnconfirmedCreateError, match=f"look for a new test run of agent {fake.agent_id}"):
                runner.submit(job)
        finally:
            runner.close()
        time.sleep(TIMEOUT + 0.3)  # the start the client gave up on is still being answered
        assert len(fake.objects("test_runs")) == 1  # one run of calls started, and billed, once
