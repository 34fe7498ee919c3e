"""The fake Hamming speaks the test-run protocol: strict start requests, status until done, results shaped
like Hamming's, and the faults a test steers it with."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_servers import HAMMING_KEY, fake_hamming

from assay.fakes.hamming import FakeHamming
from assay.fakes.hamming_reading import hamming_reading

CATALOGUE = {"as-greet": "Greets the caller", "as-book": "Books a visit"}


@pytest.fixture
def hamming() -> Iterator[FakeHamming]:
    with fake_hamming(assertions=CATALOGUE) as fake:
        yield fake


@pytest.fixture
def http(hamming: FakeHamming) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hamming.url, headers={"Authorization": f"Bearer {HAMMING_KEY}"}, timeout=30) as client:
        yield client


def start_body(**changes: Any) -> dict[str, Any]:
    body = {
        "agentId": "fake-agent", "phoneNumbers": ["+15555550100"],
        "testConfigurations": [
            {"testCaseId": "tc-template", "persona": {"name": "Dana", "prompt": "You are Dana."}, "scenarioFacts": {"zip": "60601"}},
            {"testCaseId": "tc-template", "persona": {"name": "Marcus", "prompt": "You are Marcus."}},
        ],
        "selectedAssertionIds": ["as-greet", "as-book"],
    }
    return {**body, **changes}


class Stepped:
    """The fake's clock, moved by the test: a run that takes a second and a half finishes at a step."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_wrong_key_is_refused(hamming: FakeHamming) -> None:
    answer = httpx.get(f"{hamming.url}/test-runs/tr_1/status", headers={"Authorization": "Bearer nope"})
    assert answer.status_code == 401 and answer.json()["message"] == "Invalid API key"


@pytest.mark.parametrize("change,status,words", [
    ({"agentID": "x"}, 400, "unknown fields ['agentID']"),
    ({"agentId": "someone-else"}, 404, "agent 'someone-else' not found"),
    ({"phoneNumbers": []}, 400, "phoneNumbers must be a non-empty list"),
    ({"testConfigurations": [{"testCaseId": "tc-template", "tagId": "assay"}]}, 400, "exactly one of testCaseId and tagId"),
    ({"testConfigurations": [{"testCaseId": "tc-nope"}]}, 404, "test case 'tc-nope' not found"),
    ({"testConfigurations": [{"testCaseId": "tc-template", "persona": {"name": "D"}}]}, 400, "persona.name and persona.prompt"),
    ({"testConfigurations": [{"testCaseId": "tc-template", "scenarioFacts": ["a"]}]}, 400, "scenarioFacts must be an object"),
    ({"selectedAssertionIds": ["as-greet", "as-gone"]}, 400, "unknown assertion ids ['as-gone']"),
    ({"samplingCount": 0}, 400, "samplingCount must be an integer from 1 to 10"),
])
def test_a_bad_start_request_is_refused_naming_the_problem(http: httpx.Client, hamming: FakeHamming,
                                                           change: dict, status: int, words: str) -> None:
    answer = http.post("/test-runs/test-inbound-agent", json=start_body(**change))
    assert answer.status_code == status and words in answer.json()["message"]
    assert hamming.objects("test_runs") == {}


def test_a_run_goes_running_then_completed_with_results_shaped_like_hamming(http: httpx.Client, hamming: FakeHamming) -> None:
    hamming.clock = clock = Stepped()
    hamming.faults.finish_after = 1.5
    started = http.post("/test-runs/test-inbound-agent", json=start_body()).json()
    run_id, case_runs = started["testRunId"], started["testCaseRuns"]
    assert [c["testCaseId"] for c in case_runs] == ["tc-template", "tc-template"]
    assert http.get(f"/test-runs/{run_id}/status").json()["status"] in ("RUNNING", "SCORING")
    assert http.get(f"/test-runs/{run_id}/results").json()["results"][0]["status"] == "PENDING"
    clock.now += 1.2
    assert http.get(f"/test-runs/{run_id}/status").json()["status"] == "SCORING"  # the last fifth of its time
    clock.now += 0.3
    assert http.get(f"/test-runs/{run_id}/status").json()["status"] == "COMPLETED"
    doc = http.get(f"/test-runs/{run_id}/results").json()
    assert doc["summary"] | {"assertions": None} == {
        "id": run_id, "status": "COMPLETED", "totalTests": 2, "passedTests": 2, "failedTests": 0, "assertions": None}
    assert doc["summary"]["assertions"]["overallScore"] == 100.0
    first = doc["results"][0]
    assert first["id"] == case_runs[0]["id"] and first["status"] == "PASSED"
    assert first["assertionResults"] == [
        {"assertionId": "as-greet", "assertionName": "Greets the caller", "status": "PASSED"},
        {"assertionId": "as-book", "assertionName": "Books a visit", "status": "PASSED"},
    ]
    assert "Customer: Hi, this is Dana." in first["transcript"]
    assert set(first["metrics"]) == {"latencyP50", "latencyP90", "interruptionCount"} and first["duration"] > 0


