"""``vapi_chat`` against the fake VAPI, driven through ``drive`` with the catalog's ledger and scratch book."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import SecretStr
from runner_kit import case_runs, run, scratch_rows, seed

from assay.adapters.http import RetryPolicy
from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_chat import VapiChatRunner
from assay.adapters.vapi import VapiApi, assistant_body, vendor_name
from assay.core.compiled import CompiledConfig
from assay.core.runner import ScratchObject
from assay.core.settings import Settings
from assay.fakes.openai import FakeOpenAI
from assay.fakes.vapi import CHAT_COST, FakeVapi
from assay.storage.lake import Lake

KEY = "vapi-secret-key-0123456789"
TURNS = ["Hi, I need a plumber", "My ZIP is 60614", "Thanks, bye"]
ZIP_RULE = {"match": "60614", "reply": "Yes, 60614 is in our service area.", "tool": "check_service_area",
            "arguments": {"zip": "60614"}, "result": {"inside": True}}


@pytest.fixture
def vapi() -> Iterator[FakeVapi]:
    with FakeVapi(key=KEY) as fake:
        fake.faults.scripts = {"replies": [ZIP_RULE]}
        yield fake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _settings(vapi: FakeVapi, key: str = KEY, **more) -> Settings:
    return Settings(vapi_base_url=vapi.url, vapi_api_key=SecretStr(key), **more)


def _runner(vapi: FakeVapi, sleeps: list[float] | None = None, **kwargs) -> VapiChatRunner:
    record = sleeps.append if sleeps is not None else (lambda s: None)
    return VapiChatRunner(kwargs.pop("settings", None) or _settings(vapi), sleep=record,
                          retry=kwargs.pop("retry", RetryPolicy(attempts=3, base_delay=0.01)), **kwargs)


def _suite(engine: sa.Engine, **situations) -> str:
    return seed(engine, EXAMPLE_CONFIG, situations or {"zip-check": {"caller": "Dana", "turns": TURNS}})


def _deleted(engine: sa.Engine, run_id: str) -> list[bool]:
    return [row.deleted_at is not None for row in scratch_rows(engine, run_id)]


def test_the_assistant_body_resolves_variables_and_shapes_tools_as_vapi_functions() -> None:
    body = assistant_body(CompiledConfig.model_validate(EXAMPLE_CONFIG), "assay-run-assistant-1", {"provider": "openai", "model": "gpt-4.1"})
    [system] = body["model"]["messages"]
    assert system["role"] == "system" and "for Example Plumbing." in system["content"] and "{{" not in system["content"]
    assert body["model"]["tools"] == [{"type": "function", "function": {
        "name": "check_service_area", "description": "Is a ZIP code inside the service area?",
        "parameters": EXAMPLE_CONFIG["tools"][0]["parameters"]}}]
    assert (body["model"]["provider"], body["model"]["model"]) == ("openai", "gpt-4.1")
    assert body["firstMessage"] == "Thanks for calling Example Plumbing."
    assert body["name"] == vendor_name("assay-run-assistant-1") and len(body["name"]) <= 40


def test_a_full_drive_records_the_conversation_and_deletes_the_assistant(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    run_id, result, _ = run(engine, lake, _suite(engine), _runner(vapi))
    assert result.error is None and result.case_runs == 1
    [row] = case_runs(lake, run_id).to_dicts()
    assert row["status"] == "executed" and row["runner"] == "vapi_chat"
    turns = row["transcript"]
    assert [(t["role"], t["text"]) for t in turns] == [
        ("caller", TURNS[0]), ("agent", "Thanks for calling Example Plumbing."),
        ("caller", TURNS[1]), ("agent", "Yes, 60614 is in our service area."),
        ("caller", TURNS[2]), ("agent", "I understand. Is there anything else I can help with?")]
    starts = [t["t"] for t in turns]
    assert starts == sorted(starts) and all(t["t"] == t["end_t"] for t in turns)
    assert all(agent["t"] > caller["end_t"] for caller, agent in zip(turns[::2], turns[1::2], strict=True))
    calls = [(c["name"], json.loads(c["arguments"]), json.loads(c["result"])) for c in row["tool_calls"]]
    assert calls == [("check_service_area", {"zip": "Hi, I need a plumber"}, {"ok": True}),  # the prompt names the tool
                     ("check_service_area", {"zip": "60614"}, {"inside": True})]
    assert row["tool_calls"][1]["t"] == turns[3]["t"]
    assert row["cost_usd"] == pytest.approx(3 * CHAT_COST)
    chats = sorted(vapi.objects("chat"))
    assert row["provider_ref"] == chats[-1]
    assert vapi.objects("chat")[chats[-1]]["previousChatId"] == chats[-2]  # one chain, by previousChatId
    assert KEY not in row["provider_payload"] and json.loads(row["provider_payload"])["last"]["id"] == chats[-1]
    assert json.loads(row["artefact"])["name"] == EXAMPLE_CONFIG["name"]
    assert vapi.live_objects().get("assistant") is None and _deleted(engine, run_id) == [True]


def test_the_simulated_caller_speaks_when_the_case_has_no_turns(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    with FakeOpenAI(key="llm-key-0123456789") as llm:
        llm.add_rule("anything else", "[END_CALL]")
        settings = _settings(vapi, caller_base_url=llm.url + "/v1", caller_model="caller-m",
                             caller_api_key=SecretStr(llm.key))
        suite = _suite(engine, dana={"caller": "Dana", "wants": "a repair"})
        run_id, result, _ = run(engine, lake, suite, _runner(vapi, settings=settings))
    assert result.error is None
    [row] = case_runs(lake, run_id).to_dicts()
    roles = [t["role"] for t in row["transcript"]]
    assert roles == ["caller", "agent", "caller", "agent"] and len(llm.bodies) == 3  # the third answer hung up
    assert "Dana" in llm.bodies[0]["messages"][0]["content"]


def test_the_assistant_is_deleted_when_the_run_fails(engine: sa.Engine, lake: Lake, vapi: FakeVapi,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _runner(vapi)

    def boom(*args, **kwargs):
        assert vapi.live_objects()["assistant"]  # it exists while the run works
        raise RuntimeError("the runner crashed mid-run")

    monkeypatch.setattr(runner, "_case_run", boom)
    with pytest.raises(RuntimeError, match="crashed"):
        run(engine, lake, _suite(engine), runner)
    assert vapi.live_objects().get("assistant") is None
    [row] = scratch_rows(engine, _only_run(engine))
    assert row.deleted_at is not None and row.vendor_id


def _only_run(engine: sa.Engine) -> str:
    from assay.storage.catalog import tables as t

    with engine.connect() as conn:
        return conn.execute(sa.select(t.runs.c.run_id)).scalar_one()


def test_a_rate_limit_is_retried_after_the_time_vapi_asks(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    vapi.faults.rate_limited, vapi.faults.retry_after = 2, 3
    sleeps: list[float] = []
    run_id, result, _ = run(engine, lake, _suite(engine), _runner(vapi, sleeps))
    assert result.error is None and sleeps[:2] == [3.0, 3.0]
    statuses = [r["status"] for r in vapi.requests]
    assert statuses[:3] == [429, 429, 201] and statuses.count(429) == 2
    assert case_runs(lake, run_id)["status"].to_list() == ["executed"]


def _spoil_after_creation(runner: VapiChatRunner, vapi: FakeVapi, **faults) -> VapiChatRunner:
    """The runner's API switches ``faults`` on once the assistant exists (so only the chats meet them)."""
    make = runner.api

    def api() -> VapiApi:
        made = make()
        create = made.create_assistant

        def create_then_spoil(body):
            assistant_id = create(body)
            for name, value in faults.items():
                setattr(vapi.faults, name, value)
            return assistant_id

        made.create_assistant = create_then_spoil
        return made

    runner.api = api
    return runner


