"""The exam runners driven as runners: a real exam distilled from a session the fake harness ran, replayed once
per case of a hand-built job through ``drive`` into an in-memory ledger. N replays make N case runs under their
``source_ref``s, with the workspace, the session and the conditions in the artefact; a crashing harness makes
case runs in error, never an exception; an exam changed since it was loaded, or one of another harness, errors
the run with a message that says what to do; no worktree outlives a run, not even one a killed run left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assay.adapters.runners.claude_code import ClaudeCodeHarness
from assay.adapters.runners.command_agent import CommandHarness
from assay.adapters.runners.exam_runner import ClaudeCodeRunner, CommandAgentRunner, ExamRunner, replays_parent
from assay.core.errors import UsageError
from assay.core.evidence import Report
from assay.core.exam import INSTRUCTION_FILE, exam_digest
from assay.core.plugins import runner_class
from assay.core.runner import CaseSpec, DriveResult, Lease, Receipt, RunJob, drive

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import reviewed_exam  # noqa: E402

SLUG = "half-cent"


class MemoryLedger:
    """A ledger that keeps what it is told: the reports, the renewals and how the run was released."""

    def __init__(self) -> None:
        self.reports: list[Report] = []
        self.renewals = 0
        self.released: list[str | None] = []

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease:
        return Lease(run_id, owner, datetime.now(UTC) + timedelta(seconds=ttl_seconds))

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease:
        self.renewals += 1
        return Lease(lease.run_id, lease.owner, datetime.now(UTC) + timedelta(seconds=ttl_seconds))

    def report(self, lease: Lease, report: Report) -> Receipt:
        self.reports.append(report)
        return Receipt("accepted", case_runs=report.size)

    def release(self, lease: Lease, *, error: str | None = None) -> None:
        self.released.append(error)

    def case_runs(self) -> list[dict[str, Any]]:
        rows = [row for report in self.reports for row in report.case_runs.to_pylist()]
        for row in rows:
            row["artefact"] = json.loads(row["artefact"]) if row["artefact"] else None
        return rows


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A repository the fake harness fixed the bug in, and its exam, reviewed: (repo, exam dir, the fake's wrapper)."""
    return reviewed_exam(tmp_path_factory.mktemp("exam-runner"), SLUG)


