"""The fake VAPI: bodies checked against VAPI's OpenAPI document, its faults, its inventory, its brain and evals."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from assay.fakes.brain import FIRST_REPLY, LATER_REPLY, reply
from assay.fakes.openapi import vapi_document
from assay.fakes.vapi import CHAT_COST, FakeVapi

MODEL = {"provider": "openai", "model": "gpt-4o", "messages": [{"role": "system", "content": "Check with check_area."}],
         "tools": [{"type": "function", "function": {"name": "check_area", "parameters": {
             "type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}}}]}
ASSISTANT = {"name": "assay-test", "model": MODEL, "firstMessage": "Thanks for calling."}


def _client(vapi: FakeVapi, key: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=vapi.url, headers={"Authorization": f"Bearer {key or vapi.key}"}, timeout=30)


def _assistant(http: httpx.Client) -> str:
    answer = http.post("/assistant", json=ASSISTANT)
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


@pytest.mark.parametrize("path,body,where", [
    ("/assistant", {**ASSISTANT, "name": "x" * 41}, "body.name"),
    ("/assistant", {**ASSISTANT, "model": {"provider": "openai"}}, "body.model"),
    ("/chat", {"assistantId": "a"}, "'input' is a required property"),
    ("/eval", {"type": "chat.oops", "messages": []}, "body.type"),
    ("/eval/run", {"type": "eval", "evalId": "e"}, "'target' is a required property"),
])
def test_a_body_the_openapi_document_refuses_gets_400_saying_why(vapi: FakeVapi, path: str, body: dict, where: str) -> None:
    with _client(vapi) as http:
        answer = http.post(path, json=body)
    assert answer.status_code == 400
    error = answer.json()
    assert error["statusCode"] == 400 and error["error"] == "Bad Request"
    assert any(where in message for message in error["message"]), error["message"]
    assert vapi.live_objects() == {}


def test_the_documents_own_message_array_example_does_not_validate() -> None:
    """The caveat in the vendor notes: input as a string is fine; as {role, content} items it is refused."""
    doc = vapi_document()
    assert doc.problems("POST", "/chat", {"assistantId": "a", "input": "hello"}) == []
    assert doc.problems("POST", "/chat", {"assistantId": "a", "input": [{"role": "user", "content": "hello"}]})


def test_js_literal_patterns_and_overlapping_unions_validate_as_the_server_reads_them() -> None:
    doc = vapi_document()
    tool = {"type": "function", "function": {"name": "check_area", "parameters": {"type": "object", "properties": {}}}}
    assert doc.problems("POST", "/assistant", {"model": {**MODEL, "tools": [tool]}}) == []
    bad = {"type": "function", "function": {"name": "check area!", "parameters": {"type": "object", "properties": {}}}}
    assert doc.problems("POST", "/assistant", {"model": {**MODEL, "tools": [bad]}})
    checkpoint = {"role": "assistant", "judgePlan": {"type": "regex", "content": "/x/i"}}  # matches two oneOf branches
    assert doc.problems("POST", "/eval", {"type": "chat.mockConversation", "messages": [checkpoint]}) == []


def test_a_wrong_or_missing_key_is_401_in_vapis_shape(vapi: FakeVapi) -> None:
    with _client(vapi, key="wrong") as http:
        answer = http.post("/assistant", json=ASSISTANT)
    assert answer.status_code == 401 and answer.json()["message"] == "Invalid API key"
    assert httpx.get(vapi.url + "/assistant").status_code == 401


def test_faults_rate_limit_server_errors_and_malformed_bodies(vapi: FakeVapi) -> None:
    vapi.faults.rate_limited, vapi.faults.retry_after = 1, 2
    vapi.faults.server_errors = 1
    vapi.faults.malformed = 1
    with _client(vapi) as http:
        limited = http.get("/assistant")
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
        assert http.get("/assistant").status_code == 503
        broken = http.get("/assistant")
        assert broken.status_code == 200
        with pytest.raises(json.JSONDecodeError):
            broken.json()
        assert http.get("/assistant").json() == []


def test_the_inventory_tracks_creation_and_deletion(vapi: FakeVapi) -> None:
    with _client(vapi) as http:
        first, second = _assistant(http), _assistant(http)
        assert [a["id"] for a in http.get("/assistant").json()] == [second, first]  # a bare array, newest first
        assert http.get(f"/assistant/{first}").json()["name"] == "assay-test"
        assert http.delete(f"/assistant/{first}").status_code == 200
        assert http.delete(f"/assistant/{first}").status_code == 404
        assert http.get(f"/assistant/{first}").status_code == 404
    assert vapi.live_objects() == {"assistant": [second]}
    assert httpx.get(vapi.url + "/_fake/inventory").json() == {"assistant": [second]}


def test_a_chat_chain_follows_previous_chat_id_and_reports_tool_calls(vapi: FakeVapi) -> None:
    vapi.faults.scripts = {"replies": [{"match": r"\b606\d\d\b", "reply": "Yes, we serve that area.", "tool": "check_area",
                                        "arguments": {"zip": "60614"}, "result": {"inside": True}}]}
    with _client(vapi) as http:
        assistant = _assistant(http)
        first = http.post("/chat", json={"assistantId": assistant, "input": "Hello"}).json()
        assert first["output"][-1] == {"role": "assistant", "content": "Thanks for calling."}
        assert first["output"][0]["tool_calls"][0]["function"]["name"] == "check_area"  # the prompt names it
        assert first["cost"] == CHAT_COST and first["assistantId"] == assistant
        second = http.post("/chat", json={"assistantId": assistant, "input": "I'm at 60614", "previousChatId": first["id"]}).json()
        call, result, said = second["output"]
        [tool_call] = call["tool_calls"]
        assert tool_call["function"] == {"name": "check_area", "arguments": json.dumps({"zip": "60614"})}
        assert result == {"role": "tool", "content": json.dumps({"inside": True}), "tool_call_id": tool_call["id"]}
        assert said == {"role": "assistant", "content": "Yes, we serve that area."}
        assert second["messages"] == [*first["messages"], *first["output"], {"role": "user", "content": "I'm at 60614"}]
        missing = http.post("/chat", json={"assistantId": assistant, "input": "x", "previousChatId": "chat-nope"})
        assert missing.status_code == 404
        assert http.post("/chat", json={"assistantId": "asst-nope", "input": "x"}).status_code == 404
    assert len(vapi.objects("chat")) == 2


def test_the_brain_is_deterministic_and_documented() -> None:
    tools = [{"name": "check_area", "parameters": {"type": "object", "required": ["zip", "urgent", "kind"], "properties": {
        "zip": {"type": "string"}, "urgent": {"type": "boolean"}, "kind": {"enum": ["leak", "gas"]}}}}]
    first = reply("My zip is 60614", prompt="Use check_area first.", tools=tools)
    assert first.text == FIRST_REPLY
    assert first.tool is not None and first.tool.arguments == {"zip": "60614", "urgent": False, "kind": "leak"}
    assert reply("My zip is 60614", prompt="No tools named here.", tools=tools).tool is None
    assert reply("again", prompt="Use check_area.", tools=tools, first=False) == reply("again", first=False)
    assert reply("again", first=False).text == LATER_REPLY
    with pytest.raises(ValueError, match="unknown keys"):
        reply("x", rules=[{"match": "x", "reply": "y", "tools": "z"}])


def _eval(http: httpx.Client, plan: dict) -> str:
    body = {"type": "chat.mockConversation", "name": "e",
            "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "judgePlan": plan}]}
    answer = http.post("/eval", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def _run(http: httpx.Client, eval_id: str, assistant: str) -> str:
    answer = http.post("/eval/run", json={"type": "eval", "evalId": eval_id, "target": {"type": "assistant", "assistantId": assistant}})
    assert answer.status_code == 201 and answer.json()["status"] == "queued"
    return answer.json()["id"]


def test_eval_runs_judge_checkpoints_with_regex_and_ai_plans(vapi: FakeVapi) -> None:
    vapi.faults.scripts = {"judge": [{"match": "refers", "verdict": "fail"}]}
    ai = lambda rubric: {"type": "ai", "model": {"provider": "openai", "model": "gpt-4o",  # noqa: E731
                                                 "messages": [{"role": "system", "content": rubric}]}}
    with _client(vapi) as http:
        assistant = _assistant(http)
        plans = {"/thanks for calling/i": "pass", "/goodbye/": "fail"}
        verdicts = {}
        for content, _ in plans.items():
            run = http.get(f"/eval/run/{_run(http, _eval(http, {'type': 'regex', 'content': content}), assistant)}").json()
            assert (run["status"], run["endedReason"]) == ("ended", "mockConversation.done")
            verdicts[content] = run["results"][0]["status"]
            assert run["results"][0]["messages"][1]["content"] == "Thanks for calling."
        assert verdicts == plans
        judged = {r: http.get(f"/eval/run/{_run(http, _eval(http, ai(r)), assistant)}").json()["results"][0]["status"]
                  for r in ("is polite", "refers the caller")}
        assert judged == {"is polite": "pass", "refers the caller": "fail"}
        assert http.delete("/eval/nope").status_code == 404


def test_eval_runs_honour_never_finish_finish_after_and_errors(vapi: FakeVapi) -> None:
    with _client(vapi) as http:
        assistant = _assistant(http)
        eval_id = _eval(http, {"type": "regex", "content": "/./"})
        vapi.faults.never_finish = True
        stuck = _run(http, eval_id, assistant)
        assert http.get(f"/eval/run/{stuck}").json()["status"] == "running"
        vapi.faults.never_finish, vapi.faults.finish_after = False, 0.3
        later = _run(http, eval_id, assistant)
        assert http.get(f"/eval/run/{later}").json()["status"] == "running"
        deadline = time.monotonic() + 30
        while http.get(f"/eval/run/{later}").json()["status"] != "ended":
            assert time.monotonic() < deadline, "the eval run never ended"
            time.sleep(0.05)
        vapi.faults.finish_after, vapi.faults.scripts = None, {"eval_error": "The Assistant returned an error"}
        failed = http.get(f"/eval/run/{_run(http, eval_id, assistant)}").json()
        assert (failed["endedReason"], failed["endedMessage"], failed["results"]) == ("error", "The Assistant returned an error", [])


def _documented(answer: httpx.Response, method: str, template: str) -> dict:
    """An answer's body, after checking it against the response schema VAPI's document gives its status. A chat's
    ``messages`` (its context, which no adapter reads) is left out: the document's message items are call-transcript
    shapes that contradict its own ``{role, content}`` example (the caveat in the vendor notes)."""
    body = answer.json()
    shown = {k: v for k, v in body.items() if k != "messages"} if template == "/chat" else body
    assert vapi_document().response_problems(method, template, answer.status_code, shown) == [], (template, body)
    return body


def test_every_answer_is_in_the_shape_the_published_document_gives(vapi: FakeVapi) -> None:
    vapi.faults.scripts = {"replies": [{"match": "606", "reply": "We serve that.", "tool": "check_area",
                                        "arguments": {"zip": "60614"}, "result": {"inside": True}}]}
    with _client(vapi) as http:
        assistant = _documented(http.post("/assistant", json=ASSISTANT), "POST", "/assistant")["id"]
        _documented(http.get("/assistant"), "GET", "/assistant")
        _documented(http.get(f"/assistant/{assistant}"), "GET", "/assistant/{id}")
        chat = _documented(http.post("/chat", json={"assistantId": assistant, "input": "My ZIP is 60614"}), "POST", "/chat")
        assert [m["role"] for m in chat["output"]] == ["assistant", "tool", "assistant"]  # the tool turn was checked too
        eval_id = _documented(http.post("/eval", json={"type": "chat.mockConversation", "messages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "judgePlan": {"type": "regex", "content": "/.*/"}}]}),
            "POST", "/eval")["id"]
        _documented(http.get("/eval"), "GET", "/eval")
        run = _documented(http.post("/eval/run", json={"type": "eval", "evalId": eval_id, "target": {
            "type": "assistant", "assistantId": assistant}}), "POST", "/eval/run")
        assert _documented(http.get(f"/eval/run/{run['id']}"), "GET", "/eval/run/{id}")["status"] == "ended"
        _documented(http.delete(f"/eval/{eval_id}"), "DELETE", "/eval/{id}")
        _documented(http.delete(f"/assistant/{assistant}"), "DELETE", "/assistant/{id}")


def test_a_query_the_published_document_refuses_gets_400_saying_why(vapi: FakeVapi) -> None:
    with _client(vapi) as http:
        assert http.get("/eval", params={"limit": 5}).status_code == 200
        answer = http.get("/eval", params={"limt": 5})
    assert answer.status_code == 400 and "query.limt: not a parameter of GET /eval" in answer.json()["message"][0]
