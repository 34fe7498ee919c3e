"""Verdicts from result atoms (product §2): each rule at its boundary, on tiny hand-built frames."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assay.core.criteria import CriteriaSpec, ThresholdGroup
from assay.core.errors import EvidenceError
from assay.transforms.verdicts import case_verdicts, flips, latest, run_verdicts

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)

SPEC = CriteriaSpec(
    required=["no_raw_liquid", "every_variable_resolves"],
    threshold=[ThresholdGroup(keys=["answers_question", "stays_in_role"], min=0.75)],
    ignore=["mentions_business_hours"],
)
PASSING = {"no_raw_liquid": True, "every_variable_resolves": True, "answers_question": True, "stays_in_role": True}

SCHEMA = {
    "result_id": pl.String, "outcome_id": pl.String, "run_id": pl.String, "case_run_id": pl.String,
    "case_key": pl.String, "assertion_id": pl.String, "assertion_key": pl.String, "assertion_version": pl.Int32,
    "mechanism": pl.String, "met": pl.Boolean, "value": pl.Float64, "reason": pl.String, "evaluator": pl.String,
    "judged_at": pl.Datetime("us", "UTC"), "team_id": pl.String, "date": pl.String,
}


def outcome(run: str, case_run: str, results: dict[str, bool | None], *, outcome_id: str | None = None,
            at: int = 0, evaluator: str = "assay:transcript", case_key: str | None = None) -> list[dict]:
    """The atoms of one complete outcome: one row per key, judged ``at`` minutes after T0."""
    oid = outcome_id or f"{case_run}-o{at}"
    return [
        {"result_id": f"{oid}-{key}", "outcome_id": oid, "run_id": run, "case_run_id": case_run,
         "case_key": case_key or f"case-{case_run}", "assertion_id": f"a-{key}", "assertion_key": key,
         "assertion_version": 1, "mechanism": "transcript", "met": met, "value": None if met is None else float(met),
         "reason": "", "evaluator": evaluator, "judged_at": T0 + timedelta(minutes=at),
         "team_id": "t1", "date": "2026-11-20"}
        for key, met in results.items()
    ]


def frame(*outcomes: list[dict]) -> pl.LazyFrame:
    return pl.DataFrame([row for o in outcomes for row in o], schema=SCHEMA).lazy()


def run_row(atoms: pl.LazyFrame, spec: CriteriaSpec = SPEC, run: str = "r1") -> dict:
    rows = run_verdicts(atoms, spec).collect().filter(pl.col("run_id") == run).to_dicts()
    assert len(rows) == 1
    return rows[0]


def four_case_runs(**overrides: dict[str, bool | None]) -> pl.LazyFrame:
    """Run r1 with case runs c1..c4, all passing unless ``overrides[c]`` changes some keys."""
    return frame(*(outcome("r1", c, {**PASSING, **overrides.get(c, {})}) for c in ("c1", "c2", "c3", "c4")))


# --- the pass / fail / error rules ---------------------------------------------------------------


def test_all_met_passes_with_its_detail() -> None:
    row = run_row(four_case_runs())
    assert row["verdict"] == "pass"
    assert (row["counted"], row["met"], row["nulls"], row["failed_required"]) == (16, 16, 0, [])
    assert row["groups"] == [{"keys": ["answers_question", "stays_in_role"], "ratio": 1.0, "min": 0.75, "ok": True,
                              "met": 8, "results": 8}]
    assert row["evaluators"] == ["assay:transcript"]
    assert row["reason"].startswith("16 counted results; every required result met; group 0")


def test_group_ratio_equal_to_min_passes() -> None:
    # 8 group results, 2 not met: 6/8 == 0.75
    row = run_row(four_case_runs(c1={"answers_question": False}, c2={"stays_in_role": False}))
    assert row["verdict"] == "pass"
    assert row["groups"][0]["ratio"] == 0.75 and row["groups"][0]["ok"] is True


def test_group_ratio_just_below_min_fails_and_says_why() -> None:
    # 5/8 = 0.625 < 0.75
    row = run_row(four_case_runs(c1={"answers_question": False, "stays_in_role": False}, c2={"stays_in_role": False}))
    assert row["verdict"] == "fail"
    assert row["groups"][0]["ok"] is False and row["failed_required"] == []
    assert row["reason"] == "group 0 (answers_question, stays_in_role) 0.62 < 0.75 (5 of 8 met)"


def test_ratio_shown_truncated_never_rounded_up_to_min() -> None:
    spec = CriteriaSpec(threshold=[ThresholdGroup(keys=["k"], min=0.75)])
    # 299 of 400 met = 0.7475: shown 0.74, not 0.75
    atoms = frame(*(outcome("r1", f"c{i}", {"k": i >= 101}) for i in range(400)))
    row = run_row(atoms, spec)
    assert row["verdict"] == "fail" and row["reason"].startswith("group 0 (k) 0.74 < 0.75 (299 of 400 met)")


def test_required_failure_in_one_case_run_of_four_fails_the_run() -> None:
    row = run_row(four_case_runs(c3={"every_variable_resolves": False}))
    assert row["verdict"] == "fail"
    assert row["failed_required"] == ["every_variable_resolves"]
    assert row["reason"] == "required every_variable_resolves not met in 1 of 4 case runs"


def test_reason_counts_case_runs_and_joins_every_failure() -> None:
    row = run_row(four_case_runs(
        c1={"every_variable_resolves": False, "answers_question": False, "stays_in_role": False},
        c2={"every_variable_resolves": False, "answers_question": False},
    ))
    assert row["verdict"] == "fail"
    assert row["reason"] == ("required every_variable_resolves not met in 2 of 4 case runs; "
                             "group 0 (answers_question, stays_in_role) 0.62 < 0.75 (5 of 8 met)")


def test_a_counted_null_is_an_error_even_when_a_required_one_failed() -> None:
    row = run_row(four_case_runs(c1={"no_raw_liquid": False}, c2={"answers_question": None}))
    assert row["verdict"] == "error"
    assert row["nulls"] == 1 and row["failed_required"] == ["no_raw_liquid"]
    assert row["reason"] == "1 counted result could not be determined"


def test_null_in_a_required_key_is_an_error_and_counted_in_plural() -> None:
    row = run_row(four_case_runs(c1={"no_raw_liquid": None}, c2={"no_raw_liquid": None}, c3={"stays_in_role": None}))
    assert row["verdict"] == "error" and row["reason"] == "3 counted results could not be determined"


@pytest.mark.parametrize("key", ["mentions_business_hours", "polite_greeting"])
def test_null_or_failure_in_an_ignored_or_unnamed_key_does_not_matter(key: str) -> None:
    base = four_case_runs()
    for met in (None, False):
        extra = frame(*(outcome("r1", c, {key: met}) for c in ("c1", "c2", "c3", "c4")))
        row = run_row(pl.concat([base, extra]))
        assert row["verdict"] == "pass", (key, met, row["reason"])
        assert row["counted"] == 16 and row["nulls"] == 0


def test_ignore_wins_over_a_threshold_group_naming_the_same_key() -> None:
    spec = CriteriaSpec(threshold=[ThresholdGroup(keys=["a", "b"], min=1.0)], ignore=["b"])
    atoms = frame(outcome("r1", "c1", {"a": True, "b": False}), outcome("r1", "c2", {"a": True, "b": None}))
    row = run_row(atoms, spec)
    assert row["verdict"] == "pass" and row["counted"] == 2
    assert row["groups"][0]["keys"] == ["a"]


def test_a_required_key_with_no_result_is_an_error_not_a_pass() -> None:
    atoms = frame(*(outcome("r1", c, {k: v for k, v in PASSING.items() if k != "no_raw_liquid"}) for c in ("c1", "c2")))
    row = run_row(atoms)
    assert row["verdict"] == "error"
    assert row["reason"] == "required key no_raw_liquid has no result in this run"


def test_a_threshold_group_with_no_result_is_an_error() -> None:
    atoms = frame(outcome("r1", "c1", {"no_raw_liquid": True, "every_variable_resolves": True}))
    row = run_row(atoms)
    assert row["verdict"] == "error"
    assert row["reason"] == "threshold group 0 (answers_question, stays_in_role) has no result in this run"
    assert row["groups"][0]["ratio"] is None and row["groups"][0]["ok"] is None


def test_a_run_with_nothing_counted_under_a_spec_asking_nothing_passes() -> None:
    atoms = frame(outcome("r1", "c1", {"polite_greeting": False, "mentions_business_hours": None}))
    row = run_row(atoms, CriteriaSpec(ignore=["mentions_business_hours"]))
    assert row["verdict"] == "pass" and row["reason"] == "no counted results"
    assert (row["counted"], row["failed_required"], row["groups"], row["evaluators"]) == (0, [], [], [])


# --- latest outcome ----------------------------------------------------------------------------------


def test_an_older_failing_outcome_is_ignored() -> None:
    atoms = frame(
        outcome("r1", "c1", {**PASSING, "no_raw_liquid": False}, at=0),
        outcome("r1", "c1", PASSING, at=5),
    )
    assert run_row(atoms)["verdict"] == "pass"
    assert latest(atoms).collect()["outcome_id"].unique().to_list() == ["c1-o5"]


def test_an_older_passing_outcome_does_not_mask_a_newer_failure() -> None:
    atoms = frame(
        outcome("r1", "c1", PASSING, at=0),
        outcome("r1", "c1", {**PASSING, "no_raw_liquid": False}, at=5),
        outcome("r1", "c2", PASSING, at=1),
    )
    row = run_row(atoms)
    assert row["verdict"] == "fail" and row["counted"] == 8
    assert row["reason"] == "required no_raw_liquid not met in 1 of 2 case runs"


def test_a_tie_in_judged_at_is_broken_by_the_greatest_outcome_id_whatever_the_row_order() -> None:
    older = outcome("r1", "c1", {**PASSING, "no_raw_liquid": False}, outcome_id="o-a", at=3)
    newer = outcome("r1", "c1", PASSING, outcome_id="o-b", at=3)
    for order in ((older, newer), (newer, older)):
        atoms = frame(*order)
        assert latest(atoms).collect()["outcome_id"].unique().to_list() == ["o-b"]
        assert run_row(atoms)["verdict"] == "pass"


def test_latest_is_per_case_run() -> None:
    atoms = frame(outcome("r1", "c1", PASSING, at=9), outcome("r1", "c2", PASSING, at=1),
                  outcome("r1", "c2", PASSING, at=0))
    got = latest(atoms).collect()
    assert sorted(got["outcome_id"].unique().to_list()) == ["c1-o9", "c2-o1"]
    assert got.columns == list(SCHEMA)


# --- evaluators, several runs, per case --------------------------------------------------------------


def test_evaluators_behind_counted_results_are_listed() -> None:
    atoms = frame(
        outcome("r1", "c1", PASSING, evaluator="assay:judge:m1"),
        outcome("r1", "c2", {**PASSING}, evaluator="hamming:guardrail"),
        outcome("r1", "c2", {"polite_greeting": True}, outcome_id="c2-o0", evaluator="vapi:scorer"),  # unnamed
    )
    assert run_row(atoms)["evaluators"] == ["assay:judge:m1", "hamming:guardrail"]


def test_evaluators_come_from_the_latest_outcome_only() -> None:
    atoms = frame(
        outcome("r1", "c1", PASSING, at=0, evaluator="assay:judge:old-model"),
        outcome("r1", "c1", PASSING, at=1, evaluator="assay:judge:new-model"),
    )
    assert run_row(atoms)["evaluators"] == ["assay:judge:new-model"]
    assert case_verdicts(atoms, SPEC).collect()["evaluators"].to_list() == [["assay:judge:new-model"]]


def test_more_evaluators_than_a_call_tells_apart_is_refused_not_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.transforms.verdicts as verdicts

    monkeypatch.setattr(verdicts, "MAX_EVALUATORS", 2)
    atoms = frame(*(outcome("r1", f"c{i}", PASSING, evaluator=f"e{i}") for i in range(3)))
    with pytest.raises(EvidenceError, match="3 distinct evaluators"):
        run_verdicts(atoms, SPEC).collect()
    two = frame(*(outcome("r1", f"c{i}", PASSING, evaluator=f"e{i}") for i in range(2)))
    assert run_row(two)["evaluators"] == ["e0", "e1"]


def test_several_runs_at_once_each_get_their_own_verdict() -> None:
    atoms = frame(
        outcome("r1", "c1", PASSING),
        outcome("r2", "c2", {**PASSING, "every_variable_resolves": False}),
        outcome("r3", "c3", {**PASSING, "stays_in_role": None}),
        outcome("r4", "c4", {"polite_greeting": True}),
    )
    got = run_verdicts(atoms, SPEC).collect()
    assert got.columns == ["run_id", "verdict", "reason", "counted", "met", "nulls", "failed_required", "groups",
                           "evaluators", "excluded", "case_runs", "case_runs_counted"]
    assert dict(got.select("run_id", "verdict").iter_rows()) == {"r1": "pass", "r2": "fail", "r3": "error",
                                                                 "r4": "error"}
    assert got.filter(pl.col("run_id") == "r4")["reason"][0].startswith("required key no_raw_liquid has no result")


def test_case_breakdown_applies_the_rules_per_case_run() -> None:
    atoms = pl.concat([
        four_case_runs(c2={"no_raw_liquid": False}, c3={"answers_question": False}, c4={"stays_in_role": None}),
        frame(outcome("r2", "d1", PASSING, case_key="same-case")),
    ])
    got = case_verdicts(atoms, SPEC).collect()
    assert got.columns[:3] == ["run_id", "case_run_id", "case_key"]
    verdicts = {r["case_run_id"]: (r["verdict"], r["reason"]) for r in got.iter_rows(named=True)}
    assert verdicts["c1"][0] == "pass"
    assert verdicts["c2"] == ("fail", "required no_raw_liquid not met")
    assert verdicts["c3"] == ("fail", "group 0 (answers_question, stays_in_role) 0.50 < 0.75 (1 of 2 met)")
    assert verdicts["c4"] == ("error", "1 counted result could not be determined")
    assert verdicts["d1"][0] == "pass"
    assert got["evaluators"].to_list() == [["assay:transcript"]] * 5
    assert got.filter(pl.col("case_run_id") == "d1")["case_key"][0] == "same-case"


def test_case_breakdown_a_key_only_on_another_case_does_not_apply_but_one_absent_from_the_run_errors() -> None:
    spec = CriteriaSpec(required=["a", "b"])
    atoms = frame(outcome("r1", "c1", {"a": True}), outcome("r1", "c2", {"a": True}))
    got = {r["case_run_id"]: r for r in case_verdicts(atoms, spec).collect().iter_rows(named=True)}
    assert got["c1"]["verdict"] == "error" and got["c1"]["reason"] == "required key b has no result in this run"
    atoms = frame(outcome("r1", "c1", {"a": True, "b": True}), outcome("r1", "c2", {"a": True}))
    got = {r["case_run_id"]: r for r in case_verdicts(atoms, spec).collect().iter_rows(named=True)}
    assert got["c2"]["verdict"] == "pass" and got["c2"]["counted"] == 1
    assert run_row(atoms, spec)["verdict"] == "pass"


def test_case_breakdown_uses_the_latest_outcome() -> None:
    atoms = frame(outcome("r1", "c1", PASSING, at=0), outcome("r1", "c1", {**PASSING, "no_raw_liquid": False}, at=1))
    got = case_verdicts(atoms, SPEC).collect()
    assert got.height == 1 and got["verdict"][0] == "fail" and got["counted"][0] == 4


# --- flips and input checks ----------------------------------------------------------------------------


def test_flips_lists_runs_whose_verdict_differs_from_the_stamped_one() -> None:
    verdicts = pl.DataFrame({"run_id": ["r1", "r2", "r3", "r4"], "verdict": ["pass", "fail", "error", "pass"],
                             "reason": ["a", "b", "c", "d"]})
    stamped = pl.DataFrame({"run_id": ["r1", "r2", "r3", "r5"], "stamped": ["pass", "pass", None, "fail"]})
    got = flips(verdicts, stamped)
    assert got.to_dicts() == [{"run_id": "r2", "stamped": "pass", "verdict": "fail", "reason": "b"}]


def test_flips_end_to_end_under_a_stricter_criteria() -> None:
    atoms = pl.concat([four_case_runs(c1={"answers_question": False}),
                       frame(outcome("r2", "x1", PASSING))])
    stricter = SPEC.model_copy(update={"threshold": [ThresholdGroup(keys=["answers_question", "stays_in_role"],
                                                                    min=1.0)]})
    stamped = run_verdicts(atoms, SPEC).collect().select("run_id", stamped="verdict")
    got = flips(run_verdicts(atoms, stricter).collect(), stamped)
    assert got.select("run_id", "stamped", "verdict").rows() == [("r1", "pass", "fail")]


def test_missing_columns_are_refused_by_name() -> None:
    with pytest.raises(EvidenceError, match="outcome_id"):
        run_verdicts(four_case_runs().drop("outcome_id"), SPEC)
    with pytest.raises(EvidenceError, match="stamped"):
        flips(pl.DataFrame({"run_id": ["r1"], "verdict": ["pass"]}), pl.DataFrame({"run_id": ["r1"]}))
