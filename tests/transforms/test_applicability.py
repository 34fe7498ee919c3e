"""Where a key counts (a criteria's ``applies``): results a runner cannot evaluate are left out and said so."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from pydantic import ValidationError

from assay.core.criteria import UNSUPPORTED, CriteriaSpec, ThresholdGroup
from assay.core.errors import EvidenceError
from assay.transforms.rescore import counted_run_verdicts
from assay.transforms.verdicts import case_verdicts, run_verdicts

from test_verdicts import frame, outcome

GATE = CriteriaSpec(required=["tool.called", "greets"], applies={"tool.called": "capable"})
UNABLE = 'mechanism "tool.called" is not supported by runner "hamming"; it supports: transcript.contains'


def hamming_outcome(run: str, case_run: str, greets: bool) -> list[dict]:
    """A case run of a runner that reports no tool calls: ``tool.called`` unsupported, ``greets`` judged."""
    rows = outcome(run, case_run, {"tool.called": False, "greets": greets})
    rows[0].update(evaluator=UNSUPPORTED, reason=UNABLE)
    return rows


def runs(behaves: bool) -> pl.LazyFrame:
    """Run ``tools`` on a runner that reports tool calls, run ``hamming`` on one that does not."""
    return frame(
        outcome("tools", "t1", {"tool.called": behaves, "greets": behaves}),
        outcome("tools", "t2", {"tool.called": True, "greets": True}),
        hamming_outcome("hamming", "h1", behaves), hamming_outcome("hamming", "h2", True),
    )


def verdicts(atoms: pl.LazyFrame, spec: CriteriaSpec = GATE) -> dict[str, dict]:
    return {r["run_id"]: r for r in run_verdicts(atoms, spec).collect().to_dicts()}


@pytest.mark.parametrize(("behaves", "expected"), [(True, "pass"), (False, "fail")])
def test_the_gate_passes_and_fails_on_both_runners_and_says_what_it_did_not_count(behaves: bool, expected: str) -> None:
    got = verdicts(runs(behaves))
    assert {run: v["verdict"] for run, v in got.items()} == {"tools": expected, "hamming": expected}
    assert "not counted" not in got["tools"]["reason"]
    assert got["hamming"]["reason"].endswith("2 results not counted: `tool.called` is not evaluated by hamming")
    assert got["hamming"]["counted"] == 2  # the two greets results; tool.called is in no count
    assert UNSUPPORTED not in got["hamming"]["evaluators"]


def test_without_applies_an_unsupported_key_still_fails_with_its_reason() -> None:
    got = verdicts(runs(True), CriteriaSpec(required=["tool.called", "greets"]))
    assert (got["tools"]["verdict"], got["hamming"]["verdict"]) == ("pass", "fail")
    assert got["hamming"]["failed_required"] == ["tool.called"]


def test_a_required_key_no_counted_result_decides_is_an_error_never_a_pass() -> None:
    only_unable = frame(hamming_outcome("hamming", "h1", True))
    got = verdicts(only_unable, CriteriaSpec(required=["tool.called"], applies={"tool.called": "capable"}))["hamming"]
    assert got["verdict"] == "error"
    assert got["reason"] == "no counted result decides it; 1 result not counted: `tool.called` is not evaluated by hamming"


def test_a_required_key_with_no_result_at_all_is_still_an_error() -> None:
    greets_only = frame(outcome("tools", "t1", {"greets": True}))
    got = verdicts(greets_only)["tools"]
    assert (got["verdict"], got["reason"]) == ("error", "required key tool.called has no result in this run")


def test_a_threshold_group_leaves_unable_results_out_of_its_ratio() -> None:
    spec = CriteriaSpec(threshold=[ThresholdGroup(keys=["tool.called", "greets"], min=1.0)],
                        applies={"tool.called": "capable"})
    got = verdicts(runs(True), spec)["hamming"]
    assert got["verdict"] == "pass"
    assert got["groups"][0]["results"] == 2 and got["groups"][0]["met"] == 2


def test_the_case_breakdown_says_what_each_case_run_did_not_count() -> None:
    rows = case_verdicts(runs(False), GATE).collect().filter(pl.col("run_id") == "hamming").sort("case_run_id")
    assert rows["verdict"].to_list() == ["fail", "pass"]
    assert all(r.endswith("1 result not counted: `tool.called` is not evaluated by hamming") for r in rows["reason"])


def test_applies_leaves_the_hash_of_criteria_without_it_unchanged() -> None:
    plain = CriteriaSpec(required=["tool.called"])
    assert "applies" not in plain.model_dump()
    assert CriteriaSpec(required=["tool.called"], applies={"tool.called": "capable"}).model_dump()["applies"] == {
        "tool.called": "capable"}


@pytest.mark.parametrize(("applies", "said"), [
    ({"tool.caled": "capable"}, "applies names key(s) tool.caled that neither required nor threshold counts"),
    ({"tool.called": "sometimes"}, "Input should be 'capable'"),
])
def test_a_bad_applies_is_refused_naming_the_key_and_the_valid_values(applies: dict, said: str) -> None:
    with pytest.raises(ValidationError, match="applies") as caught:
        CriteriaSpec(required=["tool.called"], applies=applies)
    assert said in str(caught.value)


def test_the_readme_example_criteria_validate_as_written() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### A complete example", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "README.md: no yaml block under '### A complete example'"
    doc = yaml.safe_load(block.group(1))
    specs = {c: CriteriaSpec.model_validate(spec) for t in doc["teams"] for s in t["suites"]
             for c, spec in s.get("criteria", {}).items()}
    assert specs["blueprint_ci"].capable_only() == ["checks_service_area_tool"]


def test_the_per_key_counts_cannot_score_applies_and_say_so() -> None:
    with pytest.raises(EvidenceError, match=r"applies \(tool.called\) needs each result's evaluator"):
        counted_run_verdicts(pl.LazyFrame(), GATE, {}, {})
