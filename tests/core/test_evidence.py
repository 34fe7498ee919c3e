"""The evidence record: turn timings, and a vendor's evaluation read onto met + value by one mapping."""

from __future__ import annotations

import math

import pytest

from assay.core.evidence import CaseRun, Evaluation, Report, Turn, case_run_schema, evaluation_schema, vendor_reading

READINGS = [
    # (verdict, score, scale_min, scale_max, pass_score) -> (met, value)
    (("pass", None, None, None, None), (True, 1.0)),
    (("fail", None, None, None, None), (False, 0.0)),
    (("error", None, None, None, None), (None, None)),  # a vendor that could not judge never fails a case
    (("unknown", None, None, None, None), (None, None)),
    (("pass", 30.0, 0.0, 100.0, 70.0), (True, 0.3)),  # the verdict decides met; the score gives the value
    (("error", 30.0, 0.0, 100.0, 70.0), (None, 0.3)),
    ((None, 87.0, 0.0, 100.0, 70.0), (True, 0.87)),  # no verdict: the vendor's pass score decides
    ((None, 41.0, 0.0, 100.0, 70.0), (False, 0.41)),
    ((None, 70.0, 0.0, 100.0, 70.0), (True, 0.7)),  # at the pass score is met
    ((None, 87.0, 0.0, 100.0, None), (None, 0.87)),
    ((None, 4.0, 1.0, 5.0, None), (None, 0.75)),
    ((None, 87.0, None, None, 70.0), (True, None)),  # no declared scale: no value on ours
    ((None, 87.0, 0.0, None, None), (None, None)),
    (("pass", 5.0, 5.0, 5.0, None), (True, 1.0)),  # an empty scale: the verdict's value
    ((None, math.nan, 0.0, 1.0, 0.5), (None, None)),  # NaN is no score
    ((None, None, None, None, None), (None, None)),
]


@pytest.mark.parametrize(("given", "read"), READINGS)
def test_vendor_reading(given: tuple, read: tuple) -> None:
    met, value = vendor_reading(*given)
    assert met is read[0] and value == (pytest.approx(read[1]) if read[1] is not None else None)


@pytest.mark.parametrize(("given", "read"), READINGS)
def test_from_vendor_keeps_the_vendors_scale_and_reads_it(given: tuple, read: tuple) -> None:
    verdict, score, low, high, pass_score = given
    e = Evaluation.from_vendor(name="q", evaluator="v:x", verdict=verdict, score=score, scale_min=low, scale_max=high,
                               pass_score=pass_score, rationale="why", raw={"k": 1})
    assert (e.verdict, e.scale_min, e.scale_max, e.rationale, e.raw) == (verdict, low, high, "why", {"k": 1})
    assert (e.met, e.value) == vendor_reading(*given)


def test_an_evaluation_built_directly_is_read_without_a_pass_score_unless_met_or_value_is_given() -> None:
    failed = Evaluation(name="q", evaluator="v", verdict="fail")
    assert (failed.met, failed.value) == (False, 0.0)
    scored = Evaluation(name="q", evaluator="v", score=8, scale_min=0, scale_max=10)
    assert (scored.met, scored.value) == (None, 0.8)
    given = Evaluation(name="q", evaluator="v", verdict="pass", met=None, value=0.25)  # a runner that knows better
    assert (given.met, given.value) == (None, 0.25)


def test_the_report_carries_turn_ends_and_the_reading() -> None:
    run = CaseRun(case_id="c", transcript=[Turn(role="caller", text="hi", t=0.0, end_t=1.25),
                                           Turn(role="agent", text="hello", t=2.0)],
                  evaluations=[Evaluation.from_vendor(name="q", evaluator="v:x", score=3, scale_min=1, scale_max=5)])
    report = Report.from_case_runs("r", [run])
    assert report.case_runs.schema.equals(case_run_schema()) and report.evaluations.schema.equals(evaluation_schema())
    assert [t["end_t"] for t in report.case_runs.column("transcript")[0].as_py()] == [1.25, None]
    [e] = report.evaluations.to_pylist()
    assert (e["score"], e["scale_min"], e["scale_max"], e["met"], e["value"]) == (3.0, 1.0, 5.0, None, 0.5)
