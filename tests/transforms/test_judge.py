"""Deterministic judging: each mechanism's met / value / reason / evaluator, the precedence rules, and a
differential test of the vectorised evaluator against the row-wise reference on random data."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assay.core.ids import canonical_json
from assay.core.mechanisms import MECHANISMS, ValidationError, mechanisms_of, validate_params
from assay.transforms import judge as judge_module
from assay.transforms.judge import AWAITING_JUDGE, NO_JUDGE, evaluate
from assay.transforms.reference import evaluate_rowwise

TURN = pl.Struct({"role": pl.String, "text": pl.String, "t": pl.Float64})
CALL = pl.Struct({"name": pl.String, "arguments": pl.String, "result": pl.String, "is_error": pl.Boolean, "t": pl.Float64})
CASE_RUN_SCHEMA = {
    "case_run_id": pl.String, "runner": pl.String, "status": pl.String, "error": pl.String,
    "transcript": pl.List(TURN), "tool_calls": pl.List(CALL), "artefact": pl.String,
    "cost_usd": pl.Float64, "duration_ms": pl.Float64,
}
EVALUATION_SCHEMA = {
    "case_run_id": pl.String, "name": pl.String, "evaluator": pl.String, "verdict": pl.String,
    "score": pl.Float64, "scale_min": pl.Float64, "scale_max": pl.Float64, "rationale": pl.String,
}
ASSIGNMENT_SCHEMA = {
    "case_run_id": pl.String, "assertion_id": pl.String, "assertion_key": pl.String,
    "assertion_version": pl.Int64, "mechanism": pl.String, "params": pl.String,
}
EVERYTHING = {"r": frozenset(MECHANISMS)}
CONFIG = {
    "name": "receptionist",
    "prompt": "You answer for {{ business }}. Never quote prices. Hours: {{hours}}.",
    "variables": {"business": "Acme Plumbing", "hours": "8-5"},
    "tools": [{"name": "check_service_area"}, {"name": "book_appointment", "description": "x"}],
}


# ----------------------------------------------------------------------------------------- builders

def case_run(case_run_id: str = "c1", *, runner: str = "r", status: str = "executed", error: str | None = None,
             transcript: list[tuple[str, str]] | None = (), tool_calls: list[tuple[str, Any]] | None = (),
             artefact: Any = None, cost_usd: float | None = None, duration_ms: float | None = None) -> dict[str, Any]:
    """A case-run row; turns as (role, text), calls as (name, arguments: dict -> JSON text, or raw text)."""
    return {
        "case_run_id": case_run_id, "runner": runner, "status": status, "error": error,
        "transcript": None if transcript is None else [{"role": r, "text": t, "t": float(k)} for k, (r, t) in enumerate(transcript)],
        "tool_calls": None if tool_calls is None else [
            {"name": n, "arguments": a if isinstance(a, str) or a is None else json.dumps(a), "result": None,
             "is_error": False, "t": 1.0} for n, a in tool_calls],
        "artefact": artefact if isinstance(artefact, str) or artefact is None else json.dumps(artefact),
        "cost_usd": cost_usd, "duration_ms": duration_ms,
    }


def evaluation(case_run_id: str = "c1", name: str = "guard", *, evaluator: str = "hamming:guardrail",
               verdict: str | None = None, score: float | None = None, rationale: str | None = None) -> dict[str, Any]:
    return {"case_run_id": case_run_id, "name": name, "evaluator": evaluator, "verdict": verdict, "score": score,
            "scale_min": None, "scale_max": None, "rationale": rationale}


def assignment(mechanism: str, params: dict[str, Any] | None = None, case_run_id: str = "c1",
               assertion_id: str = "a1", version: int = 1) -> dict[str, Any]:
    """An assignment whose params are validated and canonical, as the catalog stores them."""
    canonical = canonical_json(validate_params(mechanism, params or {}).model_dump())
    return {"case_run_id": case_run_id, "assertion_id": assertion_id, "assertion_key": f"key_{assertion_id}",
            "assertion_version": version, "mechanism": mechanism, "params": canonical}


def frames(runs: list[dict], assignments: list[dict], evaluations: list[dict] = ()) -> tuple[pl.DataFrame, ...]:
    return (pl.DataFrame(runs, schema=CASE_RUN_SCHEMA), pl.DataFrame(list(evaluations), schema=EVALUATION_SCHEMA),
            pl.DataFrame(assignments, schema=ASSIGNMENT_SCHEMA))


def judged(runs: list[dict], assignments: list[dict], evaluations: list[dict] = (), supported=EVERYTHING,
           judge: str | None = None) -> pl.DataFrame:
    """Evaluate with Polars and with the reference; they must agree. Sorted by assertion, then case run."""
    case_runs, evals, todo = frames(runs, assignments, evaluations)
    got = evaluate(case_runs, evals, todo, supported, judge)
    ref = evaluate_rowwise(case_runs, evals, todo, supported, judge)
    keys = ["assertion_id", "assertion_version", "case_run_id"]
    assert got.height == todo.height
    assert_frame_equal(got.sort(keys), ref.sort(keys))
    return got.sort(keys)


def one(runs: list[dict] | dict, mechanism: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Judge one assertion on one case run; the result columns of the single row."""
    runs = [runs] if isinstance(runs, dict) else runs
    out = judged(runs, [assignment(mechanism, params, runs[0]["case_run_id"])], **kwargs)
    assert out.height == 1
    return {k: out.row(0, named=True)[k] for k in ("met", "value", "reason", "evaluator")}