@pytest.mark.parametrize("faults,said", [
    ({"rate_limited": 3, "retry_after": 0}, "vapi: HTTP 429: Too many concurrent requests"),
    # the chat, then the three tries of looking it up: nobody can tell whether VAPI made it
    ({"server_errors": 4}, "vapi: HTTP 503: Service temporarily unavailable; not sent again"),
])
def test_a_vendor_error_makes_that_case_run_an_error_not_a_fail(engine: sa.Engine, lake: Lake, vapi: FakeVapi,
                                                                faults: dict, said: str) -> None:
    suite = _suite(engine, first={"caller": "A", "turns": ["Hello"]}, second={"caller": "B", "turns": ["Hello"]})
    run_id, result, _ = run(engine, lake, suite, _spoil_after_creation(_runner(vapi), vapi, **faults))
    assert result.error is None
    first, second = case_runs(lake, run_id).to_dicts()
    assert first["status"] == "error" and first["error"].startswith(said) and first["transcript"][0]["role"] == "caller"
    assert second["status"] == "executed" and second["error"] is None
    assert vapi.live_objects().get("assistant") is None


@pytest.mark.parametrize("faults", [{"malformed": 1}, {"truncated": 1}, {"server_errors": 1}],
                         ids=["malformed", "truncated", "5xx"])
