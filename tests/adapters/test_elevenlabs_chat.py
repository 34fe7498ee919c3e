"""``elevenlabs_chat`` against the running fake ElevenLabs: full drives through ``drive`` with the catalog's
ledger, the scratch agent's life cycle, vendor errors as ERROR case runs, keys, and the analysis mapping."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from runner_kit import case_runs, evaluations, run, scratch_rows, seed

from assay.adapters import elevenlabs as el
from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
from assay.core.compiled import CompiledConfig
from assay.core.errors import MalformedResponseError
from assay.core.runner import ScratchObject
from assay.core.settings import Settings
from assay.storage.catalog.runs import get_run
from assay.storage.lake import Lake

from fake_servers import elevenlabs_env, fake_elevenlabs

CONFIG = {
    "name": "Acme main line",
    "prompt": "You answer for {{business}}. Check every ZIP with check_service_area. After hours: {{fee}}.",
    "variables": {"business": "Acme Plumbing"},
    "tools": [{"name": "check_service_area", "description": "Is a ZIP inside the area?",
               "parameters": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}}],
    "first_message": "Thanks for calling {{business}}.",
}
SCRIPTED = {"caller": "Dana, homeowner", "wants": "A same-day repair", "must_be_told": ["The address is not served"],
            "world": {"check_service_area": {"served": False}}, "turns": ["My ZIP is 60827.", "So you can't come?"]}
SIMULATED = {"caller": "Marcus, tenant", "wants": "The water stopped"}
NO_CONFIG = {"conversation_config": {}}
"""The least an agent is created with: the document requires a conversation config, which may be empty."""


@pytest.fixture
def fake() -> Iterator[Any]:
    with fake_elevenlabs() as server:
        yield server


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _runner(fake: Any, key: str | None = None, **options: Any) -> tuple[ElevenLabsChatRunner, list[float]]:
    sleeps: list[float] = []
    settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in elevenlabs_env(fake, key).items()})
    return ElevenLabsChatRunner(settings, sleep=sleeps.append, **options), sleeps


def _suite(engine: sa.Engine) -> str:
    return seed(engine, CONFIG, {"outside-area": SCRIPTED, "burst-pipe": SIMULATED})


def test_a_full_drive_keeps_transcripts_tools_and_the_vendors_analysis(engine: sa.Engine, lake: Lake, fake: Any) -> None:
    runner, _ = _runner(fake)
    run_id, result, ledger = run(engine, lake, _suite(engine), runner)
    assert result.error is None and result.case_runs == 2
    ledger.finalise(run_id)
    assert get_run(engine, run_id).status == "completed"
    rows = {r["case_key"]: r for r in case_runs(lake, run_id).iter_rows(named=True)}
    assert {r["status"] for r in rows.values()} == {"executed"}
    dana = rows["outside-area"]
    said = [(t["role"], t["text"]) for t in dana["transcript"]]
    assert said[:3] == [("agent", "Thanks for calling Acme Plumbing."), ("caller", "My ZIP is 60827."),
                        ("agent", "Hello, how can I help?")]
    assert ("caller", "So you can't come?") in said
    assert all(t["t"] is not None and t["end_t"] is None for t in dana["transcript"])  # start times only
    [tool] = dana["tool_calls"]
    assert tool["name"] == "check_service_area" and json.loads(tool["arguments"]) == {"zip": "60827"}
    assert json.loads(tool["result"]) == {"served": False}  # the world's fact, through the tool mock
    marcus = [t["text"] for t in rows["burst-pipe"]["transcript"] if t["role"] == "caller"]
    assert marcus[0] == "Hi, I'm calling about this: The water stopped"  # ElevenLabs' own simulated user
    assert json.loads(dana["artefact"])["name"] == CONFIG["name"] and dana["provider_ref"].startswith("agent_")
    payload = dana["provider_payload"]
    assert fake.key not in payload and "simulated_conversation" in json.loads(payload)
    keys = {r["case_run_id"]: key for key, r in rows.items()}
    by_case = {(keys[r["case_run_id"]], r["name"]): r for r in evaluations(lake, run_id).iter_rows(named=True)}
    assert set(by_case) == {("outside-area", "call_successful"), ("outside-area", "caller_goal"),
                            ("outside-area", "told_1"), ("burst-pipe", "call_successful"), ("burst-pipe", "caller_goal")}
    goal = by_case[("outside-area", "caller_goal")]
    assert (goal["evaluator"], goal["verdict"], goal["met"], goal["value"]) == ("elevenlabs:criteria", "pass", True, 1.0)
    assert by_case[("burst-pipe", "call_successful")]["evaluator"] == "elevenlabs:analysis"
    # the agent is gone at release, and the catalog says so
    assert fake.live_objects() == {}
    [row] = scratch_rows(engine, run_id)
    assert row.kind == "agent" and row.vendor_id and row.deleted_at is not None and row.last_error is None


def test_the_analysis_keeps_both_scales(engine: sa.Engine, lake: Lake, fake: Any) -> None:
    fake.faults.scripts = {"criteria": {"caller_goal": {"result": "failure", "score": 2, "rationale": "No visit."},
                                        "told_1": "unknown"}}
    runner, _ = _runner(fake, scoring_mode="numeric_uniform")
    run_id, result, _ = run(engine, lake, seed(engine, CONFIG, {"outside-area": SCRIPTED}), runner)
    assert result.error is None
    rows = {r["name"]: r for r in evaluations(lake, run_id).iter_rows(named=True)}
    goal = rows["caller_goal"]
    assert (goal["verdict"], goal["score"], goal["scale_min"], goal["scale_max"]) == ("fail", 2.0, 0.0, 10.0)
    assert (goal["met"], goal["value"], goal["rationale"]) == (False, pytest.approx(0.2), "No visit.")
    assert json.loads(goal["raw"])["result"] == "failure"  # the vendor's own word is kept
    told = rows["told_1"]
    assert (told["verdict"], told["met"], told["value"]) == ("unknown", None, None)
    assert (rows["call_successful"]["verdict"], rows["call_successful"]["met"]) == ("fail", False)


def test_rate_limits_are_waited_out_as_retry_after_asks(engine: sa.Engine, lake: Lake, fake: Any) -> None:
    fake.faults.rate_limited, fake.faults.retry_after = 2, 1.5
    runner, sleeps = _runner(fake)
    run_id, result, _ = run(engine, lake, _suite(engine), runner)
    assert result.error is None and sleeps == [1.5, 1.5]
    assert [r["status"] for r in fake.requests[:3]] == [429, 429, 200]
    assert set(case_runs(lake, run_id)["status"]) == {"executed"}


def test_a_malformed_answer_makes_that_case_an_error_not_a_fail(engine: sa.Engine, lake: Lake, fake: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    create = el.ElevenLabsApi.create_agent

    def create_then_spoil(api: el.ElevenLabsApi, body: dict[str, Any]) -> str:
        agent_id = create(api, body)
        fake.faults.malformed = 1  # the next answer (the first simulation) is not JSON
        return agent_id

    monkeypatch.setattr(el.ElevenLabsApi, "create_agent", create_then_spoil)
    runner, _ = _runner(fake)
    run_id, result, _ = run(engine, lake, _suite(engine), runner)
    assert result.error is None
    rows = {r["case_key"]: r for r in case_runs(lake, run_id).iter_rows(named=True)}
    spoilt, fine = rows["outside-area"], rows["burst-pipe"]  # the first case ran first
    assert spoilt["status"] == "error" and "not JSON" in spoilt["error"] and spoilt["error"].startswith("elevenlabs: HTTP 200")
    assert spoilt["transcript"] == [] and spoilt["tool_calls"] == []
    assert fine["status"] == "executed"
    assert evaluations(lake, run_id)["case_run_id"].unique().to_list() == [fine["case_run_id"]]
    assert fake.live_objects() == {}


def test_a_vendor_refusal_is_an_error_case_run_with_its_message(engine: sa.Engine, lake: Lake, fake: Any) -> None:
    config = {**CONFIG, "tools": [{**CONFIG["tools"][0], "name": "check service area"}]}  # not a valid tool name
    runner, _ = _runner(fake)
    run_id, result, _ = run(engine, lake, seed(engine, config, {"outside-area": SCRIPTED}), runner)
    assert result.error is None
    [row] = case_runs(lake, run_id).iter_rows(named=True)
    assert row["status"] == "error" and "could not be created" in row["error"] and "HTTP 422" in row["error"]
    assert "tools.0.name" in row["error"]


@pytest.mark.parametrize("key", ["wrong-key-abcdef0123456789", None])
def test_a_bad_or_missing_key_fails_the_run_naming_the_setting(engine: sa.Engine, lake: Lake, fake: Any,
                                                               key: str | None) -> None:
    runner = ElevenLabsChatRunner(Settings(elevenlabs_base_url=fake.url, elevenlabs_api_key=key), sleep=lambda s: None)
    run_id, result, ledger = run(engine, lake, _suite(engine), runner)
    assert result.error and "ASSAY_ELEVENLABS_API_KEY" in result.error
    assert (key or fake.key) not in result.error
    assert result.case_runs == 0 and fake.live_objects() == {}
    assert get_run(engine, run_id).lease_owner is None  # released
    assert key is None or "HTTP 401" in result.error


def test_the_agent_is_deleted_when_the_run_fails_midway(engine: sa.Engine, lake: Lake, fake: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(api: el.ElevenLabsApi, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        assert fake.live_objects() == {"agent": [agent_id]}  # it exists while the run works
        raise RuntimeError("the runner crashed")

    monkeypatch.setattr(el.ElevenLabsApi, "simulate", boom)
    runner, _ = _runner(fake)
    with pytest.raises(RuntimeError, match="crashed"):
        run(engine, lake, _suite(engine), runner)
    assert fake.live_objects() == {}
    [row] = scratch_rows(engine, _only_run_id(engine))
    assert row.deleted_at is not None


def _only_run_id(engine: sa.Engine) -> str:
    from assay.storage.catalog import tables as t

    with engine.connect() as conn:
        return conn.execute(sa.select(t.runs.c.run_id)).scalar_one()


def test_teardown_finds_an_agent_by_name_and_counts_gone_as_deleted(fake: Any) -> None:
    runner, _ = _runner(fake)
    with runner.api() as api:
        named = [api.create_agent({"name": "assay-r1-agent-x", **NO_CONFIG}) for _ in range(3)]  # a crash left these behind
        other = api.create_agent({"name": "assay-r1-agent-xy", **NO_CONFIG})
        kept = api.create_agent({"name": "someone else's", **NO_CONFIG})
    objects = [ScratchObject("s1", "r1", "elevenlabs_chat", "agent", "assay-r1-agent-x"),
               ScratchObject("s2", "r1", "elevenlabs_chat", "agent", "assay-r1-agent-y", vendor_id="agent_gone"),
               ScratchObject("s3", "r1", "elevenlabs_chat", "assistant", "assay-r1-assistant-z", vendor_id="a1")]
    outcome = runner.teardown(objects)
    assert outcome["s1"] is None and outcome["s2"] is None and "not 'assistant'" in outcome["s3"]
    assert fake.live_objects() == {"agent": sorted([other, kept])}
    assert not set(named) & set(fake.live_objects()["agent"])


def test_find_agents_walks_every_page(fake: Any) -> None:
    runner, _ = _runner(fake)
    with runner.api() as api:
        ids = [api.create_agent({"name": "assay-paged", **NO_CONFIG}) for _ in range(5)]
        assert sorted(api.find_agents("assay-paged", page_size=2)) == sorted(ids)


# ------------------------------------------------------------------------------------ the translation

def test_agent_body_fills_variables_and_declares_the_unresolved() -> None:
    body = el.agent_body(CompiledConfig.model_validate(CONFIG), "assay-r1-agent-x")
    agent = body["conversation_config"]["agent"]
    assert agent["prompt"]["prompt"].startswith("You answer for Acme Plumbing.") and "{{fee}}" in agent["prompt"]["prompt"]
    assert agent["dynamic_variables"] == {"dynamic_variable_placeholders": {"fee": "{{fee}}"}}
    assert agent["first_message"] == "Thanks for calling Acme Plumbing."
    assert agent["prompt"]["tools"][0]["type"] == "client" and body["name"] == "assay-r1-agent-x"


def test_the_simulated_user_prompt_carries_the_situation_and_its_script() -> None:
    body = el.simulation_body(SCRIPTED, CompiledConfig.model_validate(CONFIG))
    user = body["simulation_specification"]["simulated_user_config"]
    prompt = user["prompt"]["prompt"]
    assert "Dana, homeowner" in prompt and "A same-day repair" in prompt and "[END_CALL]" not in prompt
    assert '1. "My ZIP is 60827."' in prompt and user["first_message"] == "My ZIP is 60827."
    assert [c["id"] for c in body["extra_evaluation_criteria"]] == ["caller_goal", "told_1"]
    assert "scoring_mode" not in body["extra_evaluation_criteria"][0]


def test_tool_calls_pair_with_results_by_request_id_whatever_the_order() -> None:
    response = {"simulated_conversation": [
        {"role": "agent", "message": None, "time_in_call_secs": 3, "tool_calls": [
            {"request_id": "b", "tool_name": "two", "params_as_json": "not json", "tool_has_been_called": True},
            {"request_id": "a", "tool_name": "one", "params_as_json": '{"zip": "1"}', "tool_has_been_called": True}]},
        {"role": "agent", "message": "", "time_in_call_secs": 4, "tool_results": [
            {"request_id": "a", "tool_name": "one", "result_value": "plain words", "is_error": True}]},
        {"role": "user", "message": "ok", "time_in_call_secs": 5}]}
    turns, calls = el.read_conversation(response)
    assert [(t.role, t.text, t.t) for t in turns] == [("caller", "ok", 5.0)]
    assert [(c.name, c.arguments, c.result, c.is_error, c.t) for c in calls] == [
        ("two", {"_unparsed": "not json"}, None, False, 3.0), ("one", {"zip": "1"}, "plain words", True, 3.0)]


@pytest.mark.parametrize("response", [{}, {"simulated_conversation": [{"role": "bot"}]},
                                      {"simulated_conversation": [], "analysis": []}])
def test_an_answer_off_the_documented_shape_is_malformed(response: dict[str, Any]) -> None:
    with pytest.raises(MalformedResponseError):
        el.read_conversation(response)
        el.analysis_evaluations(response)