def result(met: bool | None, value: float | None, reason: str | None, evaluator: str) -> dict[str, Any]:
    return {"met": met, "value": value, "reason": reason, "evaluator": evaluator}


# ----------------------------------------------------------------------------------------- structural

def test_clause_present() -> None:
    run = case_run(artefact=CONFIG)
    assert one(run, "structural.clause_present", {"clause": "Never quote prices"}) == result(True, None, None, "assay:structural")
    assert one(run, "structural.clause_present", {"clause": "never quote prices"}) == result(
        False, None, 'the compiled prompt does not contain the clause "never quote prices"', "assay:structural")
    assert one(run, "structural.clause_present", {"clause": "NEVER QUOTE", "case_insensitive": True})["met"] is True
    assert one(run, "structural.clause_present", {"clause": "refunds", "case_insensitive": True})["reason"] == (
        'the compiled prompt does not contain the clause "refunds" (ignoring case)')


@pytest.mark.parametrize("artefact,reason", [
    (None, "the case run has no compiled artefact"),
    ("{not json", "the compiled artefact is not a JSON object"),
    ("[1, 2]", "the compiled artefact is not a JSON object"),
    ({"name": "x", "variables": {}}, "the compiled artefact has no prompt"),
    ({"name": "x", "prompt": 42}, "the compiled artefact has no prompt"),
])
def test_structural_checks_without_a_usable_artefact_are_null(artefact: Any, reason: str) -> None:
    for mechanism, params in [("structural.clause_present", {"clause": "x"}), ("structural.variables_resolve", {})]:
        assert one(case_run(artefact=artefact), mechanism, params) == result(None, None, reason, "assay:structural")


def test_variables_resolve() -> None:
    assert one(case_run(artefact=CONFIG), "structural.variables_resolve") == result(True, 0.0, None, "assay:structural")
    config = {**CONFIG, "prompt": "{{a}} {{ b }} {{c}} {{a}} {{d}} {{ e }}", "variables": {"a": None, "b": "", "c": 0, "e": "ok"}}
    assert one(case_run(artefact=config), "structural.variables_resolve") == result(
        False, 3.0, "unresolved variables: a, b, d", "assay:structural")
    no_variables = {"name": "x", "prompt": "hi {{who}}"}
    assert one(case_run(artefact=no_variables), "structural.variables_resolve")["reason"] == "unresolved variables: who"
    assert one(case_run(artefact={"prompt": "plain", "variables": []}), "structural.variables_resolve") == result(
        None, None, "the compiled artefact's variables are not an object", "assay:structural")


def test_tool_attached() -> None:
    run = case_run(artefact=CONFIG)
    assert one(run, "structural.tool_attached", {"tool": "book_appointment"}) == result(True, None, None, "assay:structural")
    assert one(run, "structural.tool_attached", {"tool": "transfer_call"}) == result(
        False, None, 'no tool named "transfer_call" is attached; attached: check_service_area, book_appointment',
        "assay:structural")
    assert one(case_run(artefact={"prompt": "p"}), "structural.tool_attached", {"tool": "t"})["reason"] == (
        'no tool named "t" is attached; attached: none')
    assert one(case_run(artefact={"prompt": "p", "tools": "t"}), "structural.tool_attached", {"tool": "t"}) == result(
        None, None, "the compiled artefact's tools are not a list", "assay:structural")


