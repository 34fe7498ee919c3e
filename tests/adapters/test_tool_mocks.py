"""World-backed tool mocks: the pure mapping (core), its load checks, the HTTP server, and the runners' use of it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from assay.adapters.elevenlabs import simulation_body
from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_chat import VapiChatRunner
from assay.adapters.runners.vapi_evals import VapiEvalsRunner
from assay.adapters.tool_mocks import MockServer
from assay.adapters.vapi import assistant_body
from assay.core.bundle import read_bundle
from assay.core.compiled import CompiledConfig
from assay.core.errors import BundleError, ToolMockError
from assay.core.runner import CaseSpec, RunJob
from assay.core.tool_mocks import ToolMocks, answer_call
from assay.fakes.vapi import FakeVapi

WORLD = {"service_zips": ["60601", "60602"], "open_slots": [{"day": "Tue", "window": "8-11am"}], "fee": 89}
RULES = {
    "check_service_area": [
        {"when": {"zip": {"in": "world.service_zips"}}, "answer": {"in_area": True, "first_slot": "world.open_slots.0"}},
        {"when": {"zip": {"not_in": "world.service_zips"}}, "answer": {"in_area": False}},
    ],
    "quote": [{"when": {"job": {"equals": "drain"}}, "answer": "world.fee"}],
}


def _mocks(rules: dict | None = None) -> ToolMocks:
    return ToolMocks.from_stored(rules or RULES)


def _message(name: str, arguments: dict, call_id: str = "call-1") -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"message": {"type": "tool-calls", "toolCallList": [call], "toolWithToolCallList": []}}


# --- the mapping: a pure function -------------------------------------------------------------------

def test_the_first_rule_that_holds_answers_with_the_worlds_facts() -> None:
    inside = answer_call(_mocks(), WORLD, "check_service_area", {"zip": "60602"})
    assert (inside.rule, inside.answer) == (0, {"in_area": True, "first_slot": {"day": "Tue", "window": "8-11am"}})
    outside = answer_call(_mocks(), WORLD, "check_service_area", {"zip": "60827"})
    assert (outside.rule, outside.answer) == (1, {"in_area": False})
    assert answer_call(_mocks(), WORLD, "quote", {"job": "drain"}).answer == 89
    assert answer_call(_mocks(), {**WORLD, "service_zips": [60601]}, "check_service_area", {"zip": "60601"}).rule == 0  # by JSON text


def test_a_call_no_rule_covers_is_an_error_naming_tool_and_arguments() -> None:
    with pytest.raises(ToolMockError, match=r'no tool mock covers quote with arguments \{"job": "roof"\}.*1 rule'):
        answer_call(_mocks(), WORLD, "quote", {"job": "roof"})
    with pytest.raises(ToolMockError, match=r"check_service_area with arguments \{\}"):  # a missing argument holds nothing
        answer_call(_mocks(), WORLD, "check_service_area", {})
    with pytest.raises(ToolMockError, match=r"no rules for tool 'book'.*check_service_area, quote"):
        answer_call(_mocks(), WORLD, "book", {"day": "Tue"})


def test_a_fact_the_world_lacks_is_an_error_naming_the_fact() -> None:
    with pytest.raises(ToolMockError, match=r"names world.service_zips, which this case's world lacks \(its facts: fee\)"):
        answer_call(_mocks(), {"fee": 1}, "check_service_area", {"zip": "60601"})


def test_the_stored_mapping_spells_every_rule_alike() -> None:
    stored = _mocks({"t": [{"answer": 1}]}).stored()
    assert stored == {"t": [{"when": {}, "answer": 1}]} and _mocks(stored).stored() == stored


# --- load: the declaration in a bundle ----------------------------------------------------------------

def _bundle(tmp_path: Path, rules: dict, world: dict) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(EXAMPLE_CONFIG))
    bundle = {"schema": "assay.bundle/v1", "teams": [{"id": "acme", "name": "Acme", "cases": [
        {"key": "dana", "title": "Dana calls", "situation": {"caller": "Dana", "wants": "a repair", "world": world}}],
        "suites": [{"key": "chat", "name": "Chat", "target": {"config": "config.json", "tool_mocks": rules},
                    "cases": ["dana"]}]}]}
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    return path


def test_a_bundle_stores_its_tool_mocks_with_the_target(tmp_path: Path) -> None:
    rules = {"check_service_area": RULES["check_service_area"]}
    [suite] = read_bundle(_bundle(tmp_path, rules, WORLD)).teams[0].suites
    assert suite.resolved_target.target["tool_mocks"] == _mocks(rules).stored()


def test_load_refuses_a_fact_a_case_lacks_and_a_tool_the_config_lacks(tmp_path: Path) -> None:
    rules = {"check_service_area": RULES["check_service_area"], "quote": RULES["quote"]}
    with pytest.raises(BundleError) as caught:
        read_bundle(_bundle(tmp_path, rules, {"fee": 1}))
    text = str(caught.value)
    assert "tool_mocks.check_service_area[0]: world.service_zips is not a fact of case 'dana'" in text
    assert "world.open_slots.0 is not a fact of case 'dana'" in text
    assert "tool_mocks.quote: 'quote' is not a tool of the suite's compiled config (its tools: check_service_area)" in text


def test_load_refuses_a_condition_without_exactly_one_test(tmp_path: Path) -> None:
    rules = {"check_service_area": [{"when": {"zip": {"in": ["1"], "equals": "1"}}, "answer": 1}]}
    with pytest.raises(BundleError, match="exactly one of 'equals', 'in' or 'not_in' \\(found equals, in\\)"):
        read_bundle(_bundle(tmp_path, rules, WORLD))
    shorthand = {"check_service_area": [{"when": {"zip": "60601"}, "answer": 1}]}
    with pytest.raises(BundleError, match=r'when.zip: a condition is an object naming its test, e.g. \{equals: "60601"\}'):
        read_bundle(_bundle(tmp_path, shorthand, WORLD))


# --- the server -------------------------------------------------------------------------------------

def test_the_server_answers_in_vapis_shape_and_logs_every_call() -> None:
    with MockServer(_mocks()) as server, server.conversation(WORLD) as log:
        inside = httpx.post(server.url, json=_message("check_service_area", {"zip": "60601"})).json()
        missed = httpx.post(server.url, json=_message("quote", {"job": "roof"}, "call-2")).json()
    [answer] = inside["results"]
    assert answer == {"toolCallId": "call-1", "name": "check_service_area",
                      "result": json.dumps({"first_slot": WORLD["open_slots"][0], "in_area": True}, sort_keys=True)}
    [error] = missed["results"]
    assert set(error) == {"toolCallId", "name", "error"} and 'quote with arguments {"job": "roof"}' in error["error"]
    assert [(e["tool"], e.get("rule")) for e in log.entries] == [("check_service_area", 0), ("quote", None)]
    assert log.errors == [error["error"]]


def test_the_server_refuses_other_paths_and_calls_outside_a_conversation() -> None:
    with MockServer(_mocks()) as server:
        assert httpx.post(server.url.rsplit("/", 1)[0] + "/guess", json={}).status_code == 404
        [stray] = httpx.post(server.url, json=_message("quote", {"job": "drain"})).json()["results"]
    assert "no conversation was in progress" in stray["error"] and len(server.strays) == 1


def test_the_server_stops_and_frees_its_port() -> None:
    with MockServer(_mocks()) as server:
        url = server.url
        port = int(url.split(":")[2].split("/")[0])
        assert server.running
    assert not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json={}, timeout=2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # the port is free again


# --- runners ----------------------------------------------------------------------------------------

def test_the_assistant_points_every_tool_at_the_mock_and_the_fake_vapi_accepts_it() -> None:
    config = CompiledConfig.model_validate(EXAMPLE_CONFIG)
    body = assistant_body(config, "assay-run-assistant-1", tool_server="http://127.0.0.1:9/runs/t")
    assert [t["server"] for t in body["model"]["tools"]] == [{"url": "http://127.0.0.1:9/runs/t"}]
    with FakeVapi(key="k") as vapi:
        created = httpx.post(vapi.url + "/assistant", json=body, headers={"Authorization": "Bearer k"})
    assert created.status_code == 201, created.text  # VAPI's OpenAPI document accepts server.url


def _job(rules: dict) -> RunJob:
    case = CaseSpec("c1", "dana", {"content": {"situation": {"caller": "Dana", "wants": "x", "world": WORLD}}})
    return RunJob("run-1", "acme", "chat", "config", {"config": EXAMPLE_CONFIG, "tool_mocks": rules}, (case,))


def test_a_runner_that_cannot_serve_tool_mocks_makes_every_case_an_error_never_ignores_them() -> None:
    report = VapiEvalsRunner().compiled_config(_job(RULES))
    [row] = report.case_runs.to_pylist()
    assert row["status"] == "error" and "cannot answer the agent's tool calls" in row["error"]
    assert "--runner vapi_chat" in row["error"]
    assert VapiChatRunner().mocks_refused(_job(RULES)) is None


def test_elevenlabs_uses_argument_free_rules_and_refuses_conditional_ones() -> None:
    refused = ElevenLabsChatRunner().mocks_refused(_job(RULES))
    assert refused is not None and "check_service_area, quote" in refused and "`when: {}`" in refused
    static = {"check_service_area": [{"when": {}, "answer": {"zips": "world.service_zips"}}]}
    assert ElevenLabsChatRunner().mocks_refused(_job(static)) is None
    body = simulation_body({"caller": "Dana", "wants": "x", "world": WORLD}, CompiledConfig.model_validate(EXAMPLE_CONFIG),
                           mocks=_mocks(static))
    mock = body["simulation_specification"]["tool_mock_config"]["check_service_area"]
    assert json.loads(mock["default_return_value"]) == {"zips": WORLD["service_zips"]} and not mock["default_is_error"]


def test_the_readme_example_is_a_valid_target_and_answers_from_the_world() -> None:
    import yaml
    from readme_blocks import README

    from assay.core.bundle_models import TargetDef

    text = README.read_text().split("### World-backed tool mocks", 1)[1]
    example = yaml.safe_load(text.split("```yaml", 1)[1].split("```", 1)[0])
    target = TargetDef.model_validate(example["target"])
    mocks = ToolMocks(tools=target.tool_mocks or {})
    world = {**WORLD, "visit_fee": "$89"}
    assert answer_call(mocks, world, "check_service_area", {"zip": "60601"}).answer == {
        "in_area": True, "next_slot": WORLD["open_slots"][0]}
    assert answer_call(mocks, world, "quote_visit", {}).answer == "$89"


def test_the_fake_vapi_gives_the_tool_an_error_when_its_server_does_not_answer() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/runs/t"
    body = assistant_body(CompiledConfig.model_validate(EXAMPLE_CONFIG), "assay-run-assistant-1", tool_server=dead)
    rule = {"match": "60601", "reply": "Checking.", "tool": "check_service_area", "arguments": {"zip": "60601"}}
    with FakeVapi(key="k") as vapi:
        vapi.faults.scripts = {"replies": [rule]}
        auth = {"Authorization": "Bearer k"}
        assistant = httpx.post(vapi.url + "/assistant", json=body, headers=auth).json()
        chat = httpx.post(vapi.url + "/chat", json={"assistantId": assistant["id"], "input": "60601"}, headers=auth).json()
    [tool] = [m for m in chat["output"] if m["role"] == "tool"]
    assert "the tool's server did not answer" in json.loads(tool["content"])  # never the brain's made-up {"ok": true}


def test_elevenlabs_names_a_fact_the_world_lacks() -> None:
    static = _mocks({"check_service_area": [{"when": {}, "answer": "world.hours"}]})
    with pytest.raises(ToolMockError, match="names world.hours, which this case's world lacks"):
        simulation_body({"caller": "Dana", "wants": "x", "world": WORLD}, CompiledConfig.model_validate(EXAMPLE_CONFIG),
                        mocks=static)


def test_a_vendor_off_this_machine_reaches_the_server_by_its_public_url() -> None:
    from assay.adapters.tool_mocks import MockServer
    from assay.core.errors import ConfigError
    from assay.core.settings import Settings
    from assay.core.tool_mocks import ToolMocks

    mocks = ToolMocks.model_validate({"tools": {"check_service_area": [{"answer": {"in_area": True}}]}})
    with MockServer.from_settings(mocks, Settings(tool_mock_url="https://tunnel.example/acme/")) as server:
        assert server.url == f"https://tunnel.example/acme/runs/{server.token}"
    with MockServer.from_settings(mocks, Settings()) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith(f"/runs/{server.token}")
    with pytest.raises(ConfigError, match="ASSAY_TOOL_MOCK_BIND must be host:port"):
        MockServer.from_settings(mocks, Settings(tool_mock_bind="localhost"))
