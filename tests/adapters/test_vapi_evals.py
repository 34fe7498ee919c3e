"""``vapi_evals`` against the fake VAPI: assertions with a home become eval judge plans, VAPI's verdicts come
back as native evaluations, judging maps them onto the assertions and fails the rest naming the runner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa
from pydantic import SecretStr
from runner_kit import case_runs, evaluations, run, scratch_rows, seed

from assay.adapters.runners.platform_chat import EXAMPLE_CONFIG
from assay.adapters.runners.vapi_evals import VapiEvalsRunner, caller_turns
from assay.adapters.vapi import judge_plan, mock_conversation
from assay.core.runner import AssertionSpec
from assay.core.settings import Settings
from assay.fakes.openapi import vapi_document
from assay.fakes.vapi import EVAL_RUN_COST, FakeVapi
from assay.storage.catalog.assertions import assignments
from assay.storage.catalog.runs import create_run, job_for_run
from assay.storage.lake import Lake
from assay.transforms.judge import evaluate

KEY = "vapi-secret-key-0123456789"
TURNS = ["Hi, my ZIP is 60614", "Can you come today?"]
ASSERTIONS = [
    {"key": "thanks", "mechanism": "transcript.contains", "params": {"text": "Anything else", "role": "agent"}},
    {"key": "area_named", "mechanism": "transcript.regex", "params": {"text": "SERVICE (AREA|ZONE)", "role": "agent",
                                                                        "case_insensitive": True}},
    {"key": "says_goodbye", "mechanism": "transcript.contains", "params": {"text": "Goodbye", "role": "agent"}},
    {"key": "refers", "mechanism": "rubric", "params": {"rubric": "Refers the caller to a licensed contractor"}},
    {"key": "polite", "mechanism": "rubric", "params": {"rubric": "Stays polite"}},
    {"key": "no_prices", "mechanism": "transcript.not_contains", "params": {"text": "$"}},
    {"key": "anyone_says_zip", "mechanism": "transcript.contains", "params": {"text": "60614"}},
]
NATIVE = {"thanks", "area_named", "says_goodbye", "refers", "polite"}


@pytest.fixture
def vapi() -> Iterator[FakeVapi]:
    with FakeVapi(key=KEY) as fake:
        fake.faults.scripts = {
            "replies": [{"match": "today", "reply": "60614 is in our service area. Anything else?"}],
            "judge": [{"match": "licensed contractor", "verdict": "fail"}],
        }
        yield fake


@pytest.fixture
def lake(tmp_path: Path, engine: sa.Engine) -> Lake:
    return Lake(str(tmp_path / "lake"), engine)


def _runner(vapi: FakeVapi, **kwargs) -> VapiEvalsRunner:
    settings = Settings(vapi_base_url=vapi.url, vapi_api_key=SecretStr(KEY))
    return VapiEvalsRunner(settings, poll_interval=0.01, sleep=lambda s: None, **kwargs)


def _judged(engine: sa.Engine, lake: Lake, run_id: str) -> dict[str, dict]:
    stored = case_runs(lake, run_id)
    with engine.connect() as conn:
        todo = assignments(conn, [run_id], stored)
    out = evaluate(stored, evaluations(lake, run_id), todo, {"vapi_evals": VapiEvalsRunner.mechanisms})
    return {r["assertion_key"]: r for r in out.to_dicts()}


def test_translations_validate_against_vapis_document() -> None:
    specs = [AssertionSpec(f"id{k}", a["key"], 1, a["mechanism"], a["params"]) for k, a in enumerate(ASSERTIONS)]
    plans = {s.key: judge_plan(s) for s in specs}
    assert plans["thanks"] == {"type": "regex", "content": "/Anything\\ else/"}
    assert plans["area_named"] == {"type": "regex", "content": "/SERVICE (AREA|ZONE)/i"}
    assert plans["refers"]["type"] == "ai" and "licensed contractor" in plans["refers"]["model"]["messages"][0]["content"]
    assert "{{messages}}" in plans["refers"]["model"]["messages"][0]["content"]
    assert plans["no_prices"] is None and plans["anyone_says_zip"] is None  # no home: VAPI judges the agent's replies only
    for plan in filter(None, plans.values()):
        assert vapi_document().problems("POST", "/eval", mock_conversation("assay-x", TURNS, plan)) == []
    assert caller_turns({"caller": "Dana", "wants": "A repair today"}) == ["Hi, this is Dana. A repair today"]


def test_vapi_verdicts_answer_the_assertions_they_judged_and_the_rest_fail_naming_the_runner(
        engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    suite = seed(engine, EXAMPLE_CONFIG, {"zip": {"caller": "Dana", "turns": TURNS}}, ASSERTIONS)
    run_id, result, _ = run(engine, lake, suite, _runner(vapi))
    assert result.error is None
    [row] = case_runs(lake, run_id).to_dicts()
    assert row["status"] == "executed" and row["cost_usd"] == pytest.approx(len(NATIVE) * EVAL_RUN_COST)
    assert [t["role"] for t in row["transcript"]] == ["caller", "agent", "caller", "agent"]
    assert row["transcript"][3]["text"] == "60614 is in our service area. Anything else?"
    assert json.loads(row["tool_calls"][0]["arguments"]) == {"zip": "60614"}  # the prompt names check_service_area
    evals = evaluations(lake, run_id)
    assert sorted(evals["name"]) == sorted(f"assertion:{k}" for k in NATIVE)
    assert set(evals["evaluator"]) == {"vapi:eval"}
    verdicts = dict(zip(evals["name"].str.strip_prefix("assertion:"), evals["verdict"], strict=True))
    assert verdicts == {"thanks": "pass", "area_named": "pass", "says_goodbye": "fail", "refers": "fail", "polite": "pass"}
    judged = _judged(engine, lake, run_id)
    for key in NATIVE:
        assert (judged[key]["met"], judged[key]["evaluator"]) == (verdicts[key] == "pass", "vapi:eval"), key
    for key in ("a1", "no_prices"):  # structural.tool_attached and transcript.not_contains have no home here
        assert judged[key]["met"] is False and judged[key]["evaluator"] == "assay:unsupported"
        assert 'runner "vapi_evals"' in judged[key]["reason"]
    assert (judged["anyone_says_zip"]["met"], judged["anyone_says_zip"]["evaluator"]) == (True, "assay:transcript")
    assert vapi.live_objects().keys() <= {"chat", "eval_run"}  # the assistant and every eval are gone
    rows = scratch_rows(engine, run_id)
    assert sorted(r.kind for r in rows) == ["assistant"] + ["eval"] * len(NATIVE) and all(r.deleted_at for r in rows)


def test_a_case_without_translatable_assertions_still_has_its_conversation(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    suite = seed(engine, EXAMPLE_CONFIG, {"dana": {"caller": "Dana", "wants": "a repair today"}})
    run_id, result, _ = run(engine, lake, suite, _runner(vapi))
    [row] = case_runs(lake, run_id).to_dicts()
    assert result.error is None and row["status"] == "executed" and evaluations(lake, run_id).height == 0
    assert row["transcript"][0] == {"role": "caller", "text": "Hi, this is Dana. a repair today", "t": None, "end_t": None}
    assert vapi.live_objects().keys() <= {"chat", "eval_run"}


def test_polling_waits_for_slow_runs_and_renews_the_lease_every_round(engine: sa.Engine, vapi: FakeVapi) -> None:
    vapi.faults.finish_after = 0.3
    suite = seed(engine, EXAMPLE_CONFIG, {"zip": {"caller": "Dana", "turns": TURNS}}, ASSERTIONS[:1])
    job = job_for_run(engine, create_run(engine, suite, "vapi_evals").run_id)
    beats: list[float] = []
    runner = VapiEvalsRunner(Settings(vapi_base_url=vapi.url, vapi_api_key=SecretStr(KEY)), poll_interval=0.05)
    [report] = list(runner.execute(job, lambda: beats.append(1.0)))  # no scratch book: the runner cleans up itself
    [verdict] = report.evaluations["verdict"].to_pylist()
    polls = [r for r in vapi.requests if r["path"].startswith("/eval/run/")]
    assert verdict == "pass" and len(polls) >= 3 and len(beats) >= len(polls)
    assert vapi.live_objects().keys() <= {"chat", "eval_run"}


def test_runs_still_going_at_the_deadline_are_unknown_and_everything_is_deleted(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    vapi.faults.never_finish = True
    suite = seed(engine, EXAMPLE_CONFIG, {"zip": {"caller": "Dana", "turns": TURNS}}, ASSERTIONS[:2])
    later = lambda: datetime.now(UTC) + timedelta(hours=1)  # noqa: E731  (the deadline has passed)
    run_id, result, _ = run(engine, lake, suite, _runner(vapi, clock=later), deadline=timedelta(minutes=5))
    [row] = case_runs(lake, run_id).to_dicts()
    assert result.error is None and row["status"] == "error" and "had not ended by the run's deadline" in row["error"]
    assert set(evaluations(lake, run_id)["verdict"]) == {"unknown"}
    judged = _judged(engine, lake, run_id)
    assert judged["thanks"]["met"] is None and judged["thanks"]["evaluator"] == "assay:execution"
    assert vapi.live_objects().keys() <= {"chat", "eval_run"}


def test_an_eval_run_that_ends_in_error_gives_no_verdict_never_a_fail(engine: sa.Engine, lake: Lake, vapi: FakeVapi) -> None:
    vapi.faults.scripts = {"eval_error": "The Assistant returned an error"}
    suite = seed(engine, EXAMPLE_CONFIG, {"zip": {"caller": "Dana", "turns": TURNS}}, ASSERTIONS[:1])
    run_id, result, _ = run(engine, lake, suite, _runner(vapi))
    [row] = case_runs(lake, run_id).to_dicts()
    assert row["status"] == "error" and "ended error: The Assistant returned an error" in row["error"]
    [ev] = evaluations(lake, run_id).to_dicts()
    assert (ev["verdict"], ev["met"], ev["value"]) == ("error", None, None)
    assert pl.Series([KEY]).is_in(evaluations(lake, run_id)["raw"]).sum() == 0
