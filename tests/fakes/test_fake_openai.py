"""The fake OpenAI-compatible chat server: requests checked against OpenAI's published document, the
documented answers, rules, defaults, wild modes, faults and errors."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_servers import OPENAI_KEY, fake_openai

from assay.fakes.openai import DEFAULT_LINE, DEFAULT_VERDICT, ANSWER_MODES, FakeOpenAI, openai_document, tokens


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
    assert choice["message"] == {"role": "assistant", "content": DEFAULT_LINE, "refusal": None}
    assert documented(r) == []
    prompt = tokens("be brief\nwhere is my order")
    assert body["usage"] == {"prompt_tokens": prompt, "completion_tokens": tokens(DEFAULT_LINE),
                             "total_tokens": prompt + tokens(DEFAULT_LINE)}
    assert tokens("one two three") == 4  # ceil(3 / 0.75)
    assert server.bodies[-1]["messages"][1]["content"] == "where is my order"


def documented(r: httpx.Response) -> list[str]:
    """What OpenAI's document finds wrong with an answer of the chat completions operation."""
    return openai_document().response_problems("POST", "/chat/completions", r.status_code, r.json())


SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": {
    "type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"],
    "additionalProperties": False}}}


@pytest.mark.parametrize("extra", [{"response_format": {"type": "json_object"}}, {"response_format": SCHEMA_FORMAT}, {}],
                         ids=["json_object", "json_schema", "asked-in-the-prompt"])
def test_a_request_for_json_answers_a_valid_judge_verdict_by_default(server: FakeOpenAI, extra: dict) -> None:
    r = post(server, chat("judge this; answer with a JSON object", **extra))
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


USER = [{"role": "user", "content": "x"}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": USER}, "body: 'model' is a required property"),
        ({"model": "m1", "messages": []}, "body.messages: [] should be non-empty"),
        ({"model": "m1", "messages": [{"role": "robot", "content": "x"}]}, "body.messages[0]: "),
        ({"model": "m1", "messages": [{"role": "user", "content": 3}]}, "body.messages[0].content: 3 is not of type"),
        ({"model": "m1", "messages": USER, "temperature": "hot"}, "body.temperature: 'hot' is not of type 'number'"),
        ({"model": "m1", "messages": USER, "response_format": {"type": "xml"}}, "body.response_format: "),
        ({"model": "m1", "messages": USER, "response_format": {"type": "json_schema"}},
         "body.response_format: 'json_schema' is a required property"),
    ],
    ids=["no-model", "no-messages", "bad-role", "bad-content", "bad-temperature", "bad-format", "schema-missing"],
)
def test_a_request_openais_document_refuses_gets_400_in_openais_error_shape(server: FakeOpenAI, body: dict,
                                                                              message: str) -> None:
    r = post(server, body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith(message)
    assert set(error) == {"message", "type", "param", "code"}


WILD_ANSWERS = {
    "fenced": lambda m, c: c["finish_reason"] == "stop" and m["content"].startswith("```json\n{"),
    "prose": lambda m, c: m["content"].startswith("Here is my assessment") and '"verdict": "pass"' in m["content"],
    "renamed": lambda m, c: json.loads(m["content"]) == {"Result": "PASS", "Reasoning": DEFAULT_VERDICT["rationale"],
                                                         "confidence": 0.9},
    "reasoning": lambda m, c: json.loads(m["content"]) == DEFAULT_VERDICT and '"fail"' in m["reasoning_content"],
    "refusal": lambda m, c: m["content"] is None and m["refusal"].startswith("I'm sorry"),
    "empty": lambda m, c: m["content"] == "",
    "length": lambda m, c: c["finish_reason"] == "length" and json.dumps(DEFAULT_VERDICT).startswith(m["content"]),
}


@pytest.mark.parametrize("mode", [*ANSWER_MODES, "error_200"])
def test_each_answer_mode_answers_as_real_servers_do(server: FakeOpenAI, mode: str) -> None:
    if mode == "error_200":  # the wild mode every fake has
        server.faults.wild = {"error_200": "POST /v1/chat/completions"}
    else:
        server.answer_mode(mode)
    schema = post(server, chat("judge this", response_format=SCHEMA_FORMAT))
    json_mode = post(server, chat("judge this", response_format={"type": "json_object"}))
    if mode in ("no_json_schema", "no_json"):
        assert schema.status_code == 400 and schema.json()["error"]["param"] == "response_format"
        assert "'response_format' of type 'json_schema' is not supported" in schema.json()["error"]["message"]
        assert json_mode.status_code == (400 if mode == "no_json" else 200)
        assert post(server, chat("judge this; answer with a JSON object")).status_code == 200
    elif mode == "error_200":
        assert schema.status_code == 200 and set(schema.json()) == {"error"}
        assert documented(schema)  # not a completion: the document's answer requires choices, id, ...
    else:
        (choice,) = schema.json()["choices"]
        assert WILD_ANSWERS[mode](choice["message"], choice), choice
        assert documented(schema) == []


def test_the_stored_document_is_openais_chat_completions_operation_and_all_it_references() -> None:
    doc = openai_document()
    assert doc.version.startswith("3.1") and list(doc.document["paths"]) == ["/chat/completions"]
    assert list(doc.document["paths"]["/chat/completions"]) == ["post"]
    refs: set[str] = set()

    def collect(node: object) -> None:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            refs.add(node["$ref"])
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else []:
            collect(child)

    collect(doc.document)
    components = {f"#/components/{kind}/{name}" for kind, named in doc.document["components"].items() for name in named}
    assert refs == components  # every reference resolves inside the cut, and nothing unreferenced is kept


def test_an_unknown_answer_mode_is_refused_with_the_known_ones(server: FakeOpenAI) -> None:
    with pytest.raises(ValueError, match="unknown answer mode 'chaos'; known: fenced, prose"):
        server.answer_mode("chaos")


def test_a_wrong_key_is_401_in_openais_shape(server: FakeOpenAI) -> None:
    r = post(server, chat("x"), key="sk-wrong")
    assert r.status_code == 401
    assert r.json() == {"error": {"message": "Invalid API key", "type": "invalid_request_error", "param": None,
                                  "code": "invalid_api_key"}}


def test_faults_rate_limit_then_server_errors_then_malformed(server: FakeOpenAI) -> None:
    server.faults.rate_limited, server.faults.retry_after = 1, 2
    server.faults.server_errors, server.faults.malformed = 1, 1
    limited = post(server, chat("x"))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["code"] == "rate_limit_exceeded" and documented(limited) == []
    assert post(server, chat("x")).status_code == 503
    broken = post(server, chat("x"))
    assert broken.status_code == 200
    with pytest.raises(ValueError):
        broken.json()
    assert post(server, chat("x")).status_code == 200
    assert [r["status"] for r in server.requests] == [429, 503, 200, 200]
    assert server.completions() == 2
