"""The fake OpenAI-compatible chat server: the documented shapes, rules, defaults, faults and errors."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_servers import OPENAI_KEY, fake_openai

from assay.fakes.openai import DEFAULT_LINE, DEFAULT_VERDICT, FakeOpenAI, tokens


@pytest.fixture
def server():
    with fake_openai() as fake:
        yield fake


def post(server: FakeOpenAI, body: object, key: str = OPENAI_KEY) -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                      timeout=30)


def chat(content: str, **extra: object) -> dict:
    return {"model": "m1", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": content}],
            "temperature": 0, **extra}


def test_a_completion_has_openais_shape_and_deterministic_token_counts(server: FakeOpenAI) -> None:
    r = post(server, chat("where is my order"))
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "m1" and body["id"].startswith("chatcmpl-")
    (choice,) = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"] == {"role": "assistant", "content": DEFAULT_LINE}
    prompt = tokens("be brief\nwhere is my order")
    assert body["usage"] == {"prompt_tokens": prompt, "completion_tokens": tokens(DEFAULT_LINE),
                             "total_tokens": prompt + tokens(DEFAULT_LINE)}
    assert tokens("one two three") == 4  # ceil(3 / 0.75)
    assert server.bodies[-1]["messages"][1]["content"] == "where is my order"


def test_json_mode_answers_a_valid_judge_verdict_by_default(server: FakeOpenAI) -> None:
    r = post(server, chat("judge this", response_format={"type": "json_object"}))
    assert json.loads(r.json()["choices"][0]["message"]["content"]) == DEFAULT_VERDICT


def test_the_first_matching_rule_wins_and_json_replies_are_sent_as_text(server: FakeOpenAI) -> None:
    server.add_rule(r"refund", {"verdict": "fail", "rationale": "No refund offered."})
    server.add_rule(r"refund|order", "second rule")
    server.add_rule(r"(?i)SYSTEM.*brief", "never: the regex runs over the joined contents, not the roles")
    fmt = {"response_format": {"type": "json_object"}}
    assert json.loads(post(server, chat("a refund please", **fmt)).json()["choices"][0]["message"]["content"]) == {
        "verdict": "fail", "rationale": "No refund offered."}
    assert post(server, chat("my order")).json()["choices"][0]["message"]["content"] == "second rule"
    assert post(server, chat("hello")).json()["choices"][0]["message"]["content"] == DEFAULT_LINE


def test_rules_can_be_set_over_the_control_api(server: FakeOpenAI) -> None:
    rules = [{"match": "hello", "reply": "hi from the control api"}]
    assert httpx.post(server.url + "/_fake/faults", json={"scripts": {"rules": rules}}).status_code == 200
    assert post(server, chat("hello")).json()["choices"][0]["message"]["content"] == "hi from the control api"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": [{"role": "user", "content": "x"}]}, "you must provide a model parameter"),
        ({"model": "m1", "messages": []}, "'messages' must be a non-empty array"),
        ({"model": "m1", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role must be one of"),
        ({"model": "m1", "messages": [{"role": "user", "content": 3}]}, "messages[0].content must be a string"),
    ],
)
def test_a_bad_request_gets_openais_error_shape(server: FakeOpenAI, body: dict, message: str) -> None:
    r = post(server, body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith(message)


def test_a_wrong_key_is_401_in_openais_shape(server: FakeOpenAI) -> None:
    r = post(server, chat("x"), key="sk-wrong")
    assert r.status_code == 401
    assert r.json() == {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}


def test_faults_rate_limit_then_server_errors_then_malformed(server: FakeOpenAI) -> None:
    server.faults.rate_limited, server.faults.retry_after = 1, 2
    server.faults.server_errors, server.faults.malformed = 1, 1
    limited = post(server, chat("x"))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"
    assert post(server, chat("x")).status_code == 503
    broken = post(server, chat("x"))
    assert broken.status_code == 200
    with pytest.raises(ValueError):
        broken.json()
    assert post(server, chat("x")).status_code == 200
    assert [r["status"] for r in server.requests] == [429, 503, 200, 200]
    assert server.completions() == 2
