"""World-backed tool mocks end to end: `assay run --runner vapi_chat` against the fake VAPI, whose agent calls
tools that the run's mock server answers from each case's world."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_servers import fake_vapi, vapi_env
from command_line import assay

from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG

CONFIG = {**EXAMPLE_CONFIG, "prompt": "You answer calls for {{business_name}}.",
          "tools": [*EXAMPLE_CONFIG["tools"],
                    {"name": "book_visit", "description": "Book a visit.",
                     "parameters": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}]}
WORLD = {"service_zips": ["60601", "60602"], "open_slots": ["Tuesday 8-11am", "Wednesday 1-4pm"]}
MOCKS = {"check_service_area": [
    {"when": {"zip": {"in": "world.service_zips"}}, "answer": {"in_area": True, "next_slot": "world.open_slots.0"}},
    {"when": {"zip": {"not_in": "world.service_zips"}}, "answer": {"in_area": False}},
]}
REPLIES = [  # the fake agent's behaviour: which tool it calls with which arguments, by the caller's line
    {"match": "60601", "reply": "Let me check 60601.", "tool": "check_service_area", "arguments": {"zip": "60601"}},
    {"match": "60827", "reply": "Let me check 60827.", "tool": "check_service_area", "arguments": {"zip": "60827"}},
    {"match": "book", "reply": "Booking Tuesday.", "tool": "book_visit", "arguments": {"day": "Tuesday"}},
]
CASES = {"inside": "My ZIP is 60601", "outside": "My ZIP is 60827", "booking": "Please book me for Tuesday"}


def _bundle(folder: Path, mocks: dict[str, Any] = MOCKS) -> Path:
    (folder / "config.json").write_text(json.dumps(CONFIG))
    cases = [{"key": key, "title": f"Caller {key}", "situation": {"caller": "Dana", "wants": "a plumber", "world": WORLD,
                                                                   "turns": [line, "Thanks, bye"]}}
             for key, line in CASES.items()]
    suite = {"key": "chat", "name": "Chat line", "target": {"config": "config.json", "tool_mocks": mocks},
             "cases": list(CASES),
             "assertions": [{"key": "checks_area", "mechanism": "tool.called", "params": {"tool": "check_service_area"}}],
             "criteria": {"ci": {"required": ["checks_area"]}}}
    bundle = {"schema": "assay.bundle/v1", "consumers": [{"key": "ci"}],
              "teams": [{"id": "acme", "name": "Acme", "cases": cases, "suites": [suite]}]}
    path = folder / "bundle.json"
    path.write_text(json.dumps(bundle))
    return path


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], Any]]:
    folder = tmp_path_factory.mktemp("tool-mocks")
    home = folder / "home"
    with fake_vapi(scripts={"replies": REPLIES}) as vapi:
        env = vapi_env(vapi)
        assay("init", home=home, extra_env=env)
        assay("load", str(_bundle(folder)), home=home, extra_env=env)
        done = assay("run", "acme/chat", "--runner", "vapi_chat", "--json", home=home, extra_env=env, check=None)
        yield home, json.loads(done.stdout), vapi


def _case_runs(home: Path) -> dict[str, dict[str, Any]]:
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace

    ws = open_workspace(Settings(home=home))
    try:
        rows = ws.lake.read("case_runs").to_dicts()
    finally:
        ws.close()
    return {row["case_key"]: row for row in rows}


def _calls(row: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(c["name"], json.loads(c["arguments"]), json.loads(c["result"])) for c in row["tool_calls"]]


def test_the_agents_tool_calls_are_answered_from_the_cases_world(ran) -> None:
    home, _, vapi = ran
    rows = _case_runs(home)
    assert _calls(rows["inside"]) == [("check_service_area", {"zip": "60601"}, {"in_area": True, "next_slot": "Tuesday 8-11am"})]
    assert _calls(rows["outside"]) == [("check_service_area", {"zip": "60827"}, {"in_area": False})]
    assert rows["inside"]["status"] == rows["outside"]["status"] == "executed"
    [assistant] = [r for r in vapi.requests if r["method"] == "POST" and r["path"] == "/assistant"]
    assert assistant["status"] == 201  # the assistant with server.url passed VAPI's OpenAPI check


def test_the_mocks_answers_are_recorded_beside_the_tool_calls(ran) -> None:
    home, _, _ = ran
    log = json.loads(_case_runs(home)["outside"]["provider_payload"])["tool_mocks"]
    assert log == [{"tool": "check_service_area", "arguments": {"zip": "60827"}, "rule": 1, "answer": {"in_area": False}}]


def test_an_uncovered_call_makes_the_case_run_an_error_naming_tool_and_arguments(ran) -> None:
    home, document, _ = ran
    row = _case_runs(home)["booking"]
    assert row["status"] == "error"
    assert 'no tool mock covers book_visit with arguments {"day": "Tuesday"}' in row["error"]
    [(name, _, result)] = _calls(row)  # nothing made up: the agent got the error, not an answer
    assert name == "book_visit" and "no tool mock covers" in result
    [entry] = json.loads(row["provider_payload"])["tool_mocks"]
    assert "answer" not in entry and "error" in entry
    assert document["run"]["runner"] == "vapi_chat"


def test_a_changed_mapping_is_a_changed_target_that_needs_a_re_run(ran, tmp_path: Path) -> None:
    home, _, _ = ran
    changed = {"check_service_area": [{**MOCKS["check_service_area"][0], "answer": {"in_area": True}},
                                      MOCKS["check_service_area"][1]]}
    plan = assay("plan", str(_bundle(tmp_path, changed)), home=home).stdout
    assert "~ suite acme/chat (target)" in plan and "acme/chat: re-run" in plan
    assert "nothing changes" in assay("plan", str(_bundle(tmp_path)), home=home).stdout


def test_a_runner_that_cannot_serve_tool_mocks_is_refused_before_anything_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(_bundle(tmp_path)), home=home)
    for runner in ("hamming", "vapi_evals"):
        proc = assay("run", "acme/chat", "--runner", runner, home=home, check=1)
        assert f"runner {runner!r} cannot serve them" in proc.stderr and "--runner vapi_chat" in proc.stderr
    assert json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"] == []