def test_structural_results_are_per_case_run_when_many_share_an_artefact() -> None:
    runs = [case_run(f"c{k}", artefact=CONFIG if k % 2 else {**CONFIG, "tools": []}) for k in range(6)]
    todo = [assignment("structural.tool_attached", {"tool": "check_service_area"}, f"c{k}") for k in range(6)]
    assert judged(runs, todo)["met"].to_list() == [False, True, False, True, False, True]


# ----------------------------------------------------------------------------------------- transcript

CALL_TRANSCRIPT = [("agent", "Hello, how can I help?"), ("caller", "I want a Refund."), ("agent", "Sorry to hear that.")]


def test_contains() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.contains", {"text": "Refund"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.contains", {"text": "refund"}) == result(False, None, 'no turn contains "refund"', "assay:transcript")
    assert one(run, "transcript.contains", {"text": "refund", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.contains", {"text": "Refund", "role": "agent"}) == result(
        False, None, 'no turn by the agent contains "Refund"', "assay:transcript")
    assert one(run, "transcript.contains", {"text": "REFUND", "role": "caller", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.contains", {"text": "x", "role": "agent", "case_insensitive": True})["reason"] == (
        'no turn by the agent contains "x" (ignoring case)')


def test_text_never_matches_across_turns() -> None:
    run = case_run(transcript=[("agent", "good"), ("caller", "bye")])
    assert one(run, "transcript.contains", {"text": "goodbye"})["met"] is False
    assert one(run, "transcript.contains", {"text": "good\nbye"})["met"] is False
    assert one(run, "transcript.regex", {"text": "good.*bye"})["met"] is False
    assert one(run, "transcript.regex", {"text": r"good[\s\S]bye"})["met"] is False


def test_not_contains() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.not_contains", {"text": "lawyer"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.not_contains", {"text": "sorry", "case_insensitive": True}) == result(
        False, None, 'a turn contains "sorry" (ignoring case)', "assay:transcript")
    assert one(run, "transcript.not_contains", {"text": "Refund", "role": "agent"})["met"] is True


def test_regex_searches_each_turn() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.regex", {"text": r"^I want a \w+\.$"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.regex", {"text": r"^Sorry", "role": "agent"})["met"] is True
    assert one(run, "transcript.regex", {"text": r"^sorry"})["met"] is False
    assert one(run, "transcript.regex", {"text": r"^sorry", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.regex", {"text": r"\d{5}", "role": "caller"}) == result(
        False, None, r'no turn by the caller matches the pattern "\d{5}"', "assay:transcript")


def test_transcript_checks_without_a_transcript_are_null() -> None:
    run = case_run(transcript=None)
    for mechanism, params in [("transcript.contains", {"text": "x"}), ("transcript.not_contains", {"text": "x"}),
                              ("transcript.regex", {"text": "x"}), ("transcript.max_turns", {"max": 3})]:
        assert one(run, mechanism, params) == result(None, None, "the case run recorded no transcript", "assay:transcript")
    empty = case_run(transcript=[])
    assert one(empty, "transcript.contains", {"text": "x"})["met"] is False
    assert one(empty, "transcript.not_contains", {"text": "x"})["met"] is True
    assert one(empty, "transcript.max_turns", {"max": 0}) == result(True, 0.0, None, "assay:transcript")


def test_max_turns() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.max_turns", {"max": 3}) == result(True, 3.0, None, "assay:transcript")
    assert one(run, "transcript.max_turns", {"max": 2}) == result(
        False, 3.0, "the conversation took 3 turns; at most 2 allowed", "assay:transcript")


def test_max_latency_and_max_cost() -> None:
    run = case_run(duration_ms=5000.5, cost_usd=0.25)
    assert one(run, "transcript.max_latency", {"max_ms": 6000}) == result(True, 5000.5, None, "assay:transcript")
    assert one(run, "transcript.max_latency", {"max_ms": 5000}) == result(
        False, 5000.5, "the case run took longer than 5000 ms", "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 0.25}) == result(True, 0.25, None, "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 0.1}) == result(
        False, 0.25, "the case run cost more than 0.1 USD", "assay:transcript")


