"""Why a verdict came out: the deciding results of each case run, and the lines behind a result."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from assay.core.criteria import CriteriaSpec, ThresholdGroup
from assay.transforms.explain import NO_RESULT, counted_by, deciding_lines, deciding_results
from assay.transforms.verdicts import case_verdicts

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
SCHEMA = {"run_id": pl.String, "case_run_id": pl.String, "case_key": pl.String, "outcome_id": pl.String,
          "judged_at": pl.Datetime("us", "UTC"), "assertion_key": pl.String, "met": pl.Boolean,
          "value": pl.Float64, "evaluator": pl.String, "reason": pl.String}

SPEC = CriteriaSpec(required=["declines", "checks_tool"],
                    threshold=[ThresholdGroup(keys=["answers", "stays_in_role"], min=1.0)],
                    ignore=["stays_short"])


def atoms(rows: dict[str, dict[str, bool | None]], run: str = "r1") -> pl.LazyFrame:
    """One outcome per case run: case run -> {key: met}; a reason on every result not met."""
    out = []
    for case_run, results in rows.items():
        for key, met in results.items():
            out.append({"run_id": run, "case_run_id": case_run, "case_key": f"case-{case_run}",
                        "outcome_id": f"{case_run}-o", "judged_at": T0, "assertion_key": key, "met": met,
                        "value": None if met is None else float(met), "evaluator": f"ev:{key}",
                        "reason": None if met else f"why {key} in {case_run}"})
    return pl.DataFrame(out, schema=SCHEMA).lazy()


def decided(results: pl.LazyFrame, spec: CriteriaSpec = SPEC) -> dict[str, list[tuple[str, bool | None, str | None]]]:
    frame = deciding_results(results, case_verdicts(results, spec), spec).collect()
    out: dict[str, list[tuple[str, bool | None, str | None]]] = {}
    for r in frame.iter_rows(named=True):
        out.setdefault(r["case_run_id"], []).append((r["assertion_key"], r["met"], r["reason"]))
    return out


GOOD = {"declines": True, "checks_tool": True, "answers": True, "stays_in_role": True, "stays_short": True}


def test_a_fail_names_the_required_results_not_met_and_a_pass_names_none() -> None:
    results = atoms({"c1": GOOD, "c2": {**GOOD, "declines": False}})
    assert decided(results) == {"c2": [("declines", False, "why declines in c2")]}


def test_a_group_below_min_names_its_results_not_met_but_not_its_met_ones() -> None:
    results = atoms({"c1": {**GOOD, "answers": False}})
    assert decided(results) == {"c1": [("answers", False, "why answers in c1")]}


def test_an_ignored_or_advisory_result_not_met_never_decides() -> None:
    results = atoms({"c1": {**GOOD, "stays_short": False, "advisory": False}})
    assert decided(results) == {}


def test_an_error_names_the_undetermined_counted_results_not_the_failures_beside_them() -> None:
    results = atoms({"c1": {**GOOD, "checks_tool": None, "declines": False, "stays_short": None}})
    assert decided(results) == {"c1": [("checks_tool", None, "why checks_tool in c1")]}


def test_an_error_names_a_required_key_with_no_result_in_the_run() -> None:
    results = atoms({"c1": {k: v for k, v in GOOD.items() if k != "checks_tool"}})
    assert decided(results) == {"c1": [("checks_tool", None, NO_RESULT)]}


def test_a_group_is_missing_only_when_every_key_of_it_has_no_result() -> None:
    partial = atoms({"c1": {k: v for k, v in GOOD.items() if k != "answers"}})
    assert decided(partial) == {}
    none = atoms({"c1": {k: v for k, v in GOOD.items() if k not in ("answers", "stays_in_role")}})
    assert decided(none) == {"c1": [("answers", None, NO_RESULT), ("stays_in_role", None, NO_RESULT)]}


def test_counted_by_lists_the_consumers_that_count_each_key() -> None:
    other = CriteriaSpec(required=["answers"], ignore=["declines"])
    assert counted_by({"publish_gate": SPEC, "blueprint_ci": other}) == {
        "declines": ["publish_gate"], "checks_tool": ["publish_gate"],
        "answers": ["blueprint_ci", "publish_gate"], "stays_in_role": ["publish_gate"]}


TURNS = pl.DataFrame({"role": ["agent", "caller", "agent", "agent"],
                      "text": ["Hello", "I am OUTSIDE", "That is outside our area", "Bye, outside again"]})
CALLS = pl.DataFrame({"name": ["lookup", "check_area", "check_area"],
                      "arguments": ['{"zip": "1"}', '{"zip": "60827"}', '{"zip": "60601"}']})


@pytest.mark.parametrize("mechanism,params,met,expected", [
    ("transcript.contains", {"text": "outside", "role": "agent"}, True, ("turns", [2, 3])),
    ("transcript.contains", {"text": "OUTSIDE", "case_insensitive": True}, True, ("turns", [1, 2, 3])),
    ("transcript.regex", {"text": "our\\s+area"}, True, ("turns", [2])),
    ("transcript.not_contains", {"text": "Bye", "role": "agent"}, False, ("turns", [3])),
    ("transcript.not_regex", {"text": "our\\s+area"}, False, ("turns", [2])),
    ("tool.called", {"tool": "check_area"}, True, ("calls", [1, 2])),
    ("tool.called", {"tool": "check_area", "arguments": {"zip": "60827"}}, True, ("calls", [1])),
    ("tool.not_called", {"tool": "lookup"}, False, ("calls", [0])),
])
def test_the_lines_that_decided_a_result(mechanism: str, params: dict, met: bool, expected: tuple) -> None:
    assert deciding_lines(TURNS, CALLS, mechanism, params, met) == expected


@pytest.mark.parametrize("mechanism,params,met", [
    ("transcript.contains", {"text": "outside"}, False),      # an absence points at no line
    ("transcript.not_contains", {"text": "oven"}, True),
    ("transcript.not_regex", {"text": "ov[e]n"}, True),
    ("tool.called", {"tool": "book"}, False),
    ("tool.called", {"tool": "check_area"}, None),            # undetermined
    ("transcript.max_turns", {"max": 2}, False),              # a count, not a line
    ("rubric", {"rubric": "Be kind."}, True),
])
def test_mechanisms_that_cannot_point_at_a_line_mark_nothing(mechanism: str, params: dict, met: bool | None) -> None:
    assert deciding_lines(TURNS, CALLS, mechanism, params, met) is None