def test_scripts_steer_results_and_a_rename_shows_in_them(http: httpx.Client, hamming: FakeHamming) -> None:
    run_id = http.post("/test-runs/test-inbound-agent", json=start_body()).json()["testRunId"]
    hamming.faults.scripts = {"assertion_status": {"as-book": "FAILED"}, "reasons": {"as-book": "No visit booked"},
                              "case_status": {"Marcus": "ERROR"}, "transcript": {"Dana": "Agent: Hello Dana"}}
    hamming.faults.rename_assertions = {"as-greet": "Greets the caller warmly"}
    dana, marcus = http.get(f"/test-runs/{run_id}/results").json()["results"]
    assert dana["status"] == "FAILED" and dana["transcript"] == "Agent: Hello Dana"
    assert dana["assertionResults"] == [
        {"assertionId": "as-greet", "assertionName": "Greets the caller warmly", "status": "PASSED"},
        {"assertionId": "as-book", "assertionName": "Books a visit", "status": "FAILED", "reason": "No visit booked"},
    ]
    assert marcus["status"] == "ERROR" and marcus["assertionResults"] == [] and "transcript" not in marcus


@pytest.mark.parametrize("final,case_status", [("CANCELED", "PENDING"), ("FAILED", "ERROR"), ("SCORING_FAILED", "PASSED")])
def test_a_run_can_end_badly(http: httpx.Client, hamming: FakeHamming, final: str, case_status: str) -> None:
    hamming.faults.scripts = {"final_status": final}
    run_id = http.post("/test-runs/test-inbound-agent", json=start_body()).json()["testRunId"]
    assert http.get(f"/test-runs/{run_id}/status").json() == {"status": final}
    results = http.get(f"/test-runs/{run_id}/results").json()["results"]
    assert {r["status"] for r in results} == {case_status}
    if final == "SCORING_FAILED":
        assert {a["status"] for r in results for a in r["assertionResults"]} == {"ERROR"}


def test_never_finish_and_random_completion_times(http: httpx.Client, hamming: FakeHamming) -> None:
    hamming.clock = clock = Stepped()
    hamming.faults.never_finish = True
    stuck = http.post("/test-runs/test-inbound-agent", json=start_body()).json()["testRunId"]
    hamming.faults.never_finish = False
    hamming.faults.scripts = {"finish_between": [0.0, 0.4]}
    quick = [http.post("/test-runs/test-inbound-agent", json=start_body()).json()["testRunId"] for _ in range(5)]
    finish = [hamming.objects("test_runs")[r]["finish_at"] - hamming.objects("test_runs")[r]["started"] for r in quick]
    assert all(0.0 <= f <= 0.4 for f in finish) and len(set(finish)) == 5
    clock.now += 0.4
    assert all(http.get(f"/test-runs/{r}/status").json()["status"] == "COMPLETED" for r in quick)
    clock.now += 3600
    assert http.get(f"/test-runs/{stuck}/status").json()["status"] == "RUNNING"


def test_unknown_runs_are_404(http: httpx.Client) -> None:
    for path in ("/test-runs/tr_nope/status", "/test-runs/tr_nope/results"):
        answer = http.get(path)
        assert answer.status_code == 404 and "tr_nope" in answer.json()["message"]


def test_a_tag_expands_to_its_test_cases_and_sampling_repeats_them(http: httpx.Client) -> None:
    body = start_body(testConfigurations=[{"tagId": "assay"}], samplingCount=3)
    started = http.post("/test-runs/test-inbound-agent", json=body).json()
    assert [c["testCaseId"] for c in started["testCaseRuns"]] == ["tc-template"] * 3


@pytest.mark.parametrize("method,path", [("GET", "/assertions"), ("POST", "/assertions")])
def test_only_documented_calls_are_served(http: httpx.Client, method: str, path: str) -> None:
    assert http.request(method, path, json={"name": "x"}).status_code == 404  # Hamming documents no assertion API


def test_rate_limits_carry_retry_after_and_concurrency_is_counted(http: httpx.Client, hamming: FakeHamming) -> None:
    hamming.faults.rate_limited, hamming.faults.retry_after = 1, 2
    limited = http.get("/test-runs/tr_1/status")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    hamming.faults.latency = 0.1  # long enough for four requests started together to overlap
    threads = [threading.Thread(target=http.get, args=("/test-runs/tr_1/status",)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 2 <= hamming.peak_in_flight <= 4 and hamming.in_flight == 0


@pytest.mark.parametrize("final", ["COMPLETED", "SCORING_FAILED", "FAILED", "CANCELED"])
def test_every_answer_is_in_the_shape_our_reading_of_hamming_gives(http: httpx.Client, hamming: FakeHamming,
                                                                  final: str) -> None:
    reading = hamming_reading()
    hamming.faults.scripts = {"final_status": final, "assertion_status": {"as-book": "FAILED"}, "reasons": {"as-book": "No."}}
    started = http.post("/test-runs/test-inbound-agent", json=start_body())
    assert reading.response_problems("POST", "/test-runs/test-inbound-agent", started.status_code, started.json()) == []
    run_id = started.json()["testRunId"]
    for template in ("/test-runs/{id}/status", "/test-runs/{id}/results"):
        answer = http.get(template.replace("{id}", run_id))
        assert reading.response_problems("GET", template, 200, answer.json()) == [], answer.json()
    assert reading.problems("POST", "/test-runs/test-inbound-agent", start_body()) == []  # what the tests send, too