@pytest.mark.parametrize("measured", [None, math.nan])
def test_max_latency_and_cost_without_a_measurement_are_null(measured: float | None) -> None:
    run = case_run(duration_ms=measured, cost_usd=measured)
    assert one(run, "transcript.max_latency", {"max_ms": 1}) == result(
        None, None, "the case run recorded no duration", "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 1}) == result(None, None, "the case run recorded no cost", "assay:transcript")


# ----------------------------------------------------------------------------------------- tool calls

CALLS = [
    ("check_service_area", {"zip": "60614"}),
    ("check_service_area", {"zip": 60614, "urgent": True}),
    ("book_appointment", {"slot": "9:00", "zip": "60614", "note": 'say "hi" \\ bye'}),
    ("book_appointment", '{"zip": "60614"'),  # malformed: never matches arguments
    ("lookup", {"nested": {"zip": "60614"}}),
]


def test_tool_called_by_name() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.called", {"tool": "check_service_area"}) == result(True, 2.0, None, "assay:tool")
    assert one(run, "tool.called", {"tool": "transfer_call"}) == result(False, 0.0, '"transfer_call" was not called', "assay:tool")


@pytest.mark.parametrize("arguments,count", [
    ({"zip": "60614"}, 1),          # the string, not the number
    ({"zip": 60614}, 1),            # the number, not the string
    ({"zip": 60614.0}, 1),          # numbers compare as numbers
    ({"urgent": True}, 1),
    ({"urgent": "true"}, 0),
    ({"zip": 60614, "urgent": True}, 1),
    ({"zip": "60614", "urgent": True}, 0),
    ({"zip": "6061"}, 0),
])
def test_tool_called_with_arguments_compares_json_typed(arguments: dict, count: int) -> None:
    got = one(case_run(tool_calls=CALLS), "tool.called", {"tool": "check_service_area", "arguments": arguments})
    assert (got["met"], got["value"]) == (count > 0, float(count))
    if not count:
        assert got["reason"] == f'"check_service_area" was not called with arguments {json.dumps(arguments, sort_keys=True)}'


def test_tool_called_arguments_with_quotes_and_backslashes_and_only_top_level_keys() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.called", {"tool": "book_appointment", "arguments": {"note": 'say "hi" \\ bye'}})["value"] == 1.0
    assert one(run, "tool.called", {"tool": "book_appointment", "arguments": {"zip": "60614"}})["value"] == 1.0
    assert one(run, "tool.called", {"tool": "lookup", "arguments": {"zip": "60614"}})["met"] is False


def test_tool_not_called() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.not_called", {"tool": "transfer_call"}) == result(True, 0.0, None, "assay:tool")
    assert one(run, "tool.not_called", {"tool": "book_appointment"}) == result(
        False, 2.0, '"book_appointment" was called 2 time(s)', "assay:tool")
    assert one(run, "tool.not_called", {"tool": "check_service_area", "arguments": {"zip": 60614}})["reason"] == (
        '"check_service_area" was called with arguments {"zip": 60614} 1 time(s)')


def test_tool_checks_without_tool_call_evidence_are_null() -> None:
    for mechanism in ("tool.called", "tool.not_called"):
        assert one(case_run(tool_calls=None), mechanism, {"tool": "x"}) == result(
            None, None, "the case run recorded no tool calls", "assay:tool")


# ----------------------------------------------------------------------------------------- vendor

@pytest.mark.parametrize("kwargs,params,expected", [
    ({"verdict": "pass"}, {}, result(True, 1.0, None, "hamming:guardrail")),
    ({"verdict": "fail", "rationale": "quoted a price"}, {}, result(
        False, 0.0, "the vendor judged it failed: quoted a price", "hamming:guardrail")),
    ({"verdict": "fail"}, {}, result(False, 0.0, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"verdict": "error", "rationale": "upstream 503"}, {}, result(
        None, None, "the vendor reported an error: upstream 503", "hamming:guardrail")),
    ({"verdict": "unknown"}, {}, result(None, None, "the vendor could not reach a verdict (unknown)", "hamming:guardrail")),
    ({"score": 0.8}, {"pass_score": 0.7}, result(True, 0.8, None, "hamming:guardrail")),
    ({"score": 0.6}, {"pass_score": 0.7}, result(False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "verdict": "pass"}, {"pass_score": 0.7}, result(
        False, 0.6, "the vendor's score is below pass_score 0.7", "hamming:guardrail")),
    ({"score": 0.6, "verdict": "fail"}, {}, result(False, 0.6, "the vendor judged it failed: no rationale given", "hamming:guardrail")),
    ({"score": 0.6}, {}, result(None, 0.6, "the vendor gave a score but no verdict: set pass_score on the assertion to map "
                                          "the score onto met", "hamming:guardrail")),
    ({}, {}, result(None, None, "the vendor reported neither a verdict nor a score", "hamming:guardrail")),
    ({"verdict": "maybe"}, {}, result(None, None, 'the vendor reported an unrecognised verdict "maybe"', "hamming:guardrail")),
])
def test_vendor_evaluation(kwargs: dict, params: dict, expected: dict) -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", **params}, evaluations=[evaluation(**kwargs)])
    assert got == expected


def test_a_vendor_error_is_never_a_failure() -> None:
    got = one(case_run(), "vendor.evaluation", {"name": "guard", "pass_score": 0.5},
              evaluations=[evaluation(verdict="error", score=0.1, rationale="")])
    assert got["met"] is None and got["reason"] == "the vendor reported an error: no rationale given"


def test_vendor_evaluation_missing_or_ambiguous_is_null() -> None:
    other = [evaluation(name="other", verdict="pass"), evaluation("c2", verdict="pass")]
    assert one([case_run(), case_run("c2")], "vendor.evaluation", {"name": "guard"}, evaluations=other) == result(
        None, None, 'the runner reported no evaluation named "guard"', "assay:vendor")
    twice = [evaluation(verdict="pass"), evaluation(verdict="fail")]
    assert one(case_run(), "vendor.evaluation", {"name": "guard"}, evaluations=twice) == result(
        None, None, 'the runner reported 2 evaluations named "guard"; expected one', "assay:vendor")


# ----------------------------------------------------------------------------------------- rubric

def test_rubric_without_a_judge_is_null_with_the_fix() -> None:
    assert one(case_run(), "rubric", {"rubric": "polite"}) == result(None, None, NO_JUDGE, "assay:judge")
    assert NO_JUDGE == "no judge configured: set ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL"


def test_rubric_with_a_judge_is_left_for_the_judge() -> None:
    assert one(case_run(), "rubric", {"rubric": "polite"}, judge="qwen-72b") == result(
        None, None, AWAITING_JUDGE, "assay:judge:qwen-72b")


# ----------------------------------------------------------------------------------------- precedence

def test_an_unsupported_mechanism_fails_naming_mechanism_and_runner() -> None:
    supported = {"hamming": frozenset({"vendor.evaluation", "transcript.contains"})}
    run = case_run(runner="hamming", tool_calls=CALLS)
    assert one(run, "tool.called", {"tool": "check_service_area"}, supported=supported) == result(
        False, None, 'mechanism "tool.called" is not supported by runner "hamming"; it supports: transcript.contains, '
                     "vendor.evaluation", "assay:unsupported")
    assert one(case_run(runner="stranger"), "rubric", {"rubric": "x"}, supported=supported) == result(
        False, None, 'mechanism "rubric" is not supported by runner "stranger"; it supports no mechanisms', "assay:unsupported")


def test_a_case_run_that_did_not_execute_is_an_error_not_a_failure() -> None:
    failed = case_run(status="error", error="vendor returned 500", runner="stranger")
    for mechanism, params in [("transcript.contains", {"text": "x"}), ("tool.not_called", {"tool": "x"}),
                              ("vendor.evaluation", {"name": "guard"}), ("rubric", {"rubric": "x"})]:
        assert one(failed, mechanism, params) == result(
            None, None, "the case run did not execute: vendor returned 500", "assay:execution")
    assert one(case_run(status="error"), "transcript.max_turns", {"max": 1})["reason"] == (
        "the case run did not execute: no reason given")


def test_a_case_run_missing_from_the_batch_is_null() -> None:
    out = judged([case_run("c1")], [assignment("transcript.max_turns", {"max": 1}, "ghost")])
    assert out.select("met", "reason", "evaluator").row(0) == (
        None, "case run ghost is not in this batch of evidence", "assay:execution")


def test_exactly_one_row_per_assignment() -> None:
    runs = [case_run(f"c{k}", transcript=CALL_TRANSCRIPT, status="error" if k == 3 else "executed") for k in range(5)]
    todo = [assignment("transcript.contains", {"text": "Refund"}, f"c{k}", assertion_id=a)
            for k in range(5) for a in ("a1", "a2")]  # a1 and a2 share mechanism and params
    todo += [assignment("transcript.contains", {"text": "Refund"}, f"c{k}", assertion_id="a1", version=2) for k in (0, 4)]
    todo += [assignment("rubric", {"rubric": "x"}, c, assertion_id="a3") for c in ("c1", "zz")]
    out = judged(runs, todo)
    assert out.height == len(todo)
    pairs = out.select("case_run_id", "assertion_id", "assertion_version").rows()
    assert sorted(pairs) == sorted((a["case_run_id"], a["assertion_id"], a["assertion_version"]) for a in todo)
    assert out.filter(pl.col("assertion_id") == "a2")["met"].to_list() == [True, True, True, None, True]


def test_no_assignments_gives_an_empty_frame_with_the_result_columns() -> None:
    out = evaluate(*frames([case_run()], [])[:2], pl.DataFrame(schema=ASSIGNMENT_SCHEMA), EVERYTHING)
    assert out.height == 0
    assert out.schema == pl.Schema({**ASSIGNMENT_SCHEMA, "met": pl.Boolean, "value": pl.Float64,
                                    "reason": pl.String, "evaluator": pl.String})


def test_bad_input_is_refused() -> None:
    case_runs, evals, _ = frames([case_run(), case_run()], [])
    todo = pl.DataFrame([assignment("rubric", {"rubric": "x"})], schema=ASSIGNMENT_SCHEMA)
    with pytest.raises(ValueError, match="duplicate case_run_id"):
        evaluate(case_runs, evals, todo, EVERYTHING)
    case_runs, evals, _ = frames([case_run()], [])
    with pytest.raises(ValueError, match="unknown mechanisms"):
        evaluate(case_runs, evals, todo.with_columns(mechanism=pl.lit("transcript.vibes")), EVERYTHING)
    with pytest.raises(ValueError, match="not valid for mechanism"):
        evaluate(case_runs, evals, todo.with_columns(params=pl.lit('{"rubric": ""}')), EVERYTHING)


def test_a_hash_collision_between_assertions_still_gives_the_right_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [case_run("c1", transcript=CALL_TRANSCRIPT), case_run("c2", transcript=[("agent", "hi")])]
    todo = [assignment("transcript.contains", {"text": "hi"}, c, "a1") for c in ("c1", "c2")]
    todo += [assignment("transcript.max_turns", {"max": 1}, c, "a2") for c in ("c1", "c2")]
    expected = judged(runs, todo)
    monkeypatch.setattr(judge_module, "_group_hash", lambda keys: pl.lit(0, pl.UInt64))
    case_runs, evals, assignments = frames(runs, todo)
    got = evaluate(case_runs, evals, assignments, EVERYTHING).sort("assertion_id", "assertion_version", "case_run_id")
    assert_frame_equal(got, expected)
    assert got["met"].to_list() == [False, True, False, True]


# ----------------------------------------------------------------------------------------- validation

def test_regex_params_refuse_what_either_engine_cannot_compile() -> None:
    for pattern in [r"(?<=a)b", r"(a)\1", r"\p{L}", "[[:alpha:]]", "a{,3}", "("]:
        with pytest.raises(ValidationError, match="cannot be used") as info:
            validate_params("transcript.regex", {"text": pattern})
        assert "look-around" in str(info.value)  # the message says which syntax is allowed
    assert validate_params("transcript.regex", {"text": r"^\d{5}(?:-\d{4})?\b"}).text == r"^\d{5}(?:-\d{4})?\b"


@pytest.mark.parametrize("arguments,message", [
    ({"zip": {"code": "1"}}, "must be a string, number or boolean"),
    ({"zip": None}, "must be a string, number or boolean"),
    ({"zip": [1]}, "must be a string, number or boolean"),
    ({"zip code": "1"}, "is not allowed"),
    ({"1zip": "1"}, "is not allowed"),
    ({"a.b": "1"}, "is not allowed"),
    ({"n": 2**60}, "limited to"),
    ({"n": math.inf}, "finite"),
])
def test_tool_arguments_are_scalars_with_identifier_keys(arguments: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        validate_params("tool.called", {"tool": "t", "arguments": arguments})


def test_tool_arguments_keep_their_json_types() -> None:
    got = validate_params("tool.called", {"tool": "t", "arguments": {"s": "1", "i": 1, "f": 1.5, "b": True}}).arguments
    assert got == {"s": "1", "i": 1, "f": 1.5, "b": True}
    assert [type(v) for v in got.values()] == [str, int, float, bool]


# ----------------------------------------------------------------------------------------- differential

WORDS = ("hello refund Refund REFUND sorry thanks appointment 60614 94110 café CAFÉ Straße STRASSE zip "
         "yes no price quote a.b a-b ab email@example.com ok, well: um").split()
PATTERNS = [r"\bref(und|unds)\b", r"^hello", r"\d{5}", r"caf[eé]", r"(?:yes|no)\s+thanks", r"a.b", r"^$", r"um\W*$",
            r"stra(ss|ß)e", r"[A-Z]{3,}"]
ARGUMENTS = ['{"zip": "60614"}', '{"zip": 60614}', '{"zip": 60614.0}', '{"urgent": true}', '{"urgent": "true"}',
             '{"n": 1}', '{"n": 1.0}', '{"n": true}', '{"a": {"zip": "60614"}}', "[1]", "not json", None, "{}",
             '{"zip": "6061\\"4"}', '{"q": "a\\\\b"}', '{"city": "Zürich"}', '{"zip": "60614", "urgent": false}',
             '{"zip": NaN}', '{"zip": "60614", "zip": "94110"}']
TOOL_NAMES = ["check_service_area", "book_appointment", "transfer_call", "lookup", None]
ARTEFACTS = [
    json.dumps(CONFIG), None, "{oops", "[]", "null",
    json.dumps({"prompt": "Hi {{ name }}, {{missing}} and {{empty}} {{zero}}", "variables": {"name": "Bo", "empty": "", "zero": 0}}),
    json.dumps({"prompt": "NEVER QUOTE PRICES for {{x}}", "variables": None, "tools": None}),
    json.dumps({"prompt": 3, "tools": [{"name": "book_appointment"}, "junk", {"name": 5}]}),
    json.dumps({"prompt": "never quote prices", "variables": [], "tools": {"name": "x"}}),
]
RUNNERS = {
    "full": frozenset(MECHANISMS), "chat": mechanisms_of("transcript", "tool", "rubric"),
    "voice": mechanisms_of("transcript", "vendor"), "config": mechanisms_of("structural"),
}


def _random_text(rng: random.Random) -> str | None:
    if rng.random() < 0.03:
        return None
    return rng.choice([" ", "\n", " ", ", "]).join(rng.choice(WORDS) for _ in range(rng.randint(0, 7)))


def _random_case_runs(rng: random.Random, n: int) -> tuple[list[dict], list[dict]]:
    runs, evals = [], []
    for k in range(n):
        cid = f"cr-{k:05d}"
        failed = rng.random() < 0.04
        transcript = None if rng.random() < 0.04 else [
            {"role": rng.choice(["caller", "agent", "agent", "system", None]), "text": _random_text(rng), "t": float(j)}
            for j in range(rng.randint(0, 9))]
        calls = None if rng.random() < 0.04 else [
            {"name": rng.choice(TOOL_NAMES), "arguments": rng.choice(ARGUMENTS), "result": None, "is_error": False, "t": 1.0}
            for _ in range(rng.randint(0, 4))]
        measured = [rng.choice([None, math.nan, rng.uniform(0, 10_000), 5000.0]) if rng.random() < 0.15
                    else rng.uniform(0, 10_000) for _ in range(2)]
        runs.append({
            "case_run_id": cid, "runner": rng.choice([*RUNNERS, "stranger"]), "status": "error" if failed else "executed",
            "error": rng.choice([None, "", "HTTP 500 from vendor"]) if failed else None,
            "transcript": transcript, "tool_calls": calls, "artefact": rng.choice(ARTEFACTS),
            "duration_ms": measured[0], "cost_usd": None if measured[1] is None else measured[1] / 10_000,
        })
        for name in ("guard", "scorer"):
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                evals.append(evaluation(
                    cid, name, evaluator=f"vendor:{name}",
                    verdict=rng.choice([None, "pass", "fail", "error", "unknown", "maybe"]),
                    score=rng.choice([None, None, rng.random(), math.nan, 0.5]),
                    rationale=rng.choice([None, "", "because"])))
    return runs, evals


def _random_assertions(rng: random.Random) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = [
        ("structural.clause_present", {"clause": "Never quote prices"}),
        ("structural.clause_present", {"clause": "never quote", "case_insensitive": True}),
        ("structural.variables_resolve", {}),
        ("structural.tool_attached", {"tool": "book_appointment"}),
        ("transcript.max_turns", {"max": 4}), ("transcript.max_latency", {"max_ms": 5000}),
        ("transcript.max_cost", {"max_usd": 0.5}), ("rubric", {"rubric": "be kind"}),
        ("vendor.evaluation", {"name": "guard"}), ("vendor.evaluation", {"name": "scorer", "pass_score": 0.5}),
        ("vendor.evaluation", {"name": "absent"}),
    ]
    for k in range(8):
        role = rng.choice([None, "caller", "agent", "system"])
        ci = rng.random() < 0.5
        out.append((["transcript.contains", "transcript.not_contains"][k % 2],
                    {"text": rng.choice(WORDS + ["refund please", "a.b", "\n"]), "role": role, "case_insensitive": ci}))
    for pattern in PATTERNS:
        out.append(("transcript.regex", {"text": pattern, "role": rng.choice([None, "agent"]), "case_insensitive": rng.random() < 0.5}))
    for k, tool in enumerate(TOOL_NAMES[:4]):
        out.append((["tool.called", "tool.not_called"][k % 2], {"tool": tool}))
    for arguments in [{"zip": "60614"}, {"zip": 60614}, {"urgent": True}, {"n": 1}, {"zip": "60614", "urgent": False},
                      {"q": "a\\b"}, {"zip": '6061"4'}, {"city": "Zürich"}]:
        out.append((rng.choice(["tool.called", "tool.not_called"]), {"tool": rng.choice(TOOL_NAMES[:2]), "arguments": arguments}))
    return out


def test_vectorised_and_rowwise_agree_on_random_data() -> None:
    rng = random.Random(20261129)
    runs, evals = _random_case_runs(rng, 3000)
    ids = [r["case_run_id"] for r in runs]
    todo = []
    for k, (mechanism, params) in enumerate(_random_assertions(rng)):
        # most assertions cover every case run (the whole batch is tested once); some only a few (picked first)
        scope = ids if k % 4 else rng.sample(ids, 40) + ["cr-missing"]
        todo += [assignment(mechanism, params, cid, assertion_id=f"a{k:02d}") for cid in scope]
    todo += [assignment("transcript.max_turns", {"max": 4}, cid, assertion_id="twin") for cid in ids[:500]]
    case_runs, evaluations, assignments = frames(runs, todo, evals)
    supported = dict(RUNNERS)

    got = evaluate(case_runs, evaluations, assignments, supported, None)
    ref = evaluate_rowwise(case_runs, evaluations, assignments, supported, None)
    keys = ["assertion_id", "assertion_version", "case_run_id"]
    assert got.height == ref.height == assignments.height
    assert_frame_equal(got.sort(keys), ref.sort(keys))

    # The data must exercise every mechanism's outcomes, or agreement proves little.
    outcomes = got.group_by("mechanism").agg(pl.col("met").unique().alias("seen"), pl.col("evaluator").unique())
    seen = {row["mechanism"]: set(row["seen"]) for row in outcomes.iter_rows(named=True)}
    assert set(seen) == set(MECHANISMS)
    for mechanism, outcomes_seen in seen.items():
        assert {False, None} <= outcomes_seen, mechanism
        if mechanism != "rubric":
            assert True in outcomes_seen, mechanism
    evaluators = set(got["evaluator"].unique())
    assert {"assay:execution", "assay:unsupported", "assay:structural", "assay:transcript", "assay:tool",
            "assay:vendor", "assay:judge", "vendor:guard", "vendor:scorer"} <= evaluators