def environment(fake: Path, tmp_path: Path, mode: str = "good") -> dict[str, str]:
    """The runner's ``env`` option: the fake as the harness, an isolated HOME, quick pytest runs."""
    return {"ASSAY_CLAUDE_BIN": str(fake), "ASSAY_FAKE_HARNESS_MODE": mode, "HOME": str(tmp_path / "home"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def target_of(repo: Path, exam_dir: Path, harness: str = "claude-code") -> dict[str, Any]:
    return {"exam": {"repo": str(repo.resolve()), "dir": str(exam_dir.relative_to(repo)), "harness": harness,
                     "sha256": exam_digest(exam_dir)}}


def job(run_id: str, target: dict[str, Any], replays: int, key: str = SLUG) -> RunJob:
    cases = tuple(CaseSpec(case_id="case-exam", case_key=key, content={"case_key": key, "title": key},
                           source_ref=f"replay-{k:04d}") for k in range(1, replays + 1))
    return RunJob(run_id=run_id, team_id="team", suite_key=f"exams/exam-{key}", target_kind="exam", target=target,
                  cases=cases)


def run(runner: ExamRunner, the_job: RunJob) -> tuple[DriveResult, MemoryLedger]:
    ledger = MemoryLedger()
    return drive(runner, ledger, the_job, owner="test", ttl_seconds=60), ledger


def worktrees(repo: Path) -> list[str]:
    porcelain = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=repo, capture_output=True, text=True,
                               check=True).stdout
    return [line.removeprefix("worktree ") for line in porcelain.splitlines() if line.startswith("worktree ")]


def test_the_runners_are_registered_and_declare_what_their_evidence_holds() -> None:
    assert runner_class("claude_code") is ClaudeCodeRunner and runner_class("command_agent") is CommandAgentRunner
    assert (ClaudeCodeRunner.harness, CommandAgentRunner.harness) == (ClaudeCodeHarness.name, CommandHarness.name)
    for cls in (ClaudeCodeRunner, CommandAgentRunner):
        assert cls.target_kinds == {"exam"} and cls.repeats and cls.synchronous
    assert {"tool.called", "tool.not_called", "rubric", "exam.files_within", "exam.band"} <= ClaudeCodeRunner.mechanisms
    assert CommandAgentRunner.mechanisms == {"exam.command_passes", "exam.verify", "exam.file_changed",
                                             "exam.file_contains"}  # no transcript: no tool.*, no trajectory


def test_n_replays_become_n_case_runs_in_batches(distilled, tmp_path: Path) -> None:
    repo, exam_dir, fake = distilled
    runner = ClaudeCodeRunner(condition="baseline", env=environment(fake, tmp_path), parallel=2)
    runner.batch_size = 2
    result, ledger = run(runner, job("run-many", target_of(repo, exam_dir), 3))

    assert result.error is None and ledger.released == [None]
    assert [r.request_id for r in ledger.reports] == ["run-many:claude_code:0", "run-many:claude_code:1"]
    rows = ledger.case_runs()
    assert [r["source_ref"] for r in rows] == ["replay-0001", "replay-0002", "replay-0003"]
    assert {r["status"] for r in rows} == {"executed"} and {r["case_id"] for r in rows} == {"case-exam"}
    for row in rows:
        artefact = row["artefact"]
        assert artefact["workspace"]["files_changed"] == [{"status": "modified", "path": "pricing.py"}]
        assert artefact["workspace"]["probes"] and all(p["held"] for p in artefact["workspace"]["probes"])
        assert artefact["session"]["transcript"] is True and artefact["session"]["allowlist_held"] is True
        assert artefact["condition"]["name"] == "baseline" and artefact["condition"]["harness"] == "claude-code"
        assert artefact["condition"]["guarantees"] == list(ClaudeCodeHarness.guarantees)
        assert artefact["condition"]["env"] == sorted(environment(fake, tmp_path))  # names, never values
        assert row["tool_calls"] and row["transcript"][0]["role"] == "caller"
    assert len({r["artefact"]["workspace"]["worktree"] for r in rows}) == 3  # one worktree each
    assert ledger.renewals >= 3
    assert worktrees(repo) == [str(repo.resolve())] and not replays_parent("run-many").exists()


def test_a_crashing_harness_makes_case_runs_in_error_not_an_exception(distilled, tmp_path: Path) -> None:
    repo, exam_dir, fake = distilled
    runner = ClaudeCodeRunner(env=environment(fake, tmp_path, mode="crash"))
    result, ledger = run(runner, job("run-crash", target_of(repo, exam_dir), 2))
    assert result.error is None and result.case_runs == 2
    rows = ledger.case_runs()
    assert [r["status"] for r in rows] == ["error", "error"]
    assert all("the harness crashed (exit 1)" in r["error"] for r in rows)
    assert rows[0]["artefact"]["session"]["stop_reason"] == "crash" and rows[0]["artefact"]["condition"]["name"] is None
    assert worktrees(repo) == [str(repo.resolve())]


def test_an_exam_changed_since_it_was_loaded_errors_the_run(distilled, tmp_path: Path) -> None:
    repo, exam_dir, fake = distilled
    target = target_of(repo, exam_dir)
    instruction = exam_dir / INSTRUCTION_FILE
    before = instruction.read_text()
    instruction.write_text(before + "\nAlso update the changelog.\n")
    try:
        result, ledger = run(ClaudeCodeRunner(env=environment(fake, tmp_path)), job("run-changed", target, 2))
    finally:
        instruction.write_text(before)
    assert result.error is not None and "changed since it was loaded" in result.error
    assert "load it again" in result.error and str(exam_dir) in result.error
    assert ledger.reports == [] and ledger.released == [result.error]


def test_an_exam_of_another_harness_errors_the_run(distilled, tmp_path: Path) -> None:
    repo, exam_dir, _ = distilled
    result, ledger = run(CommandAgentRunner(), job("run-other", target_of(repo, exam_dir), 1))
    assert result.error is not None and "replays with harness 'claude-code'" in result.error
    assert "runner 'command_agent' runs 'command'" in result.error and ledger.reports == []


def test_a_worktree_a_killed_run_left_is_swept(distilled, tmp_path: Path) -> None:
    repo, exam_dir, fake = distilled
    left = replays_parent("run-swept") / "half-cent-replay-0001-dead"
    left.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(left), "HEAD"], cwd=repo, capture_output=True,
                   check=True)
    assert str(left) in worktrees(repo)
    runner = ClaudeCodeRunner(model="opus", env=environment(fake, tmp_path), timeout=120)
    result, ledger = run(runner, job("run-swept", target_of(repo, exam_dir), 1))
    assert result.error is None and ledger.case_runs()[0]["status"] == "executed"
    condition = ledger.case_runs()[0]["artefact"]["condition"]
    assert (condition["model"], condition["model_overridden"], condition["timeout_seconds"]) == ("opus", True, 120)
    assert worktrees(repo) == [str(repo.resolve())] and not left.exists()


@pytest.mark.parametrize("cls", [ClaudeCodeRunner, CommandAgentRunner])
def test_the_example_target_replays(cls: type[ExamRunner], tmp_path: Path) -> None:
    """The conformance kit's example: a tiny repository whose exam the configured harness passes."""
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay.fakes.harness "$@"\n')
    fake.chmod(0o755)
    env = {**environment(fake, tmp_path),
           "ASSAY_EXAM_COMMAND": "sed -i 's/hello/hello, world/' greeting.txt && cat \"$ASSAY_INSTRUCTION_FILE\""}
    kind, target = cls.example_target(tmp_path / "work", [])
    assert kind == "exam" and target["exam"]["harness"] == cls.harness
    result, ledger = run(cls(env=env, model="opus"), job("run-example", target, 2, key="greet-the-world"))
    assert result.error is None
    rows = ledger.case_runs()
    assert [r["status"] for r in rows] == ["executed", "executed"], rows[0]["error"]
    for row in rows:
        assert {p["key"]: p["held"] for p in row["artefact"]["workspace"]["probes"]} == {
            "greets-the-world": True, "greeting-changed": True}
        assert row["artefact"]["session"]["transcript"] is (cls is ClaudeCodeRunner)
        assert bool(row["tool_calls"]) is (cls is ClaudeCodeRunner)
        condition = row["artefact"]["condition"]  # only a harness that takes a model is given one
        assert (condition["model"], condition["model_overridden"], condition["model_asked"]) == (
            ("opus", True, "opus") if cls is ClaudeCodeRunner else (None, False, "opus"))


def test_options_are_checked_when_the_runner_is_made() -> None:
    with pytest.raises(UsageError, match="option 'parallel' is 0"):
        ClaudeCodeRunner(parallel=0)
    with pytest.raises(UsageError, match="option 'timeout' is -1"):
        ClaudeCodeRunner(timeout=-1)
    with pytest.raises(UsageError, match="option 'env' must map names to text; fix the values of X"):
        ClaudeCodeRunner(env={"X": 1})  # type: ignore[dict-item]
