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
    ({**AGENT, "model": "gpt"}, ["body", "model"]),
    ({"conversation_config": {"agent": {"prompt": {"prompt": "x", "tools": [{**TOOL, "type": "function"}]}}}},
     ["body", "conversation_config", "agent", "prompt", "tools", 0, "type"]),
    ({"conversation_config": {"agent": {"prompt": {"prompt": 5}}}}, ["body", "conversation_config", "agent", "prompt", "prompt"]),
])
def test_a_body_off_the_documented_shape_is_422(http: httpx.Client, body: dict[str, Any], loc: list[Any]) -> None:
    answer = http.post(f"{AGENTS}/create", json=body)
    assert answer.status_code == 422
    [problem] = answer.json()["detail"]
    assert problem["loc"] == loc and problem["msg"] and problem["type"]


def test_a_simulation_body_with_an_unknown_field_is_422(http: httpx.Client) -> None:
    agent_id = _agent(http)
    answer = _simulate(http, agent_id, spec={"simulated_user": {}})
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["loc"] == ["body", "simulation_specification", "simulated_user"]


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
