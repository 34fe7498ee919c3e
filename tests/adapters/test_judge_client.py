"""Our judge's client against the fake OpenAI-compatible server: verdicts, errors as null, retries, the bound."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from assay.adapters.http import RetryPolicy
from assay.adapters.judges import PROMPT_VERSION, Judge
from assay.adapters.judges.prompt import SYSTEM, parse_verdict
from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.settings import Settings
from assay.fakes.openai import FakeOpenAI, tokens

KEY = "sk-judge-secret-0123456789abcdef"
EVIDENCE = "TRANSCRIPT\ncaller: I want a refund\nagent: Refunds take five days.\n\nTOOL CALLS\n(none)"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(key=KEY) as fake:
        yield fake


def judge_for(server: FakeOpenAI, sleeps: list[float] | None = None, **kwargs) -> Judge:
    recorded = sleeps if sleeps is not None else []
    return Judge(server.url + "/v1", "judge-model", KEY, sleep=recorded.append, **kwargs)


def test_a_verdict_comes_with_its_rationale_tokens_and_cost(server: FakeOpenAI) -> None:
    server.add_rule("refund", {"verdict": "fail", "rationale": "The agent never offered the refund."})
    with judge_for(server, usd_per_1k_in=0.5, usd_per_1k_out=2.0) as judge:
        j = judge.ask("The agent offers a refund.", EVIDENCE)
    assert (j.met, j.value, j.reason) == (False, 0.0, "The agent never offered the refund.")
    body = server.bodies[-1]
    assert body["model"] == "judge-model" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"] and body["messages"][0]["content"] == SYSTEM
    assert "RUBRIC\nThe agent offers a refund." in body["messages"][1]["content"]
    assert EVIDENCE in body["messages"][1]["content"]
    prompt = tokens("\n".join(m["content"] for m in body["messages"]))
    answer = tokens(json.dumps({"verdict": "fail", "rationale": "The agent never offered the refund."}))
    assert (j.tokens_in, j.tokens_out) == (prompt, answer)
    assert j.cost_usd == pytest.approx(prompt / 1000 * 0.5 + answer / 1000 * 2.0)
    assert PROMPT_VERSION == 1


def test_a_pass_is_met_and_cost_is_unknown_without_prices(server: FakeOpenAI) -> None:
    with judge_for(server) as judge:
        j = judge.ask("The agent is polite.", EVIDENCE)
    assert (j.met, j.value, j.cost_usd) == (True, 1.0, None) and j.tokens_in


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("Yes, it passes.", "is not JSON"),
        ('["pass"]', "is JSON but not an object"),
        ({"verdict": "pass"}, "lacks rationale"),
        ({"verdict": "pass", "rationale": "ok", "score": 5}, "has unexpected key(s) score"),
        ({"verdict": "maybe", "rationale": "unsure"}, "has verdict 'maybe'"),
        ({"verdict": "PASS", "rationale": "shouting"}, "has verdict 'PASS'"),
        ({"verdict": "fail", "rationale": "   "}, "has an empty rationale"),
        ({"verdict": "fail", "rationale": None}, "has an empty rationale"),
    ],
)
def test_anything_but_the_asked_for_verdict_is_null_with_the_reason(server: FakeOpenAI, reply, why: str) -> None:
    server.add_rule(".", reply)
    with judge_for(server) as judge:
        j = judge.ask("The agent is polite.", EVIDENCE)
    assert j.met is None and j.value is None
    assert j.reason.startswith("no verdict: judge: HTTP 200: the judge's answer ") and why in j.reason
    assert j.tokens_in is not None  # the request was answered and spent tokens


def test_a_reply_of_another_shape_is_null(server: FakeOpenAI) -> None:
    def transport(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": []})

    with Judge("http://judge.invalid/v1", "m", KEY, transport=httpx.MockTransport(transport)) as judge:
        j = judge.ask("r", EVIDENCE)
    assert j.met is None and "has no text content" in j.reason and j.tokens_in is None


def test_a_malformed_body_is_null_not_a_verdict(server: FakeOpenAI) -> None:
    server.faults.malformed = 1
    with judge_for(server) as judge:
        j = judge.ask("r", EVIDENCE)
        again = judge.ask("r", EVIDENCE)
    assert j.met is None and "the body is not JSON" in j.reason
    assert again.met is True  # a malformed answer does not stop the judge


def test_rate_limits_are_retried_after_what_retry_after_asks(server: FakeOpenAI) -> None:
    server.faults.rate_limited, server.faults.retry_after = 2, 3
    sleeps: list[float] = []
    with judge_for(server, sleeps) as judge:
        j = judge.ask("r", EVIDENCE)
        assert judge.sent == 3
    assert j.met is True and sleeps == [3.0, 3.0]
    assert [r["status"] for r in server.requests] == [429, 429, 200]


def test_server_errors_are_retried_and_then_give_up_as_null(server: FakeOpenAI) -> None:
    server.faults.server_errors = 10
    sleeps: list[float] = []
    with judge_for(server, sleeps, retry=RetryPolicy(attempts=3)) as judge:
        j = judge.ask("r", EVIDENCE)
    assert j.met is None and j.reason == "no verdict: judge: HTTP 503: Service temporarily unavailable"
    assert len(sleeps) == 2 and len(server.requests) == 3


def test_a_bad_key_is_null_with_the_endpoints_message_and_stops_further_requests(server: FakeOpenAI) -> None:
    with Judge(server.url + "/v1", "judge-model", "sk-wrong-key-0123456789", concurrency=1, sleep=lambda s: None) as judge:
        answers = judge.ask_many([("r", f"{EVIDENCE} {i}") for i in range(5)])
        assert judge.sent == 1  # permanent: not retried, and nothing more is sent
    assert answers[0].met is None and answers[0].reason == "no verdict: judge: HTTP 401: Invalid API key"
    assert all(a.met is None and a.reason.startswith("not sent: an earlier request") for a in answers[1:])
    assert all("sk-wrong-key" not in a.reason for a in answers)


def test_with_a_bad_key_concurrent_workers_send_at_most_one_request_each(server: FakeOpenAI) -> None:
    with Judge(server.url + "/v1", "judge-model", "sk-wrong", concurrency=4, sleep=lambda s: None) as judge:
        answers = judge.ask_many([("r", f"{EVIDENCE} {i}") for i in range(50)])
        assert 1 <= judge.sent <= 4
    assert all(a.met is None for a in answers) and len(server.requests) == judge.sent


def test_a_key_echoed_by_the_endpoint_never_reaches_the_reason() -> None:
    def transport(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        return httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {key}"}})

    with Judge("http://judge.invalid/v1", "m", KEY, transport=httpx.MockTransport(transport)) as judge:
        j = judge.ask("r", EVIDENCE)
    assert j.met is None and KEY not in j.reason and "[redacted]" in j.reason


def test_no_connection_is_null_and_stops_further_requests() -> None:
    with Judge("http://127.0.0.1:9/v1", "m", KEY, concurrency=1, retry=RetryPolicy(attempts=2),
               sleep=lambda s: None) as judge:
        answers = judge.ask_many([("r", "a"), ("r", "b"), ("r", "c")])
        assert judge.sent == 2  # the first question's two attempts; the rest are not sent
    assert answers[0].reason == "no verdict: judge: no response: network error: ConnectError"
    assert all(a.met is None for a in answers)


def test_at_most_concurrency_requests_are_in_flight(server: FakeOpenAI) -> None:
    server.faults.latency = 0.01  # each request held long enough for the next ones to start meanwhile
    questions = [("r", f"{EVIDENCE} {i}") for i in range(40)]
    with judge_for(server, concurrency=4) as judge:
        answers = judge.ask_many(questions)
        assert judge.sent == 40
        assert 2 <= judge.client.peak_in_flight <= 4
    assert [a.met for a in answers] == [True] * 40
    assert [b["messages"][1]["content"].count(EVIDENCE) for b in server.bodies] == [1] * 40


def test_from_settings_reads_the_judge_settings_and_refuses_none() -> None:
    with pytest.raises(ConfigError, match="ASSAY_JUDGE_BASE_URL"):
        Judge.from_settings(Settings(judge_model="m"))
    settings = Settings(judge_base_url="http://127.0.0.1:9/v1", judge_model="m", judge_api_key=KEY,
                        judge_concurrency=3, judge_usd_per_1k_tokens_in=1.0, judge_usd_per_1k_tokens_out=2.0)
    with Judge.from_settings(settings) as judge:
        assert (judge.model, judge.concurrency, judge.prices) == ("m", 3, (1.0, 2.0))


def test_parse_verdict_accepts_exactly_the_asked_for_object() -> None:
    assert parse_verdict('{"verdict": "pass", "rationale": " Polite. "}').rationale == "Polite."
    with pytest.raises(MalformedResponseError) as info:
        parse_verdict('```json\n{"verdict": "pass", "rationale": "x"}\n```')
    assert info.value.transient is False and "is not JSON" in str(info.value)
