"""Judging as a separate act, end to end on the embedded default (plain functions, no Prefect).

Re-judge writes new outcomes over stored evidence and never calls a runner; re-score is a query
that calls neither a runner nor the judge; plan says which tier a bundle change needs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from assay.core.criteria import CriteriaSpec
from assay.core.errors import CriteriaError
from assay.core.plugins import registered
from assay.flows import judging, rescoring
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES, write_revised_bundle
from assay.flows.planning import plan
from assay.storage.catalog.runs import get_run, list_runs, run_details


def run_suite(ws, suite: str) -> str:
    return ops.run_to_final(ws, suite).run_id


@pytest.fixture
def ws(demo_ws):
    return demo_ws


@pytest.fixture
def demo_runs(ws) -> list[str]:
    return [run_suite(ws, s) for s in SUITES]


@pytest.fixture
def no_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to build or drive a runner fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a runner was called")

    for cls in registered().values():
        monkeypatch.setattr(cls, "__init__", refuse)
        monkeypatch.setattr(cls, "execute", refuse)


def atoms(ws) -> pl.DataFrame:
    return ws.lake.read("assertion_results")


def test_a_run_is_judged_and_finalised_with_each_consumers_verdict(ws, demo_runs) -> None:
    acme, northside = (run_details(ws.engine, r) for r in demo_runs)
    assert acme["status"] == northside["status"] == "completed"
    verdicts = {(v["run_id"], v["consumer"]): v for v in judging.verdicts_for(ws, demo_runs)}
    # The same evidence passes one consumer and fails another.
    assert verdicts[(acme["run_id"], "blueprint_ci")]["stamped"] == "pass"
    assert verdicts[(acme["run_id"], "publish_gate")]["stamped"] == "fail"
    assert "every_variable_resolves" in verdicts[(acme["run_id"], "publish_gate")]["reason"]
    assert get_run(ws.engine, acme["run_id"]).outcome == "fail"  # the most severe stamped verdict
    # Rubric assertions without a judge are null, never a pass: every consumer counting them errs.
    assert verdicts[(northside["run_id"], "nightly_sweep")]["stamped"] == "error"
    results = atoms(ws)
    rubric = results.filter(pl.col("mechanism") == "rubric")
    assert rubric.height == 2 * 12 and rubric["met"].null_count() == rubric.height
    assert set(rubric["evaluator"]) <= {"assay:judge", "assay:execution"}
    # One result per (outcome, assertion version); every outcome complete.
    assert results.select("outcome_id", "assertion_id").is_duplicated().sum() == 0
    vendor = results.filter(pl.col("assertion_key") == "guardrail_handles_out_of_area")
    assert set(vendor["evaluator"]) == {"hamming:guardrail"}


def test_an_unsupported_mechanism_fails_with_a_reason(ws, tmp_path: Path) -> None:
    bundle = yaml.safe_load((DEMO / "bundle.yaml").read_text())
    acme = bundle["teams"][0]
    suite = acme["suites"][0]
    shutil.copytree(DEMO / "configs", tmp_path / "configs")  # targets are files in the bundle's folder
    acme["suites"] = [suite]
    suite["assertions"].append(
        {"key": "greets_caller", "mechanism": "transcript.contains", "params": {"text": "hello"}}
    )
    suite["criteria"]["blueprint_ci"]["required"].append("greets_caller")
    bundle["teams"] = [acme]
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(bundle))
    ops.load(ws, str(path))
    run_id = run_suite(ws, SUITES[0])
    greets = atoms(ws).filter(pl.col("assertion_key") == "greets_caller")
    assert greets.height == 4 and greets["met"].to_list() == [False] * 4
    assert set(greets["evaluator"]) == {"assay:unsupported"}
    assert "transcript.contains" in greets["reason"][0] and "config_check" in greets["reason"][0]
    [ci] = [v for v in judging.verdicts_for(ws, [run_id]) if v["consumer"] == "blueprint_ci"]
    assert ci["stamped"] == "fail" and "greets_caller" in ci["reason"]


def test_an_unmatched_required_key_stops_the_run_before_any_runner(ws, tmp_path: Path, no_runner) -> None:
    bundle = yaml.safe_load((DEMO / "bundle.yaml").read_text())
    northside = bundle["teams"][1]
    shutil.copytree(DEMO / "calls", tmp_path / "calls")  # targets are files in the bundle's folder
    # Drop the case whose assertion blueprint_ci requires (and its calls); its criteria still name the key.
    calls = tmp_path / "calls" / "northside-recorded.jsonl"
    calls.write_text("".join(line for line in calls.read_text().splitlines(True) if "angry-billing-dispute" not in line))
    northside["suites"][0]["cases"].remove("angry-billing-dispute")
    for spec in northside["suites"][0]["criteria"].values():
        for field in ("required", "ignore"):
            if "looks_up_invoice" in spec.get(field, []) and field == "ignore":
                spec[field].remove("looks_up_invoice")
        for group in spec.get("threshold", []):
            if "looks_up_invoice" in group["keys"]:
                group["keys"].remove("looks_up_invoice")
    northside["suites"][0]["criteria"]["blueprint_ci"]["required"].remove("looks_up_invoice")
    bundle["teams"] = [northside]
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(bundle))
    ops.load(ws, str(path))  # loads: the bundle's own criteria resolve
    from assay.storage.catalog import tables as t

    with ws.engine.begin() as conn:  # an older criteria version still requiring the dropped key
        row = conn.execute(t.criteria.select().where(t.criteria.c.consumer_key == "blueprint_ci")
                           .order_by(t.criteria.c.version.desc())).first()
        spec = dict(row.spec, required=[*row.spec["required"], "looks_up_invoice"])
        conn.execute(t.criteria.insert().values(
            criteria_id="f" * 32, suite_id=row.suite_id, consumer_key="blueprint_ci", version=row.version + 1,
            spec=spec, spec_hash="x", created_at=row.created_at))
    with pytest.raises(CriteriaError, match="required key 'looks_up_invoice' matches no assertion"):
        ops.start_run(ws, SUITES[1])
    assert list_runs(ws.engine) == []


def test_rejudge_writes_new_outcomes_and_never_calls_a_runner(ws, demo_runs, tmp_path: Path, no_runner) -> None:
    before_runs = [run_details(ws.engine, r) for r in demo_runs]
    first = atoms(ws)
    ops.load(ws, str(write_revised_bundle(tmp_path / "revised.yaml")))
    judged = judging.judge_runs(ws, demo_runs, trigger="rejudge")
    assert (judged["outcomes"], judged["evaluated"]) == (4, 4)  # only the reworded assertion, on acme's 4 case runs
    assert judged["carried"] == first.height - 4 and judged["unjudged"] == 0
    after = atoms(ws)
    assert after.height == first.height + 4 * 5  # 4 new, complete outcomes of 5 results each
    earlier = after.filter(pl.col("result_id").is_in(first["result_id"].to_list())).sort("result_id")
    assert earlier.equals(first.select(after.columns).sort("result_id"))  # nothing rewritten
    v2 = after.filter((pl.col("assertion_key") == "out_of_area_clause") & (pl.col("assertion_version") == 2))
    assert v2.height == 4 and v2["met"].to_list() == [False] * 4
    # Unchanged pairs are not re-evaluated; --force does.
    assert judging.judge_runs(ws, demo_runs, trigger="rejudge")["outcomes"] == 0
    forced = judging.judge_runs(ws, demo_runs, trigger="rejudge", force=True)
    assert forced["carried"] == 0 and forced["evaluated"] == first.height and forced["outcomes"] == 16
    # Stamped verdicts never change; the runs themselves are untouched.
    assert [run_details(ws.engine, r) for r in demo_runs] == before_runs
    [ci] = [v for v in judging.verdicts_for(ws, demo_runs[:1]) if v["consumer"] == "blueprint_ci"]
    assert (ci["stamped"], ci["verdict"]) == ("pass", "fail")


def test_a_fixed_evaluator_re_judges_what_it_judged_without_force(ws, demo_runs, monkeypatch, no_runner) -> None:
    first = atoms(ws)
    current = judging.evaluator_versions()
    assert all(current[m] == v for m, v in first.select("mechanism", "evaluator_version").unique().iter_rows())
    fixed = first.filter(pl.col("mechanism") == "tool.called")
    assert fixed.height > 0
    versions = {**current, "tool.called": current["tool.called"] + 1}
    monkeypatch.setattr(judging, "evaluator_versions", lambda: versions)
    judged = judging.judge_runs(ws, demo_runs, trigger="rejudge")
    assert judged["evaluated"] == fixed.height and judged["carried"] == first.height - fixed.height
    assert judged["outcomes"] == fixed["case_run_id"].n_unique()
    newest = atoms(ws).filter(~pl.col("result_id").is_in(first["result_id"].to_list()))
    stamped = dict(newest.group_by("mechanism").agg(pl.col("evaluator_version").unique()).iter_rows())
    assert stamped.pop("tool.called") == [versions["tool.called"]] and all(v == [current[m]] for m, v in stamped.items())
    # Judged by the fixed evaluator now: nothing more to do.
    assert judging.judge_runs(ws, demo_runs, trigger="rejudge")["outcomes"] == 0


def test_rejudge_of_chosen_keys_only_evaluates_those(ws, demo_runs) -> None:
    judged = judging.judge_runs(ws, demo_runs, keys=["stays_short"], force=True)
    assert judged["evaluated"] == 12 and judged["outcomes"] == 12


def test_rescore_is_a_query_that_calls_neither_runner_nor_judge(
    ws, demo_runs, tmp_path: Path, no_runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_judge(*args, **kwargs):
        raise AssertionError("the judge was called")

    monkeypatch.setattr(judging, "evaluate", no_judge)
    ops.load(ws, str(write_revised_bundle(tmp_path / "revised.yaml")))
    files = {table: ws.lake.files(table) for table in ("outcomes", "assertion_results", "verdicts")}
    result = rescoring.rescore(ws, SUITES[0], "nightly_sweep")
    assert result["criteria"] == "v2"
    [row] = result["runs"]
    assert (row["stamped"], row["verdict"], row["stamped_version"]) == ("pass", "fail", 1)
    assert "0.80 < 0.90" in row["reason"]
    assert [f["run_id"] for f in result["flips"]] == [demo_runs[0]]
    assert {table: ws.lake.files(table) for table in files} == files  # wrote nothing
    rescoring.rescore(ws, SUITES[0], "nightly_sweep", materialise=True)
    stored = ws.lake.read("verdicts")
    assert stored.select("run_id", "consumer_key", "criteria", "verdict").rows() == [
        (demo_runs[0], "nightly_sweep", "v2", "fail")
    ]


@pytest.mark.parametrize("spec", [None, CriteriaSpec(pass_rate={"min": 0.8})], ids=["from-counts", "from-atoms"])
def test_rescore_of_a_suite_with_no_runs_lists_none(ws, spec: CriteriaSpec | None) -> None:
    """Nothing run yet: an empty answer, on both paths (the counts' and the atoms')."""
    result = rescoring.rescore(ws, SUITES[0], "blueprint_ci", spec=spec)
    assert (result["runs"], result["flips"]) == ([], [])


def test_rescore_with_a_candidate_spec_that_does_not_resolve_is_refused(ws, demo_runs) -> None:
    from assay.core.criteria import CriteriaSpec

    with pytest.raises(CriteriaError, match="no_such_key"):
        rescoring.rescore(ws, SUITES[0], "blueprint_ci", spec=CriteriaSpec(required=["no_such_key"]))


def test_plan_says_which_tier_each_suite_and_consumer_needs(ws, demo_runs, tmp_path: Path) -> None:
    same = plan(ws, str(DEMO / "bundle.yaml"))
    assert same["changes"] == [] and {s["tier"] for s in same["suites"]} == {"none"}
    revised = plan(ws, str(write_revised_bundle(tmp_path / "revised.yaml")))
    tiers = {s["suite"]: s for s in revised["suites"]}
    acme, northside = tiers["acme-plumbing/main-line"], tiers["northside-hvac/recorded-calls"]
    assert acme["tier"] == "re-judge" and northside["tier"] == "re-run"
    assert tiers["acme-plumbing/chat-line"]["tier"] == "none"  # the reworded assertion is main-line's
    assert northside["rerun_reasons"] == [  # the revised bundle's call set is a copy in its own folder: a new path
        "~ case northside-hvac/maintenance-plan-question (situation)", "~ suite northside-hvac/recorded-calls (target)"]
    assert acme["rejudge"]["outcomes"] == 4 and acme["rejudge"]["judge_calls"] == 0
    assert {c["consumer"]: c["tier"] for c in acme["consumers"]} == {
        "blueprint_ci": "re-judge", "nightly_sweep": "re-judge", "publish_gate": "re-judge"}
    # Only a criteria edit: re-score, for that consumer alone.
    bundle = yaml.safe_load((DEMO / "bundle.yaml").read_text())
    shutil.copytree(DEMO / "configs", tmp_path / "configs", dirs_exist_ok=True)  # targets: files in its folder
    bundle["teams"][0]["suites"][0]["criteria"]["nightly_sweep"]["threshold"][0]["min"] = 0.5
    path = tmp_path / "criteria-only.yaml"
    path.write_text(yaml.safe_dump(bundle))
    only = plan(ws, str(path))["suites"][0]
    assert only["tier"] == "re-score"
    assert {c["consumer"]: c["tier"] for c in only["consumers"]} == {
        "blueprint_ci": "none", "nightly_sweep": "re-score", "publish_gate": "none"}
    # A changed situation: re-run.
    bundle["teams"][0]["cases"][0]["situation"]["wants"] = "A new water heater today"
    path.write_text(yaml.safe_dump(bundle))
    rerun = plan(ws, str(path))["suites"][0]
    assert rerun["tier"] == "re-run" and rerun["rerun_reasons"]
