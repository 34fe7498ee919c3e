"""The real Claude Code and Codex CLIs, run offline against the scripted model, read back by Assay.

Each test starts the scripted model (:mod:`assay.fakes.model_server`) on loopback, points the real CLI at it
(:mod:`assay.fakes.model_clients`; its home and config in a temporary directory) and lets it work on a fresh
git copy of the sample project: it reads the code, runs the failing test, edits the rounding and runs the
tests again, as the project's playbook says. Then Assay reads what the CLI wrote:

- capture: the session file each CLI keeps (Claude Code's ``projects/…/<id>.jsonl``, Codex's rollout under
  ``$CODEX_HOME/sessions/``), found by :func:`find_sessions` and read by the capture adapters;
- replay: one exam, authored in Claude Code's terms, replayed in a worktree by the ``claude_code`` and the
  ``codex`` runners, judged by its outcome probes.

These are end-to-end tests (the ``claude_cli``/``codex_cli`` fixtures): they skip unless ``make harnesses``
installed the CLIs, and fail instead in CI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import assay.fakes
from assay.adapters.capture import find_sessions, read_session
from assay.adapters.runners.exam_runner import ClaudeCodeRunner, CodexRunner, ExamRunner
from assay.core.exam import (ExamAssertion, ExamEnvironment, ExamRunner as ExamRunnerSpec, ExamSource, ExamSpec,
                             ExamTools, ExamWorkspace, exam_digest, write_exam)
from assay.core.runner import CaseSpec, RunJob
from assay.core.session import Session
from assay.fakes.model_clients import CODEX_MODEL, claude_environment, codex_environment
from assay.fakes.model_server import ScriptedModel

EXAM_PROJECT = Path(assay.fakes.__file__).parent / "exam_project"
ASK = "test_half_a_cent_rounds_up fails: fix the discount rounding in pricing.py"
TESTS = "python -m pytest -q"
PINS = dict(re.findall(r"^(\w+_VERSION) := (\S+)$", (Path(__file__).parents[2] / "Makefile").read_text(), re.M))
CLAUDE_VERSION, CODEX_VERSION = PINS["CLAUDE_CODE_VERSION"], PINS["CODEX_VERSION"]
"""The versions ``make harnesses`` installs, as the Makefile pins them."""
QUICK_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Assay", "-c", "user.email=assay@example.com", "-c",
                           "commit.gpgsign=false", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@dataclass
class Offline:
    """A sample project in git, the scripted model, and the environment that sends a CLI's calls to it."""

    repo: Path
    model: ScriptedModel
    env: dict[str, str]


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[Offline]:
    repo = tmp_path / "shop"
    shutil.copytree(EXAM_PROJECT, repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the shop, with a rounding bug")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **QUICK_PYTEST, "HOME": str(home),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # as root, Claude Code runs without permission prompts only in a sandbox
    with ScriptedModel() as model:
        env |= claude_environment(model.url, home / ".claude") | codex_environment(model.url, home / ".codex")
        yield Offline(repo.resolve(), model, env)
    assert model.unknown == [], f"the CLI called paths the scripted model does not serve: {model.unknown}"


def run_claude(binary: str, offline: Offline) -> list[dict]:
    done = subprocess.run([binary, "-p", ASK, "--output-format", "stream-json", "--verbose", "--tools",
                           "Bash,Edit,Read", "--permission-mode", "bypassPermissions"], cwd=offline.repo,
                          env=offline.env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def run_codex(binary: str, offline: Offline) -> list[dict]:
    done = subprocess.run([binary, "exec", "--json", "--sandbox", "workspace-write", ASK], cwd=offline.repo,
                          env=offline.env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def the_session(offline: Offline, harness: str) -> Session:
    """The one session of ``harness`` that started in the project, read from the file the CLI wrote."""
    found = [ref for ref in find_sessions(offline.repo, offline.env) if ref.harness == harness]
    assert len(found) == 1, found
    return read_session(found[0].path, harness)


def assert_the_fix(session: Session, offline: Offline, version: str) -> None:
    """The session as the playbook played it: the ask, the failing then passing tests, the edit, the pins."""
    assert session.harness_version == version
    assert session.cwd == str(offline.repo)
    asks = [turn.text for turn in session.turns if turn.role == "user" and turn.text]
    assert asks[0] == ASK
    tests = [(c.command, c.exit_code) for c in session.commands if c.is_test]
    assert tests == [(TESTS, 1), (TESTS, 0)]
    assert [Path(offline.repo, path).resolve() for path in session.files_written] == [offline.repo / "pricing.py"]
    assert "rounding=decimal.ROUND_HALF_UP" in (offline.repo / "pricing.py").read_text()
    assert not session.capture.unmatched_calls and not session.capture.bad_lines


def test_claude_code_writes_a_session_file_that_capture_reads(claude_cli: str, offline: Offline) -> None:
    events = run_claude(claude_cli, offline)
    init, result = events[0], events[-1]
    assert init["subtype"] == "init" and sorted(init["tools"]) == ["Bash", "Edit", "Read"]
    assert result["type"] == "result" and result["subtype"] == "success" and result["is_error"] is False
    session = the_session(offline, "claude-code")
    assert_the_fix(session, offline, CLAUDE_VERSION)
    assert [c.command for c in session.commands] == [TESTS, TESTS]
    assert session.git_branch == "main"
    assert [call.name for call in session.tool_calls] == ["Read", "Read", "Bash", "Edit", "Bash"]


def test_codex_writes_a_rollout_that_capture_reads(codex_cli: str, offline: Offline) -> None:
    events = run_codex(codex_cli, offline)
    assert events[0]["type"] == "thread.started" and events[-1]["type"] == "turn.completed"
    session = the_session(offline, "codex")
    assert session.session_id == events[0]["thread_id"]
    assert_the_fix(session, offline, CODEX_VERSION)
    assert [c.command for c in session.commands] == ["cat pricing.py", "cat tests/test_pricing.py", TESTS, TESTS]
    assert session.git_commit == git(offline.repo, "rev-parse", "HEAD")


def an_exam(repo: Path) -> Path:
    """An exam of the fix, authored once in Claude Code's terms: its tools, a test command that must pass."""
    spec = ExamSpec(slug="half-cent-rounding", runner=ExamRunnerSpec(name="claude-code"), model="claude-sonnet-4-6",
                    workspace=ExamWorkspace(commit=git(repo, "rev-parse", "HEAD")),
                    environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
                    tools=ExamTools(allow=("Bash", "Edit", "Read")),
                    source=ExamSource(session_id="recorded", harness="claude-code"))
    assertions = [
        ExamAssertion(key="tests-pass", tier="outcome", check="command_passes", params={"command": TESTS},
                      status="accepted"),
        ExamAssertion(key="rounds-half-up", tier="outcome", check="file_contains",
                      params={"path": "pricing.py", "text": "ROUND_HALF_UP"}, status="accepted")]
    return write_exam(repo / ".assay" / "exams" / spec.slug, spec, ASK + "\n", assertions)


def replay_job(offline: Offline, exam_dir: Path, name: str) -> RunJob:
    """A job of one replay of the exam at ``exam_dir``, as loading the exam would target it (its run id unique:
    the run's worktrees go to a folder named for it)."""
    run_id = f"run-{name}-{uuid.uuid4().hex[:8]}"
    target = {"exam": {"repo": str(offline.repo), "dir": str(exam_dir.relative_to(offline.repo)),
                       "harness": "claude-code", "sha256": exam_digest(exam_dir)}}
    return RunJob(run_id=run_id, team_id="team", suite_key="exams/exam-half-cent-rounding", target_kind="exam",
                  target=target, cases=(CaseSpec(case_id="case", case_key="half-cent-rounding", content={},
                                                 source_ref="replay-0001"),))


def replayed(runner: ExamRunner, job: RunJob) -> dict:
    """The one case run the runner reported, its artefact read."""
    [report] = list(runner.execute(job, lambda: None))
    [run] = report.case_runs.to_pylist()
    return {**run, "artefact": json.loads(run["artefact"])}


@pytest.mark.parametrize("runner,tool_names", [
    (ClaudeCodeRunner, ["Read", "Read", "Bash", "Edit", "Bash"]),
    (CodexRunner, ["Bash", "Bash", "Bash", "Edit", "Bash"]),
], ids=["claude_code", "codex"])
def test_one_exam_replays_on_both_real_harnesses_alike(runner: type[ExamRunner], tool_names: list[str],
                                                       offline: Offline, claude_cli: str, codex_cli: str) -> None:
    env = {**offline.env, "ASSAY_CLAUDE_BIN": claude_cli, "ASSAY_CODEX_BIN": codex_cli}
    run = replayed(runner(env=env, timeout=300), replay_job(offline, an_exam(offline.repo), runner.name))
    assert run["status"] == "executed", run["error"]
    workspace = run["artefact"]["workspace"]
    assert {(p["key"], p["held"]) for p in workspace["probes"]} >= {("tests-pass", True), ("rounds-half-up", True)}
    assert [f["path"] for f in workspace["files_changed"]] == ["pricing.py"]
    assert [call["name"] for call in run["tool_calls"]] == tool_names
    assert (offline.repo / "pricing.py").read_text() == (EXAM_PROJECT / "pricing.py").read_text()  # a worktree did it


@pytest.mark.parametrize("asked,used", [(None, CODEX_MODEL), ("gpt-5.1-codex-mini", "gpt-5.1-codex-mini")],
                         ids=["codex-configured-model", "model-asked"])
def test_the_codex_runner_replays_a_claude_code_exam_with_codexs_model_or_the_one_asked(
        codex_cli: str, offline: Offline, asked: str | None, used: str) -> None:
    runner = CodexRunner(model=asked, env={**offline.env, "ASSAY_CODEX_BIN": codex_cli}, timeout=300)
    run = replayed(runner, replay_job(offline, an_exam(offline.repo), asked or "configured"))
    condition = run["artefact"]["condition"]
    assert run["status"] == "executed", run["error"]
    assert (condition["harness"], condition["model"], condition["model_overridden"]) == ("codex", asked,
                                                                                       asked is not None)
    asks = [r.body for r in offline.model.requests if r.path == "/v1/responses"]
    assert {body["model"] for body in asks} == {used}  # the exam's Claude model never reaches Codex
    offered = {tool.get("name") or tool["type"] for body in asks for tool in body["tools"]}
    assert "exec_command" in offered and "web_search" not in offered  # the exam does not allow WebSearch
