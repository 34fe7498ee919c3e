"""Every vendor runner, against every wild mode of its fake (:mod:`assay.fakes.wild`): answers with undocumented
keys, optional fields left out or null, enumerated values the document does not list, an error in a 200's body.

A runner reads such an answer, or the case run is an ERROR whose message says what was off (in the vendor's own
words when it gave any). Never a crash, never a FAIL: an ERROR case run gives null results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fake_servers import elevenlabs_env, fake_elevenlabs, fake_hamming, fake_vapi, hamming_env
from runner_kit import case_runs, run, seed

from assay.adapters.http import RetryPolicy
from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
from assay.adapters.runners.hamming import HammingRunner
from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_chat import VapiChatRunner
from assay.adapters.runners.vapi_evals import VapiEvalsRunner
from assay.core.errors import MalformedResponseError
from assay.core.runner import AssertionSpec, CaseSpec, RunJob
from assay.core.settings import Settings
from assay.fakes.wild import MODES
from assay.storage.lake import Lake

SITUATION = {"caller": "Dana, homeowner", "wants": "A plumber", "turns": ["Hi, I need a plumber", "Thanks, bye"]}
READ = None
"""The expected outcome when the runner reads the answer: every case run executed."""
EXPECTED: dict[str, dict[str, str | None]] = {
    # runner -> mode -> READ, or words the ERROR case run's message holds
    "vapi_chat": {"extra_keys": READ, "drop_optional": "no 'id' or no 'output' list",
                  "null_optional": "no 'id' or no 'output' list", "unknown_enum": "which VAPI does not document",
                  "error_200": "VAPI said: An internal error occurred"},
    "vapi_evals": {"extra_keys": READ, "drop_optional": READ, "null_optional": READ, "unknown_enum": "not one VAPI documents",
                   "error_200": "VAPI said: An internal error occurred"},
    "elevenlabs_chat": {"extra_keys": READ, "drop_optional": "turns has a message", "null_optional": "turns has a message",
                        "unknown_enum": "role 'unlisted_value', not user or agent",
                        "error_200": "ElevenLabs said: An internal error occurred"},
    "hamming": {"extra_keys": READ, "drop_optional": "without a transcript", "null_optional": "without a transcript",
                "unknown_enum": "Hamming reported test case status 'UNLISTED_VALUE', which its API does not list",
                "error_200": "Hamming said: An internal error occurred"},
}
WHERE = {"vapi_chat": "POST /chat", "vapi_evals": "GET /eval/run/*",
         "elevenlabs_chat": "POST /v1/convai/agents/*/simulate-conversation", "hamming": "GET /test-runs/*/results"}
"""Which answers each runner's fake makes wild: the ones carrying the conversation and its verdicts."""


def test_every_mode_has_an_expected_outcome_for_every_runner() -> None:
    assert all(set(modes) == set(MODES) for modes in EXPECTED.values())


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _platform(runner_name: str, mode: str, engine: sa.Engine, lake: Lake) -> tuple[list[dict[str, Any]], str | None]:
    """(case runs, the run's error) of a one-case drive of a synchronous runner against its wild fake."""
    wild = {mode: WHERE[runner_name]}
    retry = RetryPolicy(attempts=2, base_delay=0.01)
    assertions = [{"key": "greets", "mechanism": "transcript.regex", "params": {"text": ".", "role": "agent"}}]
    if runner_name == "elevenlabs_chat":
        with fake_elevenlabs(wild=wild) as fake:
            settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in elevenlabs_env(fake).items()})
            runner: Any = ElevenLabsChatRunner(settings, sleep=lambda s: None)
            run_id, result, _ = run(engine, lake, seed(engine, EXAMPLE_CONFIG, {"wild": SITUATION}), runner)
    else:
        with fake_vapi(wild=wild) as fake:
            settings = Settings(vapi_base_url=fake.url, vapi_api_key=fake.key)
            cls = VapiChatRunner if runner_name == "vapi_chat" else VapiEvalsRunner
            runner = cls(settings=settings, sleep=lambda s: None, retry=retry)
            run_id, result, _ = run(engine, lake, seed(engine, EXAMPLE_CONFIG, {"wild": SITUATION}, assertions), runner)
            assert fake.live_objects().keys() <= {"chat", "eval_run"}  # scratch assistants and evals deleted all the same
    return case_runs(lake, run_id).to_dicts(), result.error


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("runner_name", ["vapi_chat", "vapi_evals", "elevenlabs_chat"])
def test_a_synchronous_runner_reads_a_wild_answer_or_makes_an_error_case_run(
        runner_name: str, mode: str, engine: sa.Engine, lake: Lake) -> None:
    rows, run_error = _platform(runner_name, mode, engine, lake)
    expected = EXPECTED[runner_name][mode]
    assert run_error is None and len(rows) == 1  # the run itself went on: one case run
    [row] = rows
    if expected is READ:
        assert row["status"] == "executed", row["error"]
        assert {t["role"] for t in row["transcript"]} == {"caller", "agent"}  # the conversation, read whole
    else:
        assert row["status"] == "error" and expected in row["error"], row["error"]


def _hamming_job() -> RunJob:
    spec = AssertionSpec(assertion_id="id-greets", key="greets", version=1, mechanism="vendor.evaluation",
                         params={"vendor_id": "as-greeting", "name": "Greets the caller"}, role="hamming")
    case = CaseSpec(case_id="dana", case_key="dana", content={"case_key": "dana", "content": {"situation": SITUATION}})
    return RunJob(run_id="run-1", team_id="t", suite_key="s", target_kind="config", target={"config": {}},
                  cases=(case,), assertions=(spec,))


@pytest.mark.parametrize("mode", MODES)
def test_hamming_reads_wild_results_or_reports_an_error(mode: str) -> None:
    expected = EXPECTED["hamming"][mode]
    with fake_hamming() as fake:
        env = {**{k.removeprefix("ASSAY_").lower(): v for k, v in hamming_env(fake).items()},
               "hamming_phone_numbers": ["+15555550100"]}
        runner = HammingRunner(settings=Settings(**env), retry=RetryPolicy(attempts=2, base_delay=0.01), sleep=lambda s: None)
        try:
            job = _hamming_job()
            ref = runner.submit(job)
            fake.faults.wild = {mode: WHERE["hamming"]}
            if mode == "error_200":  # the whole answer is an error: nothing to read per case
                with pytest.raises(MalformedResponseError, match=expected):
                    runner.collect(job, ref)
                return
            [report] = list(runner.collect(job, ref))
        finally:
            runner.close()
    [row] = report.case_runs.to_pylist()
    if expected is READ:
        assert row["status"] == "executed", row["error"]
        verdicts = {e["name"]: e["verdict"] for e in report.evaluations.to_pylist()}
        assert verdicts["assertion:greets"] == "pass" and row["transcript"]  # joined by id, undocumented keys aside
    else:
        assert row["status"] == "error" and expected in row["error"], row["error"]


def test_a_hamming_run_status_beyond_the_documented_ones_is_waited_on() -> None:
    with fake_hamming(wild={"unknown_enum": "GET /test-runs/*/status"}) as fake:
        env = {**{k.removeprefix("ASSAY_").lower(): v for k, v in hamming_env(fake).items()},
               "hamming_phone_numbers": ["+15555550100"]}
        runner = HammingRunner(settings=Settings(**env), sleep=lambda s: None)
        try:
            job = _hamming_job()
            assert runner.collect(job, runner.submit(job)) is None  # not finished, as far as anyone can tell
        finally:
            runner.close()
