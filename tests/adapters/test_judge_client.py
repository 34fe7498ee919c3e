"""Our judge's client against the fake OpenAI-compatible server: verdicts, the reading rule, response formats
and the fall-back when a server refuses one, wild servers, errors as null, retries, the bound."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from assay.adapters.http import RetryPolicy
from assay.adapters.judges import PROMPT_VERSION, Judge
from assay.adapters.judges.prompt import SYSTEM, VERDICT_SCHEMA, parse_verdict
from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.settings import Settings
from assay.fakes.openai import ANSWER_MODES, REFUSAL, FakeOpenAI, tokens

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
    assert (j.met, j.value, j.unparsed) == (False, 0.0, False)
    assert j.reason == "The agent never offered the refund. [response_format: json_schema]"
    body = server.bodies[-1]
    assert body["model"] == "judge-model" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "rubric_verdict", "strict": True, "schema": VERDICT_SCHEMA}}
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
        ("Yes, it passes.", "holds no JSON object ('Yes, it passes.')"),
        ('["pass"]', "holds no JSON object"),
        ({"verdict": "pass"}, "has no rationale"),
        ({"verdict": "maybe", "rationale": "unsure"}, "has verdict 'maybe'"),
        ({"verdict": "yes", "rationale": "It holds."}, "has verdict 'yes'"),
        ({"verdict": True, "rationale": "It holds."}, "has verdict True"),
        ({"verdict": "fail", "rationale": "   "}, "has no rationale"),
        ({"verdict": "fail", "rationale": None}, "has no rationale"),
        ({"score": 5, "rationale": "fine"}, "names no verdict (keys 'score', 'rationale')"),
        ({"verdict": "pass", "Result": "fail", "rationale": "x"}, "names a verdict twice (verdict, result)"),
        ('Draft: {"verdict": "fail", "rationale": "a"} Final: {"verdict": "pass", "rationale": "b"}',
         "holds 2 JSON objects, not one"),
    ],
)
def test_anything_but_a_readable_verdict_is_null_with_the_reason(server: FakeOpenAI, reply, why: str) -> None:
    server.add_rule(".", reply)
    with judge_for(server) as judge:
        j = judge.ask("The agent is polite.", EVIDENCE)
    assert j.met is None and j.value is None and j.unparsed is True
    assert j.reason.startswith("no verdict: judge: HTTP 200: the judge's answer ") and why in j.reason
    assert j.reason.endswith("[response_format: json_schema]")
    assert j.tokens_in is not None  # the request was answered and spent tokens


@pytest.mark.parametrize(
    ("content", "met", "rationale"),
    [
        ('{"verdict": "pass", "rationale": " Polite. "}', True, "Polite."),
        ('{"verdict": "pass", "rationale": "Kind.", "met": true}', True, "Kind."),
        ('```json\n{"verdict": "fail", "rationale": "Rude."}\n```', False, "Rude."),
        ('Sure. Here it is:\n{"verdict": "pass", "rationale": "Kind."}\nAnything else?', True, "Kind."),
        ('{"Verdict ": " PASS. ", "REASON": "Kind.", "confidence": 0.8}', True, "Kind."),
        ('{"decision": "Failed", "explanation": "No refund.", "score": 0}', False, "No refund."),
        ('<think>Maybe {"verdict": "pass"}?</think>{"verdict": "fail", "rationale": "Rude."}', False, "Rude."),
        ([{"type": "text", "text": '{"result": "pass", '}, {"type": "text", "text": '"reason": "Kind."}'}], True, "Kind."),
    ],
    ids=["exact", "extra-key", "fenced", "prose", "keys-any-case-extra-keys", "synonyms", "think-block", "content-parts"],
)
def test_the_reading_rule_accepts_the_shapes_models_give(content: Any, met: bool, rationale: str) -> None:
    verdict = parse_verdict(content)
    assert (verdict.met, verdict.rationale) == (met, rationale)


def test_an_unreadable_answer_is_quoted_shortened_on_one_line() -> None:
    long = "I think\n the agent " + "was very polite " * 40 + "so it passes."
    with pytest.raises(MalformedResponseError) as info:
        parse_verdict(long)
    message = str(info.value)
    assert info.value.transient is False and "holds no JSON object ('I think the agent was very polite" in message
    assert "...')" in message and "so it passes" not in message and "\n" not in message


def test_a_reply_of_another_shape_is_an_error_not_an_unreadable_answer(server: FakeOpenAI) -> None:
    def transport(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": []})

    with Judge("http://judge.invalid/v1", "m", KEY, transport=httpx.MockTransport(transport)) as judge:
        j = judge.ask("r", EVIDENCE)
    assert j.met is None and "is not a chat completion" in j.reason and j.tokens_in is None
    assert j.unparsed is False


VERDICT_TEXT = '{"verdict": "pass", "rationale": "Kind."}'


@pytest.mark.parametrize(
    ("message", "finish", "said"),
    [
        ({"content": None, "reasoning_content": "I would say pass."}, "stop",
         "has empty content; only its reasoning had text, which is not read for a verdict ('I would say pass.')"),
        ({"content": "", "reasoning": VERDICT_TEXT}, "stop", "has empty content; only its reasoning had text"),
        ({"content": VERDICT_TEXT[:20]}, "content_filter", "cut off by the endpoint's content filter"),
        ({"content": [{"type": "text", "text": VERDICT_TEXT}]}, "stop", None),
        ({"content": VERDICT_TEXT, "reasoning_content": '{"verdict": "fail", "rationale": "no"}'}, "stop", None),
    ],
    ids=["reasoning-content-only", "reasoning-only", "content-filter", "content-parts", "reasoning-beside"],
)
def test_what_the_message_holds_beside_its_content_never_decides(message: dict, finish: str, said: str | None) -> None:
    def transport(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"index": 0, "finish_reason": finish,
                                                      "message": {"role": "assistant", **message}}]})

    with Judge("http://judge.invalid/v1", "m", KEY, transport=httpx.MockTransport(transport)) as judge:
        j = judge.ask("r", EVIDENCE)
    if said is None:
        assert j.met is True and j.reason.startswith("Kind.")
    else:
        assert j.met is None and j.unparsed is True and said in j.reason


WILD = {
    "fenced": (True, False, "json_schema", "The agent did what the rubric asks."),
    "prose": (True, False, "json_schema", "The agent did what the rubric asks."),
    "renamed": (True, False, "json_schema", "The agent did what the rubric asks."),
    "reasoning": (True, False, "json_schema", "The agent did what the rubric asks."),
    "refusal": (None, True, "json_schema", f"the judge refused to answer: {REFUSAL!r}"),
    "empty": (None, True, "json_schema", "the judge's answer has empty content"),
    "length": (None, True, "json_schema", "cut off by its token limit (finish_reason: length) ('{\"verdict\""),
    "error_200": (None, False, "json_schema", "the endpoint answered an error: An internal error occurred"),
    "no_json_schema": (True, False, "json_object", "The agent did what the rubric asks."),
    "no_json": (True, False, "text", "The agent did what the rubric asks."),
}


@pytest.mark.parametrize("mode", [*ANSWER_MODES, "error_200"])
def test_the_judge_against_each_wild_server(server: FakeOpenAI, mode: str) -> None:
    met, unparsed, response_format, said = WILD[mode]
    if mode == "error_200":  # a 200 whose body is an error object: the wild mode every fake has
        server.faults.wild = {"error_200": "*"}
    else:
        server.answer_mode(mode)
    with judge_for(server) as judge:
        j = judge.ask("The agent is polite.", EVIDENCE)
    assert (j.met, j.unparsed, j.response_format) == (met, unparsed, response_format)
    assert said in j.reason and j.reason.endswith(f"[response_format: {response_format}]")
    if met is None:
        assert j.reason.startswith("no verdict: judge: HTTP 200: ")


def test_a_refused_format_is_remembered_for_the_judges_later_questions(server: FakeOpenAI) -> None:
    server.answer_mode("no_json_schema")
    with judge_for(server, concurrency=1) as judge:
        answers = judge.ask_many([("r", f"{EVIDENCE} {i}") for i in range(3)])
        assert judge.sent == 4 and judge.response_format == "json_object"  # refused once, then asked in JSON mode
    assert [b.get("response_format", {}).get("type") for b in server.bodies] == [
        "json_schema", "json_object", "json_object", "json_object"]
    assert [a.met for a in answers] == [True] * 3
    server.answer_mode("no_json")
    with judge_for(server) as other:  # a new judge (a new pass) asks its best first again
        assert other.response_format == "json_schema" and other.ask("r", EVIDENCE).met is True
        assert other.sent == 3 and other.response_format == "text"


@pytest.mark.parametrize(
    ("status", "error", "falls_back"),
    [
        (422, {"detail": [{"loc": ["body", "response_format", "type"], "msg": "Input should be 'text'"}]}, True),
        (400, {"error": "'response_format.type' must be 'json_schema' or 'text'"}, True),
        (400, {"error": {"message": "This model's maximum context length is 8192 tokens."}}, False),
        (404, {"error": {"message": "The model 'm' does not exist (response_format ignored)"}}, False),
    ],
    ids=["fastapi-422", "lm-studio", "another-400", "not-a-refusal-status"],
)
def test_only_a_refusal_naming_the_format_falls_back(status: int, error: dict, falls_back: bool) -> None:
    sent: list[dict] = []

    def transport(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        if "response_format" in sent[-1] or not falls_back:
            return httpx.Response(status, json=error)
        return httpx.Response(200, json={"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": '{"verdict": "fail", "rationale": "No."}'}}]})

    with Judge("http://judge.invalid/v1", "m", KEY, transport=httpx.MockTransport(transport),
               sleep=lambda s: None) as judge:
        j = judge.ask("r", EVIDENCE)
    if falls_back:
        assert j.met is False and j.response_format == "text" and len(sent) == 3
    else:
        assert j.met is None and not j.unparsed and len(sent) == 1 and f"HTTP {status}" in j.reason


def test_a_malformed_body_is_null_not_a_verdict(server: FakeOpenAI) -> None:
    server.faults.malformed = 1
    with judge_for(server) as judge:
        j = judge.ask("r", EVIDENCE)
        again = judge.ask("r", EVIDENCE)
    assert j.met is None and "the body is not JSON" in j.reason and j.unparsed is False
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
    assert j.met is None and j.reason == ("no verdict: judge: HTTP 503: Service temporarily unavailable "
                                          "[response_format: json_schema]")
    assert len(sleeps) == 2 and len(server.requests) == 3


def test_a_bad_key_is_null_with_the_endpoints_message_and_stops_further_requests(server: FakeOpenAI) -> None:
    with Judge(server.url + "/v1", "judge-model", "sk-wrong-key-0123456789", concurrency=1, sleep=lambda s: None) as judge:
        answers = judge.ask_many([("r", f"{EVIDENCE} {i}") for i in range(5)])
        assert judge.sent == 1  # permanent: not retried, and nothing more is sent
    assert answers[0].met is None
    assert answers[0].reason == "no verdict: judge: HTTP 401: Invalid API key [response_format: json_schema]"
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
    assert answers[0].reason.startswith("no verdict: judge: no response: ") and "ConnectError" in answers[0].reason
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
