"""The judging engine: precedence (missing, not executed, unsupported), one row per assignment, bad input,
and grouping assertions by hash."""

from __future__ import annotations

import polars as pl
import pytest
from judge_kit import ASSIGNMENT_SCHEMA, CALL_TRANSCRIPT, CALLS, EVERYTHING, assignment, case_run, frames, judged, one, result
from polars.testing import assert_frame_equal

from assay.transforms import judge as judge_module
from assay.transforms.judge import evaluate


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
