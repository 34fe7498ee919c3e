"""recorded replays a call set: validated whole, checked against its sha256, reported in idempotent batches."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.adapters.runners import RecordedRunner
from assay.adapters.runners.callset import load_call_set
from assay.core.callset import explain
from assay.core.errors import RunnerError
from assay.core.evidence import Report, case_run_schema, evaluation_schema
from assay.core.mechanisms import MECHANISMS, family
from assay.core.plugins import runner_class
from assay.core.runner import CaseSpec, RunJob

DEMO_CALLS = Path(__file__).resolve().parents[2] / "flows" / "demo" / "calls" / "northside-recorded.jsonl"
CASE_KEYS = ("water-heater", "no-heat", "billing")


def call(call_id: str, case: str = "water-heater", **fields: Any) -> dict[str, Any]:
    return {
        "call_id": call_id,
        "case": case,
        "started_at": "2026-11-20T15:04:05Z",
        "duration_ms": 84210,
        "cost_usd": 0.231,
        "transcript": [
            {"role": "agent", "text": "Northside Heating, this is Sam.", "t": 0.0},
            {"role": "caller", "text": "My water heater is leaking. I'm at 60827.", "t": 2.1, "end_t": 4.4},
            {"role": "agent", "text": "I'm sorry, 60827 is outside our service area.", "t": 9.5},
        ],
        "tool_calls": [
            {"name": "check_service_area", "arguments": {"zip": "60827"}, "result": {"in_area": False},
             "is_error": False, "t": 6.2}
        ],
        "evaluations": [
            {"name": "handles_out_of_area", "evaluator": "hamming:guardrail", "verdict": "pass", "score": None,
             "scale_min": None, "scale_max": None, "rationale": "Told the caller plainly."},
            {"name": "overall_quality", "evaluator": "hamming:score", "score": 87, "scale_min": 0, "scale_max": 100},
        ],
        "provider": "hamming",
        "provider_ref": f"tcr_{call_id}",
        "provider_payload": {"id": f"tcr_{call_id}", "status": "completed"},
        **fields,
    }


def write(tmp_path: Path, lines: list[Any], name: str = "calls.jsonl") -> tuple[Path, str]:
    path = tmp_path / name
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def job_for(path: Path, sha: str, keys: tuple[str, ...] = CASE_KEYS, run_id: str = "run-1") -> RunJob:
    cases = tuple(CaseSpec(case_id=f"cid-{k}", case_key=k, content={}) for k in keys)
    return RunJob(run_id=run_id, team_id="northside", suite_key="recorded", target_kind="call_set",
                  target={"call_set": {"path": str(path), "sha256": sha}}, cases=cases)


def replay(job: RunJob, batch_size: int | None = None) -> list[Report]:
    runner = RecordedRunner()
    if batch_size:
        runner.batch_size = batch_size
    return list(runner.execute(job, lambda: None))


def rows(reports: list[Report]) -> tuple[list[dict], list[dict]]:
    return ([r for rep in reports for r in rep.case_runs.to_pylist()],
            [e for rep in reports for e in rep.evaluations.to_pylist()])


def test_declares_transcript_timing_tool_vendor_and_rubric() -> None:
    assert runner_class("recorded") is RecordedRunner
    assert {family(m) for m in RecordedRunner.mechanisms} == {"transcript", "timing", "tool", "vendor", "rubric"}
    assert RecordedRunner.mechanisms == {m for m in MECHANISMS if family(m) not in ("structural", "exam")}
    assert RecordedRunner.target_kinds == {"call_set"}


def test_each_call_becomes_a_case_run_with_its_evidence(tmp_path: Path) -> None:
    lines = [call("c1"), call("c2", case="no-heat"), call("c3", case="billing"), call("c4")]
    [report] = replay(job_for(*write(tmp_path, lines)))
    assert report.case_runs.schema.equals(case_run_schema())
    assert report.evaluations.schema.equals(evaluation_schema())
    runs, evals = rows([report])
    assert [(r["source_ref"], r["case_id"], r["status"]) for r in runs] == [
        ("c1", "cid-water-heater", "executed"), ("c2", "cid-no-heat", "executed"),
        ("c3", "cid-billing", "executed"), ("c4", "cid-water-heater", "executed"),
    ]
    first = runs[0]
    assert [(t["role"], t["t"], t["end_t"]) for t in first["transcript"]] == [
        ("agent", 0.0, None), ("caller", 2.1, 4.4), ("agent", 9.5, None)]
    assert first["transcript"][2]["text"] == "I'm sorry, 60827 is outside our service area."
    [tool] = first["tool_calls"]
    assert (tool["name"], tool["is_error"], tool["t"]) == ("check_service_area", False, 6.2)
    assert json.loads(tool["arguments"]) == {"zip": "60827"} and json.loads(tool["result"]) == {"in_area": False}
    assert (first["cost_usd"], first["duration_ms"], first["provider_ref"]) == (0.231, 84210.0, "tcr_c1")
    assert first["started_at"].isoformat() == "2026-11-20T15:04:05+00:00"
    assert first["artefact"] is None and first["error"] is None
    assert json.loads(first["provider_payload"]) == {"id": "tcr_c1", "status": "completed"}
    assert len(evals) == 8
    assert evals[:2] == [
        {"case_id": "cid-water-heater", "source_ref": "c1", "name": "handles_out_of_area",
         "evaluator": "hamming:guardrail", "verdict": "pass", "score": None, "scale_min": None, "scale_max": None,
         "rationale": "Told the caller plainly.", "raw": None, "met": True, "value": 1.0},
        {"case_id": "cid-water-heater", "source_ref": "c1", "name": "overall_quality", "evaluator": "hamming:score",
         "verdict": None, "score": 87.0, "scale_min": 0.0, "scale_max": 100.0, "rationale": None, "raw": None,
         "met": None, "value": 0.87},
    ]
    assert report.meta["sha256"] and report.meta["providers"] == ["hamming"]


READINGS = [  # (verdict, score, scale_min, scale_max) -> the evaluation's met and value
    (("pass", None, None, None), (True, 1.0)),
    (("fail", None, None, None), (False, 0.0)),
    (("error", None, None, None), (None, None)),
    (("unknown", 40, 0, 100), (None, 0.4)),
    (("fail", 3, 1, 5), (False, 0.5)),
    ((None, 7, None, None), (None, None)),  # a score without a scale has no value on ours
    ((None, 5, 5, 5), (None, None)),  # nor on an empty scale
    ((None, None, None, None), (None, None)),
]


def test_evaluations_are_read_as_met_and_value_by_the_vendor_mapping(tmp_path: Path) -> None:
    evaluations = [dict(name=f"e{i}", evaluator="v:x", **dict(zip(("verdict", "score", "scale_min", "scale_max"), given)))
                   for i, (given, _) in enumerate(READINGS)]
    lines = [call("c1", evaluations=evaluations), call("c2", evaluations=evaluations[::-1]), call("c3", evaluations=[])]
    _, evals = rows(replay(job_for(*write(tmp_path, lines))))
    by_name = [(e["source_ref"], e["name"], e["met"], e["value"]) for e in evals]
    want = [("c1", f"e{i}", *read) for i, (_, read) in enumerate(READINGS)]
    assert by_name == want + [("c2", n, m, v) for _, n, m, v in want[::-1]]  # file order kept


def test_optional_fields_may_be_omitted_or_null(tmp_path: Path) -> None:
    lines = [
        {"call_id": "bare", "case": "no-heat"},
        {"call_id": "nulls", "case": "no-heat", "transcript": None, "tool_calls": None, "evaluations": None,
         "started_at": None, "cost_usd": None, "provider_payload": None},
        call("results", tool_calls=[{"name": "a", "result": "plain text"}, {"name": "b", "result": None},
                                    {"name": "c", "result": [1, "x"]}, {"name": "d", "result": 5}]),
    ]
    path, sha = write(tmp_path, lines)
    assert explain(path, {"water-heater", "no-heat"}) == ([], False)
    runs, _ = rows(replay(job_for(path, sha, keys=("water-heater", "no-heat"))))
    assert len(runs) == 3
    assert runs[0]["transcript"] == [] and runs[0]["tool_calls"] == [] and runs[0]["started_at"] is None
    assert runs[1]["transcript"] == [] and runs[1]["status"] == "executed"
    results = [(t["name"], t["arguments"], t["result"], t["is_error"]) for t in runs[2]["tool_calls"]]
    assert results == [("a", "{}", '"plain text"', False), ("b", "{}", None, False),
                       ("c", "{}", '[1,"x"]', False), ("d", "{}", "5", False)]


def test_a_call_that_failed_at_the_vendor_is_an_error_case_run(tmp_path: Path) -> None:
    lines = [call("ok"), call("dropped", error="Hamming: call dropped after 14s (SIP 487)")]
    runs, evals = rows(replay(job_for(*write(tmp_path, lines), keys=("water-heater",))))
    assert [(r["source_ref"], r["status"], r["error"]) for r in runs] == [
        ("ok", "executed", None), ("dropped", "error", "Hamming: call dropped after 14s (SIP 487)"),
    ]
    assert len(runs[1]["transcript"]) == 3 and Counter(e["source_ref"] for e in evals)["dropped"] == 2


def test_a_case_with_no_recorded_call_gets_an_error_case_run(tmp_path: Path) -> None:
    path, sha = write(tmp_path, [call("c1"), call("c2", case="billing")])
    runs, _ = rows(replay(job_for(path, sha)))
    missing = [r for r in runs if r["case_id"] == "cid-no-heat"]
    assert len(runs) == 3 and len(missing) == 1
    assert missing[0]["status"] == "error" and missing[0]["source_ref"] == ""
    assert "no recorded call for case 'no-heat'" in missing[0]["error"]


def test_secrets_in_provider_payloads_and_raw_evaluations_are_redacted(tmp_path: Path) -> None:
    payload = {"id": "tcr_1", "webhook": {"headers": {"Authorization": "Bearer hmg_live_abcdefghijklmnop"}},
               "config": {"xi-api-key": "xi-123", "voice": "sam"}, "note": "plain"}
    raw = {"guardrail_id": "g1", "api_key": "k-999"}
    evaluation = {"name": "g", "evaluator": "hamming:guardrail", "verdict": "fail", "raw": raw}
    path, sha = write(tmp_path, [call("c1", provider_payload=payload, evaluations=[evaluation]), call("c2")])
    [report] = replay(job_for(path, sha, keys=("water-heater",)))
    runs, evals = rows([report])
    assert json.loads(runs[0]["provider_payload"]) == {
        "id": "tcr_1", "webhook": {"headers": {"Authorization": "[redacted]"}},
        "config": {"xi-api-key": "[redacted]", "voice": "sam"}, "note": "plain",
    }
    assert json.loads(runs[1]["provider_payload"]) == {"id": "tcr_c2", "status": "completed"}
    assert json.loads(evals[0]["raw"]) == {"guardrail_id": "g1", "api_key": "[redacted]"}
    stored = json.dumps(report.to_payload(), default=str)
    assert "hmg_live" not in stored and "xi-123" not in stored and "k-999" not in stored


def test_batches_split_at_batch_size_and_carry_their_own_evaluations(tmp_path: Path) -> None:
    lines = [call(f"c{i:02d}", case=CASE_KEYS[i % 3], evaluations=[
        {"name": f"g{j}", "evaluator": "hamming:guardrail", "verdict": "pass"} for j in range(i % 3)])
        for i in range(25)]
    reports = replay(job_for(*write(tmp_path, lines), run_id="run-42"), batch_size=10)
    assert [r.size for r in reports] == [10, 10, 5]
    assert [r.request_id for r in reports] == ["run-42:recorded:0", "run-42:recorded:1", "run-42:recorded:2"]
    for report in reports:
        refs = set(report.case_runs.column("source_ref").to_pylist())
        evaluated = report.evaluations.column("source_ref").to_pylist()
        assert set(evaluated) <= refs
        assert len(evaluated) == sum(int(ref[1:]) % 3 for ref in refs)
    runs, evals = rows(reports)
    assert [r["source_ref"] for r in runs] == [f"c{i:02d}" for i in range(25)] and len(evals) == 24


def test_a_retried_execution_reports_the_same_batches(tmp_path: Path) -> None:
    job = job_for(*write(tmp_path, [call(f"c{i}", case=CASE_KEYS[i % 3]) for i in range(7)]))
    first, second = replay(job, batch_size=3), replay(job, batch_size=3)
    assert [r.request_id for r in first] == [r.request_id for r in second] == [
        "run-1:recorded:0", "run-1:recorded:1", "run-1:recorded:2"]
    for a, b in zip(first, second, strict=True):
        assert a.case_runs.equals(b.case_runs) and a.evaluations.equals(b.evaluations)


def test_a_path_with_glob_characters_is_read_as_it_is(tmp_path: Path) -> None:
    write(tmp_path, [call("other")], name="calls-1.jsonl")  # what a glob for calls-[1]*.jsonl would match
    path, sha = write(tmp_path, [call("mine")], name="calls-[1]*.jsonl")
    runs, _ = rows(replay(job_for(path, sha, keys=("water-heater",))))
    assert [r["source_ref"] for r in runs] == ["mine"]


def test_a_changed_file_is_refused_before_anything_is_reported(tmp_path: Path) -> None:
    path, sha = write(tmp_path, [call("c1")])
    path.write_text(path.read_text().replace("Sam", "Sal"), encoding="utf-8")
    reports = RecordedRunner().execute(job_for(path, sha), lambda: None)
    with pytest.raises(RunnerError, match="changed since it was loaded") as info:
        next(reports)
    assert "reload the bundle" in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ({"call_set": {"path": "relative/calls.jsonl", "sha256": "0" * 64}}, "must be an absolute file path"),
        ({"call_set": {"path": "/abs/calls.jsonl", "sha256": "abc"}}, "must be 64 hex digits"),
        ({"call_set": {"path": "/abs/calls.jsonl"}}, "must be 64 hex digits"),
        ({"config": {"name": "x"}}, "replays a call set"),
        ({"call_set": {"path": "/nonexistent/calls.jsonl", "sha256": "0" * 64}}, "does not exist"),
    ],
)
def test_a_bad_target_is_a_runner_error(target: dict, message: str) -> None:
    job = RunJob(run_id="r", team_id="t", suite_key="s", target_kind="call_set", target=target,
                 cases=(CaseSpec(case_id="c", case_key="k", content={}),))
    with pytest.raises(RunnerError, match=message):
        replay(job)


def _turn(role: str = "agent", **kw: Any) -> dict[str, Any]:
    return {"role": role, "text": "hello", **kw}


BAD_LINES = [
    # (the second line of the file, field named in the message, what the message says is allowed)
    pytest.param('{"call_id": "c2", "case": ', "", "not valid JSON", id="malformed-json"),
    pytest.param(call("c2", case="plumbing"), "case", "the run's cases are: billing, no-heat, water-heater",
                 id="unknown-case"),
    pytest.param(call("c2", transcript=[_turn(), _turn("bot")]), "transcript[1].role",
                 "use one of caller, agent, system", id="bad-role"),
    pytest.param(call("c1"), "call_id", "'c1' is already used on line 1", id="duplicate-call-id"),
    pytest.param({k: v for k, v in call("c2").items() if k != "call_id"}, "call_id", "required", id="missing-call-id"),
    pytest.param(call("c2", case=""), "case", "required: a non-empty string", id="empty-case"),
    pytest.param(call("c2", transcirpt=[]), "transcirpt", "allowed fields are call_id, case", id="unknown-field"),
    pytest.param(call("c2", transcript="hello"), "transcript", "expected a list or null", id="transcript-not-a-list"),
    pytest.param(call("c2", transcript=["hello"]), "transcript[0]", "expected an object", id="turn-not-an-object"),
    pytest.param(call("c2", transcript=[{"role": "agent"}]), "transcript[0].text", "required: a string",
                 id="turn-without-text"),
    pytest.param(call("c2", transcript=[_turn(t="soon")]), "transcript[0].t", "expected a number of seconds",
                 id="turn-time-not-a-number"),
    pytest.param(call("c2", transcript=[_turn(t=1.0), _turn("caller", end_t="2s")]), "transcript[1].end_t",
                 "expected a number of seconds", id="turn-end-not-a-number"),
    pytest.param(call("c2", tool_calls=[{"arguments": {}}]), "tool_calls[0].name", "required", id="tool-without-name"),
    pytest.param(call("c2", tool_calls=[{"name": "x", "args": {}}]), "tool_calls[0].args",
                 "allowed fields are name, arguments, result, is_error, t", id="tool-unknown-field"),
    pytest.param(call("c2", tool_calls=[{"name": "x", "arguments": "zip=1"}]), "tool_calls[0].arguments",
                 "expected an object", id="tool-arguments-not-an-object"),
    pytest.param(call("c2", tool_calls=[{"name": "x", "is_error": "no"}]), "tool_calls[0].is_error",
                 "expected a boolean", id="tool-is-error-not-a-boolean"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h", "verdict": "passed"}]),
                 "evaluations[0].verdict", "use one of pass, fail, error, unknown", id="bad-verdict"),
    pytest.param(call("c2", evaluations=[{"name": "g"}]), "evaluations[0].evaluator", "required",
                 id="evaluation-without-evaluator"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h", "score": "high"}]),
                 "evaluations[0].score", "expected a number", id="score-not-a-number"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h", "score": 12, "scale_min": 0, "scale_max": 10}]),
                 "evaluations[0].score", "12 is outside the scale 0..10", id="score-off-its-scale"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h", "scale_min": 10, "scale_max": 0}]),
                 "evaluations[0].scale_min", "scale_min 10 is above scale_max 0", id="scale-reversed"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h"}, {"name": "g", "evaluator": "i"}]),
                 "evaluations[1].name", "'g' is already the name of evaluations[0]", id="evaluation-name-twice"),
    pytest.param(call("c2", evaluations=[{"name": "g", "evaluator": "h", "pass_score": 1}]),
                 "evaluations[0].pass_score", "allowed fields are name, evaluator", id="evaluation-unknown-field"),
    pytest.param(call("c2", started_at="2026-11-20T15:04:05"), "started_at", "with a UTC offset", id="naive-time"),
    pytest.param(call("c2", started_at="yesterday"), "started_at", "ISO 8601", id="not-a-time"),
    pytest.param(call("c2", duration_ms=-5), "duration_ms", "expected a number >= 0", id="negative-duration"),
    pytest.param(call("c2", cost_usd="0.23"), "cost_usd", "expected a number >= 0", id="cost-as-text"),
    pytest.param(call("c2", provider_payload="raw"), "provider_payload", "expected an object", id="payload-not-object"),
    pytest.param(call("c2", error={"code": 487}), "error", "expected a string", id="error-not-a-string"),
    pytest.param([call("c2")], "", "expected a JSON object (one call per line)", id="line-is-a-list"),
]


@pytest.mark.parametrize(("line", "field", "allowed"), BAD_LINES)
def test_a_bad_line_refuses_the_whole_file_naming_line_field_and_what_is_allowed(
    tmp_path: Path, line: Any, field: str, allowed: str
) -> None:
    path, sha = write(tmp_path, [call("c1"), line, call("c3")])
    reports = RecordedRunner().execute(job_for(path, sha), lambda: None)
    with pytest.raises(RunnerError) as info:
        next(reports)  # nothing is yielded before the whole file is validated
    message = str(info.value)
    assert str(path) in message and "nothing was reported" in message
    assert f"line 2{', ' + field if field else ''}: " in message, message
    assert allowed in message, message
    assert "(call 'c2')" in message or not isinstance(line, dict) or field == "call_id", message
    assert "\n  line 1" not in message and "\n  line 3" not in message, message  # good lines are not blamed


def test_every_bad_line_is_listed_with_its_physical_line_number(tmp_path: Path) -> None:
    path, sha = write(tmp_path, [call("c1"), "", call("c2", case="nope"), "   ", call("c3", transcript=[_turn("bot")])])
    with pytest.raises(RunnerError) as info:
        replay(job_for(path, sha))
    message = str(info.value)
    assert "line 3, case: 'nope' is not a case of this run" in message
    assert "line 5, transcript[0].role: 'bot' is not a role" in message


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path, sha = write(tmp_path, ["", call("c1"), "  ", call("c2"), ""])
    runs, _ = rows(replay(job_for(path, sha, keys=("water-heater",))))
    assert [r["source_ref"] for r in runs] == ["c1", "c2"]


@pytest.mark.parametrize("line", [p.values[0] for p in BAD_LINES])
def test_the_bulk_check_and_the_line_check_agree(tmp_path: Path, line: Any) -> None:
    """A file is refused exactly when the line-by-line rules find a problem, so no bad line slips through."""
    path, _ = write(tmp_path, [call("c1"), line])
    problems, _ = explain(path, set(CASE_KEYS))
    assert problems
    with pytest.raises(RunnerError):
        load_call_set(path, {k: k for k in CASE_KEYS})


def test_the_example_target_gives_every_case_evidence_for_each_declared_family(tmp_path: Path) -> None:
    cases = tuple(CaseSpec(case_id=f"cid-{k}", case_key=k, content={}) for k in CASE_KEYS)
    kind, target = RecordedRunner.example_target(tmp_path / "work", cases)
    assert kind == "call_set" and Path(target["call_set"]["path"]).is_absolute()
    job = RunJob(run_id="r", team_id="t", suite_key="s", target_kind=kind, target=target, cases=cases)
    runs, evals = rows(replay(job))
    assert Counter(r["case_id"] for r in runs) == {"cid-water-heater": 2, "cid-no-heat": 1, "cid-billing": 1}
    evaluated = {e["source_ref"] for e in evals}
    for run in runs:
        assert run["status"] == "executed" and run["transcript"] and run["tool_calls"]
        assert run["source_ref"] in evaluated
        assert "not-a-real-key" not in run["provider_payload"]


def test_the_demo_call_set_replays(tmp_path: Path) -> None:
    keys = ("water-heater-outside-area", "no-heat-elderly-caller", "maintenance-plan-question", "angry-billing-dispute")
    sha = hashlib.sha256(DEMO_CALLS.read_bytes()).hexdigest()
    runs, evals = rows(replay(job_for(DEMO_CALLS, sha, keys=keys)))
    assert Counter(r["case_id"] for r in runs) == {f"cid-{k}": 3 for k in keys}
    assert Counter(r["status"] for r in runs) == {"executed": 11, "error": 1}
    assert all(6 <= len(r["transcript"]) <= 12 for r in runs if r["status"] == "executed")
    tools = {t["name"] for r in runs for t in r["tool_calls"]}
    assert tools == {"check_service_area", "book_appointment", "lookup_invoice"}
    verdicts = Counter(e["verdict"] for e in evals if e["evaluator"] == "hamming:guardrail")
    assert verdicts["pass"] > verdicts["fail"] >= 2 and verdicts["error"] == 1
    scores = [e for e in evals if e["evaluator"] == "hamming:score"]
    assert scores and all(0 <= e["score"] <= 100 and (e["scale_min"], e["scale_max"]) == (0, 100) for e in scores)
    assert all("hmg_test" not in (r["provider_payload"] or "") for r in runs)