def test_a_chat_whose_answer_was_lost_is_found_never_made_twice(engine: sa.Engine, lake: Lake, vapi: FakeVapi,
                                                               faults: dict) -> None:
    suite = _suite(engine, first={"caller": "A", "turns": TURNS})
    run_id, result, _ = run(engine, lake, suite, _spoil_after_creation(_runner(vapi), vapi, **faults))
    [row] = case_runs(lake, run_id).to_dicts()
    assert result.error is None and row["status"] == "executed"
    assert len(vapi.objects("chat")) == len(TURNS)  # one billed chat per caller turn, none twice
    assert [t["role"] for t in row["transcript"]] == ["caller", "agent"] * len(TURNS)


def test_a_refused_key_fails_the_run_naming_the_setting_never_the_key(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    wrong = "wrong-key-9876543210"
    run_id, result, ledger = run(engine, lake, _suite(engine), _runner(vapi, settings=_settings(vapi, key=wrong)))
    assert result.error is not None and "ASSAY_VAPI_API_KEY" in result.error and "401" in result.error
    assert wrong not in result.error and KEY not in result.error
    assert vapi.live_objects() == {} and case_runs(lake, run_id).height == 0
    [row] = scratch_rows(engine, run_id)  # recorded before creation, closed when VAPI refused it
    assert row.vendor_id is None and row.deleted_at is not None and wrong not in (row.last_error or "")
    assert ledger.scratch.abandoned() == []  # `assay reap` has nothing to look for: it was never created


def test_a_missing_key_is_a_clear_error_and_settings_come_from_the_environment(
        engine: sa.Engine, lake: Lake, vapi: FakeVapi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_VAPI_API_KEY", raising=False)
    monkeypatch.setenv("ASSAY_VAPI_BASE_URL", vapi.url)
    suite = _suite(engine)
    _, failed, _ = run(engine, lake, suite, VapiChatRunner())
    assert failed.error == "VAPI needs a private key: set ASSAY_VAPI_API_KEY"
    monkeypatch.setenv("ASSAY_VAPI_API_KEY", KEY)
    _, result, _ = run(engine, lake, suite, VapiChatRunner())
    assert result.error is None and result.case_runs == 1


def test_teardown_finds_an_assistant_by_name_when_its_id_was_never_recorded(vapi: FakeVapi) -> None:
    runner = _runner(vapi)
    with runner.api() as api:
        lost = api.create_assistant(assistant_body(CompiledConfig.model_validate(EXAMPLE_CONFIG), "assay-r1-assistant-x"))
        gone = api.create_assistant(assistant_body(CompiledConfig.model_validate(EXAMPLE_CONFIG), "assay-r1-assistant-y"))
        api.delete_assistant(gone)
    objects = [ScratchObject("s1", "r1", "vapi_chat", "assistant", "assay-r1-assistant-x"),
               ScratchObject("s2", "r1", "vapi_chat", "assistant", "assay-r1-assistant-y", vendor_id=gone),
               ScratchObject("s3", "r1", "vapi_chat", "squad", "assay-r1-squad-z")]
    outcome = runner.teardown(objects)
    assert outcome["s1"] is None and outcome["s2"] is None and "squad" in outcome["s3"]
    assert lost not in vapi.objects("assistant") and vapi.live_objects() == {}


def test_a_malformed_config_makes_every_case_run_an_error_and_creates_nothing(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    suite = seed(engine, {"name": "x", "tools": []}, {"a": {"caller": "A", "turns": ["Hi"]}})
    run_id, result, _ = run(engine, lake, suite, _runner(vapi))
    [row] = case_runs(lake, run_id).to_dicts()
    assert result.error is None and row["status"] == "error" and "config.prompt: missing" in row["error"]
    assert vapi.requests == []
