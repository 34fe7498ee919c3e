"""fixed reports a fixed verdict per case, through the same contract, without any other runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.adapters.runners import FixedRunner
from assay.core.errors import RunnerError
from assay.core.evidence import Report, case_run_schema, evaluation_schema
from assay.core.mechanisms import MECHANISMS
from assay.core.plugins import runner_class
from assay.core.runner import CaseSpec, RunJob


def _job(n: int = 3, kind: str = "config", target: dict | None = None, run_id: str = "run-1") -> RunJob:
    cases = tuple(CaseSpec(case_id=f"cid-{i}", case_key=f"case-{i}", content={}) for i in range(n))
    return RunJob(run_id=run_id, team_id="team-a", suite_key="suite-a", target_kind=kind,
                  target=target if target is not None else {"config": {"name": "x", "prompt": "y"}}, cases=cases)


def _run(runner: FixedRunner, job: RunJob) -> list[Report]:
    return list(runner.execute(job, lambda: None))


def test_declares_the_vendor_family_and_both_target_kinds() -> None:
    assert runner_class("fixed") is FixedRunner
    assert FixedRunner.mechanisms == {m for m in MECHANISMS if m.startswith("vendor.")}
    assert FixedRunner.target_kinds == {"config", "call_set"}


def test_one_case_run_and_one_evaluation_per_case() -> None:
    [report] = _run(FixedRunner(), _job())
    assert report.case_runs.schema.equals(case_run_schema()) and report.evaluations.schema.equals(evaluation_schema())
    runs = report.case_runs.to_pylist()
    assert [(r["case_id"], r["status"], r["transcript"], r["artefact"]) for r in runs] == [
        (f"cid-{i}", "executed", [], None) for i in range(3)
    ]
    evals = report.evaluations.to_pylist()
    assert [(e["case_id"], e["name"], e["evaluator"], e["verdict"], e["score"]) for e in evals] == [
        (f"cid-{i}", "fixed", "fixed", "pass", None) for i in range(3)
    ]


def test_per_case_verdicts_override_the_default_and_the_score_is_reported() -> None:
    runner = FixedRunner(verdict="fail", verdicts={"case-1": "pass", "case-2": "error"}, score=0.25)
    [report] = _run(runner, _job())
    assert [(e["case_id"], e["verdict"], e["score"]) for e in report.evaluations.to_pylist()] == [
        ("cid-0", "fail", 0.25), ("cid-1", "pass", 0.25), ("cid-2", "error", 0.25)
    ]


def test_the_target_is_ignored_whatever_its_kind() -> None:
    job = _job(n=2, kind="call_set", target={"call_set": {"path": "/nowhere.jsonl", "sha256": "0" * 64}})
    [report] = _run(FixedRunner(), job)
    assert report.size == 2 and report.evaluations.num_rows == 2


@pytest.mark.parametrize("kwargs", [{"verdict": "passed"}, {"verdicts": {"case-0": "ok"}}])
def test_an_unknown_verdict_is_refused_at_construction(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="use one of pass, fail, error, unknown"):
        FixedRunner(**kwargs)


def test_verdicts_for_a_case_the_run_does_not_have_are_an_error() -> None:
    with pytest.raises(RunnerError, match=r"case-9.*the run's cases are: case-0, case-1, case-2"):
        _run(FixedRunner(verdicts={"case-9": "fail"}), _job())


def test_reports_split_at_batch_size_with_stable_request_ids() -> None:
    runner = FixedRunner()
    runner.batch_size = 2
    job = _job(n=3, run_id="run-9")
    first, second = _run(runner, job), _run(runner, job)
    assert [(r.request_id, r.size, r.evaluations.num_rows) for r in first] == [
        ("run-9:fixed:0", 2, 2), ("run-9:fixed:1", 1, 1)
    ]
    assert [r.request_id for r in second] == [r.request_id for r in first]
    assert [r.evaluations.to_pylist() for r in second] == [r.evaluations.to_pylist() for r in first]


def test_the_example_target_runs(tmp_path: Path) -> None:
    job = _job(n=2)
    kind, target = FixedRunner.example_target(tmp_path, job.cases)
    assert kind in FixedRunner.target_kinds
    [report] = _run(FixedRunner(), _job(n=2, kind=kind, target=target))
    assert report.size == 2
