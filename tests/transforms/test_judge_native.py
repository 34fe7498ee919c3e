"""A runner's own verdict on an assertion (an evaluation named ``assertion:<key>``) answers that assertion."""

from __future__ import annotations

import polars as pl
from judge_kit import assignment, case_run, evaluation, frames

from assay.core.evidence import native_evaluation_name
from assay.transforms.judge import evaluate

KEY = "key_a1"  # judge_kit's assertion key for assertion id a1
SAYS_HELLO = [("agent", "Hello there")]


def _judge(runs, assignments, evaluations=(), supported=None, extra: dict | None = None) -> list[dict]:
    case_runs, evals, todo = frames(runs, assignments, evaluations)
    if extra:
        evals = evals.with_columns(**{name: pl.Series(name, values) for name, values in extra.items()})
    out = evaluate(case_runs, evals, todo, supported or {"r": frozenset({"transcript.contains"})})
    assert out.height == todo.height
    return out.sort("assertion_id", "case_run_id").select("case_run_id", "met", "value", "reason", "evaluator").to_dicts()


def _native(verdict, *, case_run_id="c1", key=KEY, rationale=None, evaluator="vapi:eval"):
    return evaluation(case_run_id, native_evaluation_name(key), evaluator=evaluator, verdict=verdict, rationale=rationale)


def test_a_native_pass_overrides_what_the_mechanism_would_say() -> None:
    contains = assignment("transcript.contains", {"text": "goodbye"})
    [alone] = _judge([case_run(transcript=SAYS_HELLO)], [contains])
    assert alone["met"] is False and alone["evaluator"] == "assay:transcript"
    [answered] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("pass", rationale="VAPI judged it pass")])
    assert answered == {"case_run_id": "c1", "met": True, "value": 1.0, "reason": "VAPI judged it pass",
                        "evaluator": "vapi:eval"}


def test_a_native_fail_is_not_met_with_the_vendors_words_or_a_clear_text() -> None:
    contains = assignment("transcript.contains", {"text": "Hello"})
    [said] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("fail", rationale="the reply lacked it")])
    assert (said["met"], said["value"], said["reason"]) == (False, 0.0, "the reply lacked it")
    [silent] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("fail")])
    assert (silent["met"], silent["reason"]) == (False, "the runner's own evaluation judged it not met")


def test_a_native_verdict_answers_a_mechanism_the_runner_does_not_declare() -> None:
    rubric = assignment("rubric", {"rubric": "Offers a referral"})
    [unsupported] = _judge([case_run(runner="vapi_evals")], [rubric], supported={"vapi_evals": frozenset()})
    assert unsupported["met"] is False and unsupported["evaluator"] == "assay:unsupported"
    assert '"vapi_evals"' in unsupported["reason"]
    [native] = _judge([case_run(runner="vapi_evals")], [rubric], [_native("pass")], supported={"vapi_evals": frozenset()})
    assert (native["met"], native["evaluator"], native["reason"]) == (True, "vapi:eval", None)


def test_a_case_run_that_did_not_execute_stays_undetermined() -> None:
    contains = assignment("transcript.contains", {"text": "Hello"})
    [row] = _judge([case_run(status="error", error="HTTP 503")], [contains], [_native("pass")])
    assert row["met"] is None and row["evaluator"] == "assay:execution" and "HTTP 503" in row["reason"]


def test_a_vendor_that_could_not_judge_gives_null_never_a_fail() -> None:
    contains = assignment("transcript.contains", {"text": "Hello"})
    [error] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("error", rationale="eval run ended error")])
    assert (error["met"], error["value"], error["reason"]) == (None, None, "eval run ended error")
    [unknown] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("unknown")])
    assert (unknown["met"], unknown["reason"]) == (None, "the runner's own evaluation reached no verdict (unknown)")


def test_two_native_evaluations_for_one_assertion_answer_nothing() -> None:
    contains = assignment("transcript.contains", {"text": "Hello"})
    [row] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native("pass"), _native("fail")])
    assert (row["met"], row["value"], row["evaluator"]) == (None, None, "assay:vendor")
    assert row["reason"] == 'the runner reported 2 evaluations named "assertion:key_a1"; expected one'


def test_met_and_value_come_from_the_evaluation_when_it_carries_them() -> None:
    """A scored vendor verdict keeps its normalised value (here 0.7 of the scale) and its mapped met."""
    contains = assignment("transcript.contains", {"text": "Hello"})
    [row] = _judge([case_run(transcript=SAYS_HELLO)], [contains], [_native(None, rationale="scored 70/100")],
                   extra={"met": [True], "value": [0.7]})
    assert (row["met"], row["value"], row["reason"]) == (True, 0.7, "scored 70/100")


def test_only_the_named_assertion_on_the_same_case_run_is_answered() -> None:
    contains = [assignment("transcript.contains", {"text": "Hello"}, case_run_id=c) for c in ("c1", "c2")]
    other = assignment("transcript.contains", {"text": "Hello"}, case_run_id="c1", assertion_id="a2")
    rows = _judge([case_run("c1", transcript=SAYS_HELLO), case_run("c2", transcript=SAYS_HELLO)], [*contains, other],
                  [_native("fail", case_run_id="c1")])
    by = {(r["case_run_id"], r["evaluator"]): r["met"] for r in rows}
    assert by == {("c1", "vapi:eval"): False, ("c2", "assay:transcript"): True, ("c1", "assay:transcript"): True}
