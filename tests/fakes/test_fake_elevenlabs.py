"""The fake ElevenLabs speaks the documented protocol: auth, error shapes, strict bodies, agents, simulations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_servers import fake_elevenlabs

from assay.fakes.brain import LATER_REPLY
from assay.fakes.elevenlabs import GOODBYE, FakeElevenLabs
from assay.fakes.openapi import elevenlabs_document

AGENTS = "/v1/convai/agents"
TOOL = {"type": "client", "name": "check_service_area", "description": "Is a ZIP inside the area?",
        "parameters": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]},
        "expects_response": True}
AGENT = {"name": "assay-run-1-agent", "tags": ["assay"], "conversation_config": {"agent": {
    "first_message": "Thanks for calling {{business}}.", "language": "en",
    "prompt": {"prompt": "Answer for {{business}}; check the ZIP with check_service_area.", "llm": "gpt-4o-mini",
               "temperature": 0.0, "tools": [TOOL]}}}}


@pytest.fixture
def fake() -> Iterator[FakeElevenLabs]:
    with fake_elevenlabs() as server:
        yield server


@pytest.fixture
def http(fake: FakeElevenLabs) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.url, headers={"xi-api-key": fake.key}, timeout=30) as client:
        yield client


def _agent(http: httpx.Client, body: dict[str, Any] = AGENT) -> str:
    answer = http.post(f"{AGENTS}/create", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()["agent_id"]


def _simulate(http: httpx.Client, agent_id: str, prompt: str = "", **extra: Any) -> httpx.Response:
    spec = {"simulated_user_config": {"prompt": {"prompt": prompt}}, "dynamic_variables": {"business": "Acme"},
            **extra.pop("spec", {})}
    return http.post(f"{AGENTS}/{agent_id}/simulate-conversation", json={"simulation_specification": spec, **extra})


def test_a_wrong_key_is_401_in_elevenlabs_shape(fake: FakeElevenLabs) -> None:
    for headers in ({"xi-api-key": "nope"}, {"Authorization": f"Bearer {fake.key}"}):
        answer = httpx.get(f"{fake.url}{AGENTS}", headers=headers)
        assert answer.status_code == 401
        detail = answer.json()["detail"]
        assert detail["code"] == "invalid_api_key" and detail["type"] == "authentication_error"
        assert set(detail) == {"type", "code", "message", "request_id"}


def test_agents_create_get_patch_list_delete(fake: FakeElevenLabs, http: httpx.Client) -> None:
    first = _agent(http)
    second = _agent(http, {**AGENT, "name": "someone else"})
    assert http.get(f"{AGENTS}/{first}").json()["conversation_config"]["agent"]["prompt"]["tools"][0]["name"] == "check_service_area"
    patched = http.patch(f"{AGENTS}/{first}", json={"conversation_config": {"agent": {"first_message": "Hi."}}}).json()
    assert patched["conversation_config"]["agent"]["first_message"] == "Hi."
    assert patched["conversation_config"]["agent"]["prompt"]["llm"] == "gpt-4o-mini"  # a patch merges
    page = http.get(AGENTS, params={"page_size": 1}).json()
    assert [a["agent_id"] for a in page["agents"]] == [second] and page["has_more"] is True  # newest first
    rest = http.get(AGENTS, params={"page_size": 1, "cursor": page["next_cursor"]}).json()
    assert [a["agent_id"] for a in rest["agents"]] == [first] and rest["has_more"] is False and rest["next_cursor"] is None
    assert [a["agent_id"] for a in http.get(AGENTS, params={"search": "ASSAY-RUN"}).json()["agents"]] == [first]
    assert http.get(AGENTS, params={"page_size": 0}).status_code == 422
    assert fake.live_objects() == {"agent": sorted([first, second])}
    assert http.delete(f"{AGENTS}/{first}").status_code == 200
    gone = http.delete(f"{AGENTS}/{first}")
    assert gone.status_code == 404 and gone.json()["detail"]["code"] == "not_found"
    assert fake.live_objects() == {"agent": [second]}


@pytest.mark.parametrize("body,loc", [
    ({"name": "no config"}, ["body", "conversation_config"]),
    ({"conversation_config": {"agent": {"prompt": {"prompt": "x", "tools": [{**TOOL, "name": "check area"}]}}}},
     ["body", "conversation_config", "agent", "prompt", "tools", 0, "name"]),  # inside the branch its type names
    ({"conversation_config": {"agent": {"prompt": {"prompt": 5}}}}, ["body", "conversation_config", "agent", "prompt", "prompt"]),
    ({"conversation_config": {"agent": {"prompt": {"llm": "gpt-0"}}}}, ["body", "conversation_config", "agent", "prompt", "llm"]),
])
def test_a_body_the_published_document_refuses_is_422(http: httpx.Client, body: dict[str, Any], loc: list[Any]) -> None:
    answer = http.post(f"{AGENTS}/create", json=body)
    assert answer.status_code == 422
    problem = answer.json()["detail"][0]
    assert problem["loc"] == loc and problem["msg"] and problem["type"]


def test_a_simulation_body_without_its_simulated_user_is_422(http: httpx.Client) -> None:
    agent_id = _agent(http)
    answer = http.post(f"{AGENTS}/{agent_id}/simulate-conversation", json={"simulation_specification": {"simulated_user": {}}})
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"] == ["body", "simulation_specification", "simulated_user_config"]


@pytest.mark.parametrize("query,loc", [({"page_size": "101"}, ["query", "page_size"]), ({"pagesize": "5"}, ["query", "pagesize"])])
def test_a_query_the_published_document_refuses_is_422(http: httpx.Client, query: dict[str, str], loc: list[str]) -> None:
    answer = http.get(AGENTS, params=query)
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == loc


@pytest.mark.parametrize("code", [None, "rate_limit_exceeded"])
def test_rate_limits_answer_429_with_retry_after_and_a_documented_code(fake: FakeElevenLabs, http: httpx.Client,
                                                                     code: str | None) -> None:
    fake.faults.rate_limited, fake.faults.retry_after = 1, 2
    if code:
        fake.faults.scripts["rate_limit_code"] = code
    answer = http.get(AGENTS)
    assert answer.status_code == 429 and answer.headers["retry-after"] == "2"
    assert answer.json()["detail"]["code"] == (code or "concurrent_limit_exceeded")
    assert http.get(AGENTS).status_code == 200  # one fault, consumed


def test_a_scripted_simulation_with_a_tool_call_paired_by_request_id(http: httpx.Client) -> None:
    agent_id = _agent(http)
    prompt = 'You are Dana.\nSay exactly these lines:\n1. "My ZIP is 60827."\n2. "Is that \\"outside\\"?"'
    mock = {"check_service_area": {"default_return_value": '{"served": false}', "default_is_error": False}}
    answer = _simulate(http, agent_id, prompt, spec={"tool_mock_config": mock}).json()
    turns = answer["simulated_conversation"]
    said = [(t["role"], t["message"]) for t in turns if t["message"]]
    assert said == [("agent", "Thanks for calling Acme."), ("user", "My ZIP is 60827."),
                    ("agent", "Hello, how can I help?"), ("user", 'Is that "outside"?'), ("agent", LATER_REPLY)]
    [call] = [c for t in turns for c in t["tool_calls"]]
    [result] = [r for t in turns for r in t["tool_results"]]
    assert call["tool_name"] == result["tool_name"] == "check_service_area"
    assert call["request_id"] == result["request_id"] and json.loads(call["params_as_json"]) == {"zip": "60827"}
    assert result["result_value"] == '{"served": false}' and result["is_error"] is False
    times = [t["time_in_call_secs"] for t in turns]
    assert times == sorted(times) and len(set(times)) == len(times) and all(isinstance(x, int) for x in times)
    again = _simulate(http, agent_id, prompt, spec={"tool_mock_config": mock}).json()
    assert _without_ids(again) == _without_ids(answer) and again["analysis"] == answer["analysis"]  # deterministic


def _without_ids(answer: dict[str, Any]) -> str:
    """The conversation with its (fresh per request) tool request ids blanked."""
    text = json.dumps(answer["simulated_conversation"])
    for turn in answer["simulated_conversation"]:
        for item in turn["tool_calls"] + turn["tool_results"]:
            text = text.replace(item["request_id"], "ID")
    return text


def test_an_unscripted_user_says_what_it_wants_then_goodbye(http: httpx.Client) -> None:
    agent_id = _agent(http)
    prompt = "Who you are: Dana, a homeowner\nWhat you want from this call: A same-day repair\nBe brief."
    turns = _simulate(http, agent_id, prompt).json()["simulated_conversation"]
    assert [t["message"] for t in turns if t["role"] == "user"] == [
        "Hi, I'm calling about this: A same-day repair", GOODBYE]


def test_new_turns_limit_caps_the_conversation(http: httpx.Client) -> None:
    agent_id = _agent(http)
    answer = _simulate(http, agent_id, '1. "one"\n2. "two"\n3. "three"', new_turns_limit=3).json()
    assert [(t["role"], t["message"]) for t in answer["simulated_conversation"]] == [
        ("agent", "Thanks for calling Acme."), ("user", "one"), ("agent", None)]


def test_a_partial_history_is_kept_and_its_user_lines_are_not_repeated(http: httpx.Client) -> None:
    agent_id = _agent(http)
    history = [{"role": "agent", "message": "Hello.", "time_in_call_secs": 0},
               {"role": "user", "message": "one", "time_in_call_secs": 2}]
    turns = _simulate(http, agent_id, '1. "one"\n2. "two"', spec={"partial_conversation_history": history}).json()["simulated_conversation"]
    assert [(t["role"], t["message"]) for t in turns if t["message"]][:3] == [("agent", "Hello."), ("user", "one"), ("user", "two")]
    assert turns[2]["time_in_call_secs"] == 3


def test_missing_dynamic_variables_are_refused(http: httpx.Client) -> None:
    agent_id = _agent(http)
    answer = http.post(f"{AGENTS}/{agent_id}/simulate-conversation",
                       json={"simulation_specification": {"simulated_user_config": {}}})
    assert answer.status_code == 400 and "business" in answer.json()["detail"]["message"]


def test_criteria_results_are_steerable_and_call_successful_follows(fake: FakeElevenLabs, http: httpx.Client) -> None:
    agent_id = _agent(http)
    criteria = [{"id": "goal", "name": "Goal", "type": "prompt", "conversation_goal_prompt": "Books a visit"},
                {"id": "told", "name": "Told", "type": "prompt", "conversation_goal_prompt": "Says outside",
                 "scoring_mode": "numeric_uniform", "max_score": 5},
                {"id": "tone", "name": "Tone", "type": "prompt", "conversation_goal_prompt": "Calm"}]
    default = _simulate(http, agent_id, extra_evaluation_criteria=criteria).json()["analysis"]
    assert default["call_successful"] == "success"
    assert {k: v["result"] for k, v in default["evaluation_criteria_results"].items()} == dict.fromkeys(criteria_ids := ["goal", "told", "tone"], "success")
    assert "Books a visit" in default["evaluation_criteria_results"]["goal"]["rationale"]
    told = default["evaluation_criteria_results"]["told"]
    assert (told["score"], told["max_score"]) == (5, 5) and "score" not in default["evaluation_criteria_results"]["goal"]
    fake.faults.scripts["criteria"] = {"goal": "failure", "tone": "unknown",
                                       "told": {"result": "success", "score": 3, "rationale": "Mostly."}}
    steered = _simulate(http, agent_id, extra_evaluation_criteria=criteria).json()["analysis"]
    results = steered["evaluation_criteria_results"]
    assert [results[i]["result"] for i in criteria_ids] == ["failure", "success", "unknown"]
    assert (results["told"]["score"], results["told"]["rationale"]) == (3, "Mostly.")
    assert steered["call_successful"] == "failure"
    fake.faults.scripts["call_successful"] = "unknown"
    assert _simulate(http, agent_id, extra_evaluation_criteria=criteria).json()["analysis"]["call_successful"] == "unknown"


def test_an_unknown_agent_and_a_malformed_answer(fake: FakeElevenLabs, http: httpx.Client) -> None:
    assert _simulate(http, "agent_missing").status_code == 404
    fake.faults.malformed = 1
    answer = http.post(f"{AGENTS}/create", json=AGENT)
    assert answer.status_code == 200
    with pytest.raises(ValueError):
        answer.json()


def _checked(answer: httpx.Response, method: str, template: str) -> Any:
    """An answer's body, after checking it against the response schema ElevenLabs' document gives its status."""
    body = answer.json() if answer.content else None
    assert elevenlabs_document().response_problems(method, template, answer.status_code, body) == [], (template, body)
    return body


def test_every_answer_is_in_the_shape_the_published_document_gives(http: httpx.Client) -> None:
    agent_id = _checked(http.post(f"{AGENTS}/create", json=AGENT), "POST", f"{AGENTS}/create")["agent_id"]
    _checked(http.get(AGENTS, params={"page_size": 1, "search": "assay"}), "GET", AGENTS)
    _checked(http.get(f"{AGENTS}/{agent_id}"), "GET", AGENTS + "/{agent_id}")
    _checked(http.patch(f"{AGENTS}/{agent_id}", json={"name": "renamed"}), "PATCH", AGENTS + "/{agent_id}")
    mock = {"check_service_area": {"default_return_value": '{"served": false}', "default_is_error": False}}
    criteria = [{"id": "goal", "name": "Goal", "type": "prompt", "conversation_goal_prompt": "Books a visit"}]
    simulated = _simulate(http, agent_id, '1. "My ZIP is 60827."', spec={"tool_mock_config": mock},
                          extra_evaluation_criteria=criteria)
    answer = _checked(simulated, "POST", AGENTS + "/{agent_id}/simulate-conversation")
    assert any(t["tool_results"] for t in answer["simulated_conversation"])  # the tool turns were checked too
    refused = http.post(f"{AGENTS}/create", json={"name": "no config"})
    assert refused.status_code == 422 and _checked(refused, "POST", f"{AGENTS}/create")["detail"]


def test_wild_modes_stray_from_the_document_as_they_say(fake: FakeElevenLabs, http: httpx.Client) -> None:
    agent_id = _agent(http)
    template = AGENTS + "/{agent_id}/simulate-conversation"
    sim = f"POST {AGENTS}/*/simulate-conversation"
    plain = _simulate(http, agent_id, '1. "Hello"').json()
    fake.faults.wild = {"extra_keys": sim}
    extra = _simulate(http, agent_id, '1. "Hello"').json()
    assert extra["x_undocumented"] and extra["analysis"]["x_undocumented"]
    assert all(t["x_undocumented"] for t in extra["simulated_conversation"])
    fake.faults.wild = {"drop_optional": sim}
    dropped = _simulate(http, agent_id, '1. "Hello"').json()
    assert elevenlabs_document().response_problems("POST", template, 200, dropped) == []  # still documented
    assert all(set(t) == {"role", "time_in_call_secs"} for t in dropped["simulated_conversation"])
    fake.faults.wild = {"null_optional": sim}
    nulled = _simulate(http, agent_id, '1. "Hello"').json()
    assert [t["message"] for t in nulled["simulated_conversation"]] == [None] * len(plain["simulated_conversation"])
    fake.faults.wild = {"unknown_enum": sim}
    unlisted = _simulate(http, agent_id, '1. "Hello"').json()
    assert {t["role"] for t in unlisted["simulated_conversation"]} == {"unlisted_value"}
    assert unlisted["analysis"]["call_successful"] == "unlisted_value"
    fake.faults.wild = {"error_200": sim}
    error = _simulate(http, agent_id, '1. "Hello"')
    assert error.status_code == 200 and error.json()["detail"]["message"]
    assert http.post(f"{AGENTS}/create", json=AGENT).status_code == 200  # other answers stay as they were
    fake.faults.wild = {"sideways": "*"}
    misconfigured = http.get(AGENTS)
    assert misconfigured.status_code == 500 and "unknown wild modes ['sideways']" in misconfigured.json()["detail"]["message"]
