"""Hamming, both directions: situations into test configurations, our assertions into Hamming's slot (and
back, with renames caught), results into case runs and evaluations on Hamming's own scales.

Runner tests speak to the fake Hamming on loopback through the real HTTP client.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from assay.adapters import hamming as h
from assay.adapters.caller import END_TOKEN
from assay.adapters.http import RetryPolicy
from assay.adapters.runners.hamming import HammingRunner
from assay.core.errors import ConfigError, PermanentVendorError
from assay.core.runner import AssertionSpec, CaseSpec, RunJob
from assay.core.settings import Settings
from assay.fakes.hamming import FakeHamming

from fake_servers import fake_hamming, hamming_env

CATALOGUE = {"as-greet": "Greets the caller", "as-book": "Books a visit", "as-tone": "Keeps a calm tone"}
DANA = {"caller": "Dana Whitfield, homeowner, calm but worried", "wants": "A same-day repair",
        "must_be_told": ["The address is outside the service area"], "world": {"caller_zip": "60827"}}
MARCUS = {"caller": "Marcus", "wants": "The water stopped", "turns": ["Water everywhere!", "Thanks"]}


def case(case_id: str, situation: dict[str, Any]) -> CaseSpec:
    return CaseSpec(case_id=case_id, case_key=case_id, content={"case_key": case_id, "content": {"situation": situation}})


def assertion(key: str, name: str | None = None, *, role: str | None = "hamming", case_id: str | None = None,
              mechanism: str = "vendor.evaluation", vendor_id: str | None = None) -> AssertionSpec:
    """One of our assertions; in Hamming's slot it names the assertion's id (the catalogue's, by name, unless given)."""
    known = {n: i for i, n in CATALOGUE.items()}
    params: dict[str, Any] = {"name": name, "vendor_id": vendor_id or known.get(name)} if name else {"text": "x"}
    params = {k: v for k, v in params.items() if v is not None}
    return AssertionSpec(assertion_id=f"id-{key}", key=key, version=1, mechanism=mechanism, params=params,
                         role=role, case_id=case_id)


def job(*assertions: AssertionSpec) -> RunJob:
    return RunJob(run_id="run-1", team_id="t", suite_key="s", target_kind="config", target={"config": {}},
                  cases=(case("dana", DANA), case("marcus", MARCUS)), assertions=assertions)


GREETS, BOOKS = assertion("greets", "Greets the caller"), assertion("books", "Books a visit")


@pytest.fixture
def hamming() -> Iterator[FakeHamming]:
    with fake_hamming(assertions=CATALOGUE) as fake:
        yield fake


_open: list[HammingRunner] = []


@pytest.fixture(autouse=True)
def _close_runners() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def runner_for(fake: FakeHamming, **overrides: Any) -> HammingRunner:
    env = {k.removeprefix("ASSAY_").lower(): v for k, v in hamming_env(fake).items()}
    env["hamming_phone_numbers"] = ["+15555550100"]
    sleep = overrides.pop("sleep", lambda s: None)
    runner = HammingRunner(settings=Settings(**{**env, **overrides}), retry=RetryPolicy(base_delay=0.01), sleep=sleep)
    _open.append(runner)
    return runner


def collected(runner: HammingRunner, j: RunJob, ref: str) -> tuple[list[dict], list[dict], dict]:
    [report] = list(runner.collect(j, ref))
    return report.case_runs.to_pylist(), report.evaluations.to_pylist(), report.meta


def by_name(evals: list[dict], case_id: str) -> dict[str, dict]:
    return {e["name"]: e for e in evals if e["case_id"] == case_id}


# -- out: situations and assertions ------------------------------------------------------------------

def test_a_situation_becomes_a_persona_and_scenario_facts() -> None:
    cfg = h.configuration_for(case("dana", DANA), "tc-1")
    assert cfg["testCaseId"] == "tc-1" and cfg["scenarioFacts"] == {"caller_zip": "60827"}
    assert cfg["persona"]["name"] == "Dana Whitfield"
    prompt = cfg["persona"]["prompt"]
    assert "A same-day repair" in prompt and "outside the service area" in prompt and "caller_zip: 60827" in prompt
    assert END_TOKEN not in prompt  # Hamming's caller hangs up by itself
    scripted = h.configuration_for(case("marcus", MARCUS), "tc-1")
    assert "scenarioFacts" not in scripted and "- Water everywhere!\n- Thanks" in scripted["persona"]["prompt"]


def test_an_assertion_in_hammings_slot_must_name_a_hamming_assertion_by_id_and_name() -> None:
    with pytest.raises(ConfigError, match="assertion 'says_hi' has role 'hamming' but mechanism 'transcript.contains'"):
        h.slotted(job(assertion("says_hi", mechanism="transcript.contains")))
    with pytest.raises(ConfigError, match=r"names Hamming assertion 'Not in the account' but not its id.*params.vendor_id"):
        h.slotted(job(assertion("unnamed", "Not in the account")))
    assert h.slotted(job(GREETS, assertion("ours", "x", role=None))) == [GREETS]


def test_the_bundle_is_the_mapping_and_one_id_under_two_names_is_refused() -> None:
    assert h.selected([GREETS, BOOKS]) == {"id-greets": ("as-greet", "Greets the caller"),
                                           "id-books": ("as-book", "Books a visit")}
    with pytest.raises(ConfigError, match="Hamming assertion as-greet is named 'Greets the caller' and 'Says hello'"):
        h.selected([GREETS, assertion("hello", "Says hello", vendor_id="as-greet")])


def test_the_provider_reference_round_trips_and_a_foreign_one_is_refused() -> None:
    sub = h.Submission("tr_1", (("tcr_1", "dana"),), {"id-greets": ("a1", "Greets the caller")})
    assert h.Submission.from_ref(sub.to_ref()) == sub
    with pytest.raises(ConfigError, match="not a Hamming submission"):
        h.Submission.from_ref('{"v": 99}')


def test_a_plain_transcript_becomes_turns() -> None:
    text = "Agent: Thanks for calling.\nCustomer: My heater leaks\nfrom the bottom.\nAI: Let me check.\nUser: ok"
    assert [(t.role, t.text) for t in h.turns(text)] == [
        ("agent", "Thanks for calling."), ("caller", "My heater leaks from the bottom."),
        ("agent", "Let me check."), ("caller", "ok")]
    assert [(t.role, t.text) for t in h.turns("no speakers here")] == [("system", "no speakers here")]
    assert h.turns(None) == [] and h.turns("  ") == []


# -- the runner against the fake ---------------------------------------------------------------------

def test_submit_sends_each_case_and_the_selected_assertions(hamming: FakeHamming) -> None:
    runner = runner_for(hamming)
    j = job(GREETS, assertion("tone", "Keeps a calm tone", case_id="dana"), assertion("ours", "x", role=None))
    sub = h.Submission.from_ref(runner.submit(j))
    [run] = hamming.objects("test_runs").values()
    assert run["id"] == sub.test_run and sorted(run["assertion_ids"]) == ["as-greet", "as-tone"]
    assert [cfg["persona"]["name"] for _, cfg in [(c["testCaseId"], c["config"]) for c in run["case_runs"]]] == [
        "Dana Whitfield", "Marcus"]
    assert [c for _, c in sub.case_runs] == ["dana", "marcus"]
    assert runner.vendor_mappings(j, sub.to_ref()) == {
        "id-greets": ("as-greet", "Greets the caller"), "id-tone": ("as-tone", "Keeps a calm tone")}


def test_collect_waits_then_maps_results_onto_our_assertions(hamming: FakeHamming) -> None:
    runner = runner_for(hamming)
    j = job(GREETS, BOOKS, assertion("tone", "Keeps a calm tone", case_id="dana"))
    hamming.faults.never_finish = True
    waiting = runner.submit(j)
    assert runner.collect(j, waiting) is None
    hamming.faults.never_finish = False
    hamming.faults.scripts = {"assertion_status": {"as-book": "FAILED", "as-tone": "ERROR"},
                              "reasons": {"as-book": "No visit was offered"}}
    ref = runner.submit(j)
    runs, evals, meta = collected(runner, j, ref)
    assert [(r["case_id"], r["status"]) for r in runs] == [("dana", "executed"), ("marcus", "executed")]
    assert runs[0]["transcript"][1] == {"role": "caller", "text": "Hi, this is Dana Whitfield.", "t": None, "end_t": None}
    assert runs[0]["duration_ms"] == 30_000.0 and runs[0]["provider_ref"].startswith("tcr_")
    dana = by_name(evals, "dana")
    assert (dana["test"]["evaluator"], dana["test"]["verdict"], dana["test"]["met"]) == ("hamming:test", "fail", False)
    greets, books, tone = dana["assertion:greets"], dana["assertion:books"], dana["assertion:tone"]
    assert (greets["evaluator"], greets["verdict"], greets["met"], greets["value"]) == ("hamming:assertion", "pass", True, 1.0)
    assert (books["verdict"], books["met"], books["rationale"]) == ("fail", False, "No visit was offered")
    assert (tone["verdict"], tone["met"], tone["value"]) == ("error", None, None)  # an ERROR is never a failure
    score = dana["overall_score"]
    assert (score["evaluator"], score["scale_min"], score["scale_max"]) == ("hamming:score", 0.0, 100.0)
    assert score["value"] == pytest.approx(score["score"] / 100) and score["met"] is None
    assert dana["latencyP50"]["evaluator"] == "hamming:metric" and dana["latencyP50"]["score"] == 800.0
    assert "assertion:tone" not in by_name(evals, "marcus")  # a case-level assertion answers for its case only
    assert meta == {"provider_status": "COMPLETED", "warnings": []}


def test_a_renamed_hamming_assertion_is_reported_never_joined(hamming: FakeHamming, caplog: pytest.LogCaptureFixture) -> None:
    runner = runner_for(hamming)
    j = job(GREETS, BOOKS)
    ref = runner.submit(j)
    hamming.faults.rename_assertions = {"as-greet": "Greets the caller by name"}
    with caplog.at_level(logging.WARNING):
        _, evals, meta = collected(runner, j, ref)
    greets = by_name(evals, "dana")["assertion:greets"]
    assert (greets["verdict"], greets["met"]) == ("error", None)
    assert "'Greets the caller'" in greets["rationale"] and "'Greets the caller by name'" in greets["rationale"]
    assert by_name(evals, "dana")["assertion:books"]["met"] is True  # the others still join
    assert len(meta["warnings"]) == 2 and "renamed at Hamming" in caplog.text  # one per case run


def test_hamming_errors_become_error_case_runs_and_unsent_assertions_keep_their_name(hamming: FakeHamming) -> None:
    runner = runner_for(hamming)
    j = job(GREETS)
    hamming.faults.scripts = {"case_status": {"Marcus": "ERROR"}}
    ref = runner.submit(j)
    hamming.objects("test_runs")[h.Submission.from_ref(ref).test_run]["assertion_ids"].append("as-book")
    runs, evals, _ = collected(runner, j, ref)
    assert [(r["case_id"], r["status"]) for r in runs] == [("dana", "executed"), ("marcus", "error")]
    assert "ERROR" in runs[1]["error"] and by_name(evals, "marcus")["test"]["met"] is None
    assert by_name(evals, "marcus")["assertion:greets"]["verdict"] == "error"  # no result: error, not fail
    assert by_name(evals, "dana")["Books a visit"]["evaluator"] == "hamming:assertion"


def test_a_cancelled_run_leaves_error_case_runs(hamming: FakeHamming) -> None:
    runner = runner_for(hamming)
    hamming.faults.scripts = {"final_status": "CANCELED"}
    runs, _, meta = collected(runner, job(), runner.submit(job()))
    assert {r["status"] for r in runs} == {"error"} and "ended CANCELED" in runs[0]["error"]
    assert meta["provider_status"] == "CANCELED"


def test_only_documented_calls_are_made(hamming: FakeHamming) -> None:
    runner = runner_for(hamming)
    j = job(GREETS, BOOKS)
    collected(runner, j, runner.submit(j))
    calls = {(r["method"], re.sub(r"/tr_\w+/", "/{id}/", r["path"])) for r in hamming.requests}
    assert calls == {("POST", "/test-runs/test-inbound-agent"), ("GET", "/test-runs/{id}/status"),
                     ("GET", "/test-runs/{id}/results")}


def test_an_assertion_id_the_account_lacks_is_refused_by_hamming_at_submission(hamming: FakeHamming) -> None:
    with pytest.raises(PermanentVendorError, match=r"HTTP 400.*unknown assertion ids \['as-gone'\]"):
        runner_for(hamming).submit(job(assertion("gone", "Was deleted", vendor_id="as-gone")))


def test_missing_settings_and_a_bad_key_are_named_without_the_key(hamming: FakeHamming) -> None:
    with pytest.raises(ConfigError, match="ASSAY_HAMMING_TEST_CASE_ID"):
        runner_for(hamming, hamming_test_case_id=None).submit(job())
    with pytest.raises(ConfigError, match="ASSAY_HAMMING_API_KEY"):
        HammingRunner(settings=Settings(hamming_base_url=hamming.url)).client
    with pytest.raises(ConfigError, match=r"Hamming refused the key \(HTTP 401.*check ASSAY_HAMMING_API_KEY") as err:
        runner_for(hamming, hamming_api_key="wrong-key-0123456789").submit(job(GREETS))
    assert "wrong-key" not in str(err.value)


def test_rate_limits_are_waited_out_as_hamming_asks(hamming: FakeHamming) -> None:
    waits: list[float] = []
    runner = runner_for(hamming, sleep=waits.append)
    ref = runner.submit(job())
    hamming.faults.rate_limited, hamming.faults.retry_after = 2, 7
    runs, _, _ = collected(runner, job(), ref)
    assert len(runs) == 2 and waits == [7.0, 7.0]
    assert [r["status"] for r in hamming.requests if "/status" in r["path"]] == [429, 429, 200]
