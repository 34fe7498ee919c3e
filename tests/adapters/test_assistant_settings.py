"""The team's assistant, faithfully: a compiled config's model, voice, transcriber and turn settings reach the
vendor (whose fake checks every request against the vendor's published OpenAPI document), come back the same
through ``assay import-config``, are refused by name where the vendor cannot take them, and a run's ``--model``
replaces the config's model and is recorded on the run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import sqlalchemy as sa
from command_line import assay
from fake_servers import elevenlabs_env, fake_elevenlabs, fake_vapi, vapi_env
from runner_kit import case_runs, run, seed

from assay.adapters import elevenlabs as el
from assay.adapters import vapi
from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
from assay.adapters.runners.vapi_chat import VapiChatRunner
from assay.core.compiled import CompiledConfig, config_problems, schema_text, settings_given
from assay.core.document_models import validate
from assay.core.settings import Settings
from assay.storage.lake import Lake

ROOT = Path(__file__).resolve().parents[2]
BASE = {
    "name": "Bright Smile front desk",
    "prompt": "You book appointments for Bright Smile Dental. Check a slot with find_slot before offering it.",
    "first_message": "Bright Smile Dental, how can I help?",
    "tools": [{"name": "find_slot", "description": "Free slots on a day",
               "parameters": {"type": "object", "properties": {"day": {"type": "string"}}, "required": ["day"]}}],
}
VAPI_SETTINGS = {
    "model": {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0.3, "max_tokens": 250},
    "voice": {"provider": "11labs", "voice_id": "sarah", "model": "eleven_turbo_v2_5", "speed": 1.1, "stability": 0.6,
              "similarity_boost": 0.7},
    "transcriber": {"provider": "deepgram", "model": "nova-2", "language": "en"},
    "turn": {"wait_seconds": 0.8},
    "max_duration_seconds": 900, "end_call_message": "Thanks for calling, goodbye.", "end_call_phrases": ["goodbye"],
}
ELEVENLABS_SETTINGS = {
    "model": {"model": "gpt-4o-mini", "temperature": 0.3, "max_tokens": 250},
    "voice": {"provider": "11labs", "voice_id": "cjVigY5qzO86Huf0OWal", "model": "eleven_turbo_v2_5", "speed": 1.1,
              "stability": 0.6, "similarity_boost": 0.7},
    "transcriber": {"provider": "elevenlabs", "language": "en"},
    "turn": {"silence_timeout_seconds": 20},
    "max_duration_seconds": 900,
}
SITUATION = {"caller": "Priya, a patient", "wants": "A cleaning on Tuesday", "turns": ["Can I come in Tuesday?", "Bye"]}


def _vapi_round_trip(fake: Any, body_of: Callable[[CompiledConfig], dict]) -> dict[str, Any]:
    settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in vapi_env(fake).items()})
    with vapi.VapiApi.from_settings(settings) as api:
        return vapi.config_from_assistant(api.get_assistant(api.create_assistant(body_of(vapi.assistant_body))))


def _elevenlabs_round_trip(fake: Any, body_of: Callable[[CompiledConfig], dict]) -> dict[str, Any]:
    settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in elevenlabs_env(fake).items()})
    with el.ElevenLabsApi.from_settings(settings) as api:
        return el.config_from_agent(api.get_agent(api.create_agent(body_of(el.agent_body))))


VENDORS = {"vapi": (fake_vapi, VAPI_SETTINGS, _vapi_round_trip, vapi.refused),
           "elevenlabs": (fake_elevenlabs, ELEVENLABS_SETTINGS, _elevenlabs_round_trip, el.refused)}


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_every_setting_the_vendor_takes_reaches_it_and_comes_back_on_import(vendor: str) -> None:
    start, settings, round_trip, refused = VENDORS[vendor]
    config = CompiledConfig.model_validate({**BASE, **settings})
    assert refused(config) is None
    with start() as fake:  # a translated setting the vendor's document does not accept is a 400 here
        imported = round_trip(fake, lambda body: body(config, "assay-settings-test"))
    again = CompiledConfig.model_validate(imported)
    assert {k: getattr(again, k) for k in settings} == {k: getattr(config, k) for k in settings}
    assert again.tools[0].name == "find_slot" and again.first_message == BASE["first_message"]
    assert again.prompt == BASE["prompt"]


@pytest.mark.parametrize(("vendor", "setting", "value", "named"), [
    ("vapi", "turn", {"silence_timeout_seconds": 20}, "turn.silence_timeout_seconds"),
    ("vapi", "model", {"model": "gpt-4o"}, "model.provider"),
    ("elevenlabs", "end_call_phrases", ["goodbye"], "end_call_phrases"),
    ("elevenlabs", "transcriber", {"provider": "elevenlabs", "model": "nova-2"}, "transcriber.model"),
    ("elevenlabs", "voice", {"provider": "azure", "voice_id": "andrew"}, "voice.provider"),
])
def test_a_setting_the_vendor_cannot_take_is_refused_by_name(vendor: str, setting: str, value: Any, named: str) -> None:
    refused = VENDORS[vendor][3]
    assert named in (refused(CompiledConfig.model_validate({**BASE, setting: value})) or "")
    assert refused(CompiledConfig.model_validate(BASE)) is None


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _vapi_runner(fake: Any, **options: Any) -> VapiChatRunner:
    settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in vapi_env(fake).items()})
    return VapiChatRunner(settings, sleep=lambda s: None, **options)


def _elevenlabs_runner(fake: Any, **options: Any) -> ElevenLabsChatRunner:
    settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in elevenlabs_env(fake).items()})
    return ElevenLabsChatRunner(settings, sleep=lambda s: None, **options)


RUNNERS = {"vapi_chat": (fake_vapi, _vapi_runner, VAPI_SETTINGS, {"turn": {"silence_timeout_seconds": 20}}),
           "elevenlabs_chat": (fake_elevenlabs, _elevenlabs_runner, ELEVENLABS_SETTINGS, {"end_call_message": "Bye."})}


@pytest.fixture(params=sorted(RUNNERS))
def platform(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Callable[..., Any]]]:
    start, make, _, _ = RUNNERS[request.param]
    with start() as fake:
        yield request.param, fake, make


def test_a_run_on_the_full_config_executes_every_case(platform, engine: sa.Engine, lake: Lake) -> None:
    name, fake, make = platform
    suite = seed(engine, {**BASE, **RUNNERS[name][2]}, {"tuesday": SITUATION})
    run_id, _, _ = run(engine, lake, suite, make(fake))
    [row] = case_runs(lake, run_id).to_dicts()
    assert row["status"] == "executed", row["error"]
    assert json.loads(row["artefact"])["model"]["temperature"] == 0.3


def test_a_refused_setting_makes_every_case_an_error_naming_it_and_creates_nothing(
        platform, engine: sa.Engine, lake: Lake) -> None:
    name, fake, make = platform
    extra = RUNNERS[name][3]
    suite = seed(engine, {**BASE, **extra}, {"tuesday": SITUATION, "friday": {**SITUATION, "turns": ["Friday?"]}})
    run_id, _, _ = run(engine, lake, suite, make(fake))
    rows = case_runs(lake, run_id).to_dicts()
    named = settings_given(CompiledConfig.model_validate({**BASE, **extra}))[0]
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all(named in r["error"] for r in rows)
    assert not [r for r in fake.requests if r["method"] == "POST"]


def test_a_runs_model_replaces_the_configs_and_is_recorded(platform, engine: sa.Engine, lake: Lake) -> None:
    name, fake, make = platform
    suite = seed(engine, {**BASE, **RUNNERS[name][2]}, {"tuesday": SITUATION})
    run_id, _, _ = run(engine, lake, suite, make(fake, model="gpt-4.1", condition="gpt-4.1 trial"))
    [row] = case_runs(lake, run_id).to_dicts()
    artefact = json.loads(row["artefact"])
    assert row["status"] == "executed", row["error"]
    assert artefact["condition"] == {"name": "gpt-4.1 trial", "model_asked": "gpt-4.1"}
    assert artefact["model"]["model"] == "gpt-4.1" and artefact["model"]["temperature"] == 0.3  # the rest stays


def test_the_run_model_is_what_the_vendor_is_sent() -> None:
    from assay.core.compiled import with_model

    config = with_model(CompiledConfig.model_validate({**BASE, **VAPI_SETTINGS}), "anthropic/claude-3-5-sonnet-20241022")
    sent = vapi.assistant_body(config, "x")["model"]
    assert (sent["provider"], sent["model"], sent["temperature"]) == ("anthropic", "claude-3-5-sonnet-20241022", 0.3)
    assert vapi.assistant_body(CompiledConfig.model_validate(BASE), "x")["model"]["model"] == vapi.DEFAULT_MODEL["model"]


@pytest.mark.parametrize(("settings", "expected"), [
    ({"model": {"model": "gpt-4o", "temprature": 0.2}}, "config.model.temprature: not a setting Assay knows; the "
     "settings here are provider, model, temperature, max_tokens"),
    ({"voice": {"provider": "11labs"}}, "config.voice.voice_id: field required"),
    ({"turn": {"wait_seconds": -1}}, "config.turn.wait_seconds: input should be greater than or equal to 0"),
    ({"max_duration_seconds": "long"}, "config.max_duration_seconds: input should be a valid integer"),
])
def test_a_malformed_setting_is_named_with_what_it_should_be(settings: dict, expected: str) -> None:
    [problem] = config_problems({"config": {**BASE, **settings}})
    assert problem.startswith(expected)


def test_the_committed_schema_is_generated_from_the_model_and_checks_configs() -> None:
    path = ROOT / "docs" / "reference" / "compiled-config.schema.json"
    assert path.read_text() == schema_text(), "run `python -m assay.core.compiled docs/reference/compiled-config.schema.json`"
    schema = json.loads(path.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for good in (BASE, {**BASE, **VAPI_SETTINGS}, {**BASE, **ELEVENLABS_SETTINGS}):
        validator.validate(good)
    assert not validator.is_valid({**BASE, "voice": {"provider": "11labs", "voice_id": "x", "pitch": 2}})


def test_import_config_writes_a_redacted_config_a_suite_can_target(tmp_path: Path) -> None:
    secret_prompt = BASE["prompt"] + " Staff portal: Authorization: Bearer sk-live-abcdefghijklmnop1234"
    with fake_vapi() as fake:
        settings = Settings(**{k.removeprefix("ASSAY_").lower(): v for k, v in vapi_env(fake).items()})
        with vapi.VapiApi.from_settings(settings) as api:
            body = vapi.assistant_body(CompiledConfig.model_validate({**BASE, **VAPI_SETTINGS, "prompt": secret_prompt}), "n")
            body["backgroundSound"] = "office"
            assistant_id = api.create_assistant(body)
        out = tmp_path / "front-desk.json"
        done = assay("import-config", "vapi", assistant_id, "--out", str(out), extra_env=vapi_env(fake))
        again = assay("import-config", "vapi", assistant_id, "--out", str(out), extra_env=vapi_env(fake), check=2)
        doc = json.loads(assay("import-config", "vapi", assistant_id, "--out", str(out), "--force", "--json",
                               extra_env=vapi_env(fake)).stdout)
        missing = assay("import-config", "vapi", "asst-nope", "--out", str(tmp_path / "x.json"),
                        extra_env=vapi_env(fake), check=None)
    config = json.loads(out.read_text())
    assert config_problems({"config": config}) == []
    assert "sk-live" not in out.read_text() and "[redacted]" in config["prompt"]
    assert config["model"] == VAPI_SETTINGS["model"] and config["imported"]["left_out"] == ["backgroundSound"]
    assert "backgroundSound" in done.stdout and "exists" in again.stderr
    validate(doc)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "schemas" / "assay.import-config.json").read_text()))
    assert doc["tools"] == ["find_slot"] and "model.temperature" in doc["settings"] and doc["path"] == str(out)
    assert missing.returncode != 0 and not (tmp_path / "x.json").exists()


def test_import_config_names_the_vendors_it_knows(tmp_path: Path) -> None:
    done = assay("import-config", "retell", "agent-1", "--out", str(tmp_path / "x.json"), check=None)
    assert done.returncode != 0 and "vapi, elevenlabs" in done.stderr


def test_a_run_condition_is_refused_before_the_run_by_a_runner_that_does_not_create_the_assistant(tmp_path: Path) -> None:
    from assay.flows.demo import DEMO

    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    done = assay("run", "acme-plumbing/main-line", "--runner", "config_check", "--model", "gpt-4.1", home=home, check=2)
    assert "'config_check'" in done.stderr and "vapi_chat" in done.stderr and "--condition" in done.stderr
    assert json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"] == []
