"""Criteria that allow undetermined results: excluded within the allowance, ``error`` over it, said in the reason."""

from __future__ import annotations

import polars as pl
import pytest
from test_verdicts import PASSING, SPEC, frame, outcome, run_row

from assay.core.criteria import CriteriaSpec, ThresholdGroup, UndeterminedAllowance
from assay.transforms.verdicts import case_verdicts, flips, run_verdicts

HUNG_UP = "the case run did not execute: telephony: caller hung up"
VENDOR = "the case run did not execute: vendor error 503"


def allowing(spec: CriteriaSpec = SPEC, **allowance: float) -> CriteriaSpec:
    return spec.model_copy(update={"allow_undetermined": UndeterminedAllowance.model_validate(allowance)})


def hung_up(run: str, case_run: str, reason: str = HUNG_UP) -> list[dict]:
    """A case run that did not execute: every result undetermined, each with ``reason``."""
    return [{**row, "reason": reason} for row in outcome(run, case_run, dict.fromkeys(PASSING))]


def night(*, hang_ups: int = 1, failing: bool = True, size: int = 20) -> pl.LazyFrame:
    """Run r1: ``size`` case runs, ``hang_ups`` of them did not execute, one failing a required key."""
    done = [outcome("r1", f"c{i:02d}", {**PASSING, **({"no_raw_liquid": False} if failing and i == 0 else {})})
            for i in range(size - hang_ups)]
    return frame(*done, *(hung_up("r1", f"h{i:02d}") for i in range(hang_ups)))


def test_without_an_allowance_one_hang_up_hides_the_real_failure_as_today() -> None:
    for spec in (SPEC, allowing(count=0)):
        row = run_row(night(), spec)
        assert row["verdict"] == "error" and row["failed_required"] == ["no_raw_liquid"]
        assert (row["counted"], row["nulls"], row["excluded"]) == (80, 4, 0)
    assert run_row(night()).get("reason") == "4 counted results could not be determined"  # today's words exactly


def test_within_the_allowance_the_hang_up_is_excluded_and_the_real_failure_shows() -> None:
    row = run_row(night(), allowing(count=4))
    assert row["verdict"] == "fail" and row["failed_required"] == ["no_raw_liquid"]
    assert (row["counted"], row["met"], row["nulls"], row["excluded"]) == (76, 75, 4, 4)
    assert (row["case_runs"], row["case_runs_counted"]) == (20, 19)
    assert row["reason"] == (f"required no_raw_liquid not met in 1 of 20 case runs; 19 of 20 case runs counted; "
                             f"4 undetermined results excluded (allowed: 4), e.g. {HUNG_UP}")


def test_over_the_allowance_is_an_error_that_says_so() -> None:
    row = run_row(night(hang_ups=2), allowing(count=4))
    assert row["verdict"] == "error" and row["excluded"] == 0 and row["counted"] == 80
    assert row["reason"] == f"8 counted results could not be determined; more than the 4 allowed, e.g. {HUNG_UP}"


def test_excluded_results_leave_every_ratio_denominator() -> None:
    # group answers_question + stays_in_role: 20 case runs x 2, 2 hung up -> 36 determined, 27 met = 0.75
    lost = {f"c{i:02d}": {"answers_question": False} for i in range(9)}
    atoms = frame(*(outcome("r1", f"c{i:02d}", {**PASSING, **lost.get(f"c{i:02d}", {})}) for i in range(18)),
                  *(hung_up("r1", f"h{i}") for i in range(2)))
    row = run_row(atoms, allowing(count=8))
    assert row["verdict"] == "pass", row["reason"]
    assert row["groups"][0] | {"keys": None} == {"keys": None, "ratio": 0.75, "min": 0.75, "ok": True, "met": 27,
                                                 "results": 36}
    assert "0.75 >= 0.75 (27 of 36 met)" in row["reason"] and row["reason"].endswith(
        f"18 of 20 case runs counted; 8 undetermined results excluded (allowed: 8), e.g. {HUNG_UP}")


@pytest.mark.parametrize(("ratio", "verdict"), [(0.2, "fail"), (0.15, "fail"), (0.14, "error")])
def test_the_ratio_form_compares_with_the_share_of_counted_results(ratio: float, verdict: str) -> None:
    # 3 hang-ups of 20 case runs: 12 undetermined of 80 counted results = 0.15 exactly
    row = run_row(night(hang_ups=3), allowing(ratio=ratio))
    assert row["verdict"] == verdict, row["reason"]
    assert row["excluded"] == (12 if verdict == "fail" else 0)
    if verdict == "fail":
        assert f"(allowed: {ratio:g} of the counted results)" in row["reason"]


def test_a_required_key_with_only_excluded_results_is_an_error_nothing_decides() -> None:
    spec = allowing(CriteriaSpec(required=["k"], threshold=[ThresholdGroup(keys=["j"], min=1.0)]), count=1)
    atoms = frame(outcome("r1", "c1", {"k": None, "j": True}), outcome("r1", "c2", {"j": True}))
    row = run_row(atoms, spec)
    assert row["verdict"] == "error" and row["excluded"] == 1
    assert row["reason"].startswith("required key k has no determined result in this run (1 undetermined result "
                                    "excluded); 1 of 2 case runs counted")


def test_the_reason_names_the_smallest_reason_text_of_the_excluded_results() -> None:
    atoms = frame(*(outcome("r1", f"c{i}", PASSING) for i in range(8)), hung_up("r1", "h1", VENDOR),
                  hung_up("r1", "h2", HUNG_UP), hung_up("r1", "h3", ""))
    row = run_row(atoms, allowing(count=12))
    assert HUNG_UP < VENDOR and row["verdict"] == "pass" and row["reason"].endswith(f"e.g. {HUNG_UP}")
    silent = run_row(frame(outcome("r1", "c1", PASSING), hung_up("r1", "h", "")), allowing(count=4))
    assert silent["reason"].endswith("e.g. no reason recorded")


def test_every_verdict_under_an_allowance_reports_its_coverage() -> None:
    row = run_row(night(hang_ups=0, failing=False), allowing(ratio=0.1))
    assert row["verdict"] == "pass" and row["reason"].endswith("; 20 of 20 case runs counted")
    assert (row["excluded"], row["case_runs"], row["case_runs_counted"]) == (0, 20, 20)


def test_the_breakdown_applies_the_allowance_to_each_case_run() -> None:
    got = {r["case_run_id"]: r for r in case_verdicts(night(size=3), allowing(count=4)).collect().to_dicts()}
    assert got["h00"]["verdict"] == "error"  # every key it has is excluded: nothing decides it
    assert got["h00"]["reason"].startswith("required key no_raw_liquid has no determined result in this case run")
    assert (got["c00"]["verdict"], got["c01"]["verdict"]) == ("fail", "pass")
    assert got["c01"]["reason"].endswith("; 1 of 1 case run counted")


def test_a_stricter_allowance_flips_the_failure_to_error() -> None:
    atoms = night()
    stamped = run_verdicts(atoms, allowing(count=4)).collect().select("run_id", stamped="verdict")
    got = flips(run_verdicts(atoms, allowing(count=3)).collect(), stamped)
    assert got.select("run_id", "stamped", "verdict").rows() == [("r1", "fail", "error")]
