"""config_check executes nothing: one case run per case, the compiled config as its artefact."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from assay.adapters.runners import ConfigCheckRunner
from assay.adapters.runners.config_check import config_problems
from assay.core.compiled import PLACEHOLDER, CompiledConfig
from assay.core.errors import RunnerError
from assay.core.evidence import Report, case_run_schema, evaluation_schema
from assay.core.mechanisms import MECHANISMS
from assay.core.plugins import runner_class
from assay.core.runner import CaseSpec, RunJob

DEMO_CONFIG = Path(__file__).resolve().parents[2] / "flows" / "demo" / "configs" / "acme-main-line.json"

CONFIG = {
    "name": "Main line",
    "prompt": "You answer for {{business_name}}. Check the ZIP with check_service_area.",
    "variables": {"business_name": "Acme"},
    "tools": [{"name": "check_service_area", "description": "ZIP in area?"}],
    "first_message": "Hello",
}


def _job(target: Any, n: int = 3, kind: str = "config", run_id: str = "run-1") -> RunJob:
    cases = tuple(CaseSpec(case_id=f"cid-{i}", case_key=f"case-{i}", content={"title": f"case {i}"}) for i in range(n))
    return RunJob(run_id=run_id, team_id="team-a", suite_key="suite-a", target_kind=kind, target=target, cases=cases)


def _run(runner: ConfigCheckRunner, job: RunJob) -> list[Report]:
    return list(runner.execute(job, lambda: None))


def test_declares_the_structural_family_only() -> None:
    assert runner_class("config_check") is ConfigCheckRunner
    assert ConfigCheckRunner.mechanisms == {m for m in MECHANISMS if m.startswith("structural.")}
    assert ConfigCheckRunner.target_kinds == {"config"} and ConfigCheckRunner.synchronous


def test_one_executed_case_run_per_case_with_the_config_as_artefact() -> None:
    before = datetime.now(UTC)
    [report] = _run(ConfigCheckRunner(), _job({"config": CONFIG}))
    assert report.case_runs.schema.equals(case_run_schema())
    assert report.evaluations.schema.equals(evaluation_schema()) and report.evaluations.num_rows == 0
    rows = report.case_runs.to_pylist()
    assert [r["case_id"] for r in rows] == ["cid-0", "cid-1", "cid-2"]
    for row in rows:
        assert row["status"] == "executed" and row["error"] is None
        assert json.loads(row["artefact"]) == CONFIG
        assert row["transcript"] == [] and row["tool_calls"] == []
        assert row["source_ref"] == "" and row["provider_payload"] is None
        assert 0 <= row["duration_ms"] < 1000
        assert row["started_at"].tzinfo is not None
        assert before - timedelta(seconds=1) <= row["started_at"] <= datetime.now(UTC) + timedelta(seconds=1)


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({"config": {**CONFIG, "prompt": None}}, "config.prompt"),
        ({"config": {k: v for k, v in CONFIG.items() if k != "prompt"}}, "config.prompt: missing"),
        ({"config": {**CONFIG, "name": ""}}, "config.name"),
        ({"config": {**CONFIG, "tools": {"check_service_area": {}}}}, "config.tools: expected a list"),
        ({"config": {**CONFIG, "tools": [{"name": "a"}, {"description": "no name"}]}}, "config.tools[1].name"),
        ({"config": {**CONFIG, "tools": [{"name": "a"}, {"name": "a"}]}}, "config.tools[1].name: 'a' is attached"),
        ({"config": {**CONFIG, "tools": ["check_service_area"]}}, "config.tools[0]: expected an object"),
        ({"config": {**CONFIG, "variables": ["business_name"]}}, "config.variables"),
        ({"config": {**CONFIG, "first_message": 5}}, "config.first_message"),
        ({"config": "not a config"}, "config: expected an object"),
        ({"compiled": CONFIG}, 'target: expected {"config"'),
    ],
)
def test_a_malformed_config_makes_every_case_run_an_error_naming_the_field(target: dict, field: str) -> None:
    [report] = _run(ConfigCheckRunner(), _job(target))
    rows = report.case_runs.to_pylist()
    assert len(rows) == 3
    for row in rows:
        assert row["status"] == "error"
        assert row["error"].startswith("compiled config is malformed: ") and field in row["error"]
    assert report.evaluations.num_rows == 0  # an error is never turned into a verdict


def test_several_problems_are_all_named() -> None:
    problems = config_problems({"config": {"name": "x", "tools": "none"}})
    assert any(p.startswith("config.prompt") for p in problems) and any(p.startswith("config.tools") for p in problems)


def test_each_problem_is_worded_exactly_in_field_order() -> None:
    config = {"prompt": "  ", "variables": None, "first_message": 5,
              "tools": [{"name": "a"}, "t", {"description": 3}, {"name": "a", "description": None}, {"name": " "}]}
    assert config_problems({"config": config}) == [
        "config.name: missing; a non-empty string is required",
        "config.prompt: expected a non-empty string, got a string",
        "config.variables: expected an object of name -> value, got null",
        "config.first_message: expected a string, got a number",
        "config.tools[1]: expected an object with a name, got a string",
        "config.tools[2].name: expected a non-empty string, got null",
        "config.tools[2].description: expected a string, got a number",
        "config.tools[3].name: 'a' is attached twice; tool names must be unique",
        "config.tools[3].description: expected a string, got null",
        "config.tools[4].name: expected a non-empty string, got a string",
    ]
    assert config_problems({"config": {**CONFIG, "tools": {}}}) == ["config.tools: expected a list of tools, got an object"]
    assert config_problems({"config": [CONFIG]}) == [
        "config: expected an object with name, prompt, variables and tools, got a list"]
    assert config_problems({"config": {**CONFIG, "first_message": None, "server": {"any": "thing"}}}) == []  # kept as is


def test_the_model_reads_a_well_formed_config_keeping_every_key() -> None:
    config = json.loads(DEMO_CONFIG.read_text())
    model = CompiledConfig.model_validate(config)
    assert model.model_dump(exclude_unset=True) == config
    assert model.tools[0].name == "check_service_area" and model.tools[0].model_extra["parameters"]["required"] == ["zip"]
    with pytest.raises(ValidationError, match="'a' is attached twice"):
        CompiledConfig.model_validate({**CONFIG, "tools": [{"name": "a"}, {"name": "a"}]})
    with pytest.raises(ValidationError):
        CompiledConfig.model_validate({**CONFIG, "name": " "})


def test_secrets_in_the_config_are_redacted_in_the_artefact() -> None:
    config = {**CONFIG, "server": {"url": "https://hooks.example.invalid", "secret": "hook-secret"},
              "tools": [{"name": "t", "server": {"headers": {"Authorization": "Bearer abcdefghijklmnop"}}}]}
    [report] = _run(ConfigCheckRunner(), _job({"config": config}, n=1))
    artefact = json.loads(report.case_runs.to_pylist()[0]["artefact"])
    assert artefact["server"] == {"url": "https://hooks.example.invalid", "secret": "[redacted]"}
    assert artefact["tools"][0]["server"]["headers"]["Authorization"] == "[redacted]"
    assert "hook-secret" not in json.dumps(artefact)


def test_reports_split_at_batch_size_with_stable_request_ids() -> None:
    runner = ConfigCheckRunner()
    runner.batch_size = 2
    job = _job({"config": CONFIG}, n=5, run_id="run-7")
    first, second = _run(runner, job), _run(runner, job)
    assert [r.size for r in first] == [2, 2, 1]
    assert [r.request_id for r in first] == ["run-7:config_check:0", "run-7:config_check:1", "run-7:config_check:2"]
    assert [r.request_id for r in second] == [r.request_id for r in first]
    ids = [row["case_id"] for r in first for row in r.case_runs.to_pylist()]
    assert ids == [f"cid-{i}" for i in range(5)]


def test_a_call_set_target_is_refused() -> None:
    job = _job({"call_set": {"path": "/x.jsonl", "sha256": "0" * 64}}, kind="call_set")
    with pytest.raises(RunnerError, match="reads a compiled config"):
        _run(ConfigCheckRunner(), job)


def test_the_example_target_is_well_formed(tmp_path: Path) -> None:
    job = _job(None, n=2)
    kind, target = ConfigCheckRunner.example_target(tmp_path, job.cases)
    assert kind == "config" and config_problems(target) == []
    [report] = _run(ConfigCheckRunner(), _job(target, n=2))
    assert {r["status"] for r in report.case_runs.to_pylist()} == {"executed"}


def test_the_demo_config_is_well_formed_and_leaves_one_placeholder_unresolved() -> None:
    config = json.loads(DEMO_CONFIG.read_text())
    assert config_problems({"config": config}) == []
    assert 10 <= len(config["prompt"].splitlines()) <= 20
    placeholders = set(PLACEHOLDER.findall(config["prompt"] + config.get("first_message", "")))
    assert placeholders - set(config["variables"]) == {"after_hours_fee"}
    assert {t["name"] for t in config["tools"]} == {"check_service_area", "book_appointment", "transfer_to_dispatcher"}
    assert "service area" in config["prompt"] and "referral" in config["prompt"]
