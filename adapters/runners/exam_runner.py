"""``claude_code`` and ``command_agent``: an exam is a case, each replay of it a case run.

The run target names an exam directory in a repository (``{"exam": {"repo", "dir", "harness", "sha256"}}``,
written when the exam was loaded). For every case of the job — one per replay the run asks for, told apart
by ``source_ref`` (``replay-0003``) — the runner replays the exam with its harness in a fresh git worktree
(:func:`~.harness.replay`) and reports the replay as a case run: the conversation and tool calls when the
harness keeps a transcript, the workspace's probes and the session's summary in the artefact, and the
conditions it ran under (``artefact.condition``). It decides nothing: the ``exam.*``, ``tool.*`` and
``rubric`` mechanisms judge afterwards.

A harness that crashes or errs makes its case run ``error``. The run itself errors only on our own bad
input: an exam changed since it was loaded, one of another harness, a pin or patch that no longer applies,
a harness that cannot be configured.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from assay.core.errors import ConfigError, RunnerError, UsageError
from assay.core.evidence import CaseRun, Report
from assay.core.exam import (Exam, ExamAssertion, ExamEnvironment, ExamRunner as ExamRunnerSpec, ExamSource, ExamSpec,
                             ExamTools, ExamWorkspace, exam_digest, load_exam, write_exam)
from assay.core.exam_checks import mechanism_of
from assay.core.runner import CaseSpec, Heartbeat, Runner, RunJob

from .claude_code import ClaudeCodeHarness
from .codex import CodexHarness
from .command_agent import CommandHarness
from .harness import HarnessAdapter, harness_for, replay
from .worktree import sweep_worktrees

__all__ = ["ClaudeCodeRunner", "CodexRunner", "CommandAgentRunner", "ExamRunner", "evidence_mechanisms", "replays_parent"]

BEAT_SECONDS = 5.0
"""How often the driving thread renews the lease while replays run."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def replays_parent(run_id: str) -> Path:
    """The folder a run's replay worktrees are made in (one per run, so a later execution of the run under
    the same lease can sweep what a killed one left)."""
    return Path(tempfile.gettempdir()) / "assay-replays" / _UNSAFE.sub("-", run_id)


def evidence_mechanisms(adapter: type[HarnessAdapter]) -> frozenset[str]:
    """The mechanisms a replay's evidence supports: those judging the checks the adapter can decide."""
    return frozenset(mechanism_of(check) for check in adapter.supports)


class ExamRunner(Runner):
    """Replays the exam a run targets once per case of the job, with the harness :attr:`harness` names.

    Options: ``condition`` labels the conditions the replays ran under (kept in each artefact); ``model``
    replaces the exam's model for a harness that takes one (:attr:`takes_model`; for any other the condition
    records that it was asked for and not applied); ``env`` adds variables to the harness's
    environment (and configures its adapter: ``ASSAY_CLAUDE_BIN``, ``ASSAY_EXAM_COMMAND``); ``parallel``
    replays run at once; ``timeout`` bounds each harness run in seconds (default: the exam's
    ``caps.max_wall_seconds``, else none)."""

    harness: ClassVar[str]
    """The harness this runner replays with (an exam's ``runner.name``)."""
    also_replays: ClassVar[frozenset[str]] = frozenset()
    """Other harnesses whose exams it replays too (its adapter's :attr:`~.harness.HarnessAdapter.also_replays`)."""
    takes_model: ClassVar[bool] = False
    """Whether the harness can be told which model to use (the ``model`` option)."""
    synchronous: ClassVar[bool] = True
    repeats: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]] = frozenset({"exam"})

    def __init__(self, *, condition: str | None = None, model: str | None = None,
                 env: Mapping[str, str] | None = None, parallel: int = 1, timeout: float | None = None) -> None:
        where = f"runner {self.name!r}"
        if not isinstance(parallel, int) or isinstance(parallel, bool) or parallel < 1:
            raise UsageError(f"{where}: option 'parallel' is {parallel!r}; give a whole number of replays to run "
                             "at once, 1 or more")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise UsageError(f"{where}: option 'timeout' is {timeout!r}; give seconds greater than 0, or leave it "
                             "out to use the exam's caps.max_wall_seconds")
        bad = sorted(str(k) for k, v in (env or {}).items() if not isinstance(k, str) or not isinstance(v, str))
        if bad:
            raise UsageError(f"{where}: option 'env' must map names to text; fix the values of {', '.join(bad)}")
        self.condition, self.model, self.env = condition, model, dict(env or {})
        self.parallel, self.timeout = parallel, timeout

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        if job.target_kind not in self.target_kinds:
            raise RunnerError(f"runner {self.name!r} replays exams; run {job.run_id} targets a {job.target_kind!r}")
        repo, exam = self._exam(job)
        if exam.spec.runner.name != self.harness:  # another harness's exam names that harness's model, not ours
            exam = exam.model_copy(update={"spec": exam.spec.model_copy(update={"model": None})})
        environ = {**os.environ, **self.env}
        adapter = harness_for(self.harness, environ)
        condition = self._condition(exam, adapter)
        if self.model is not None and self.takes_model:
            exam = exam.model_copy(update={"spec": exam.spec.model_copy(update={"model": self.model})})
        timeout = self.timeout if self.timeout is not None else exam.spec.caps.max_wall_seconds
        parent = replays_parent(job.run_id)
        _sweep(repo, parent)  # what a killed execution of this run left; we hold the run's lease

        def one(case: CaseSpec) -> CaseRun:
            name = _UNSAFE.sub("-", case.source_ref).strip("-.") or "replay"
            done = replay(exam, repo, adapter, parent=parent, env=environ, timeout=timeout, replay_name=name)
            run = done.case_run(case.case_id, case.source_ref)
            return run.model_copy(update={"artefact": {**(run.artefact or {}), "condition": condition}})

        try:
            yield from self._batches(job, one, heartbeat)
        finally:
            _sweep(repo, parent)
            shutil.rmtree(parent, ignore_errors=True)

    def _batches(self, job: RunJob, one: Callable[[CaseSpec], CaseRun], heartbeat: Heartbeat) -> Iterator[Report]:
        """Every case replayed, ``parallel`` at a time, reported in job order, ``batch_size`` case runs per
        report. Only this (the driving) thread renews the lease."""
        cases = job.cases
        done: dict[int, CaseRun] = {}
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix=self.name)
        try:
            futures: dict[Future[CaseRun], int] = {pool.submit(one, case): k for k, case in enumerate(cases)}
            pending = set(futures)
            for batch_no, start in enumerate(range(0, len(cases), self.batch_size)):
                end = min(start + self.batch_size, len(cases))
                while any(k not in done for k in range(start, end)):
                    finished, pending = wait(pending, timeout=BEAT_SECONDS, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done[futures[future]] = future.result()  # our own bad input raises here
                    heartbeat()
                yield Report.from_case_runs(f"{job.run_id}:{self.name}:{batch_no}",
                                            [done.pop(k) for k in range(start, end)])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # a replay under way removes its own worktree

    def _exam(self, job: RunJob) -> tuple[Path, Exam]:
        """The repository and the exam the target names, refused when it changed since it was loaded or
        belongs to another harness."""
        target = job.target.get("exam") if isinstance(job.target, dict) else None
        fields = ("repo", "dir", "harness", "sha256")
        if not isinstance(target, dict) or any(not isinstance(target.get(f), str) for f in fields):
            raise ConfigError(f"run {job.run_id}: the run target must be {{'exam': {{{', '.join(fields)}}}}} "
                              f"(text each); got {job.target!r}. Load the exam again to rewrite its suite's target")
        repo = Path(target["repo"])
        exam_dir = repo / target["dir"]
        exam = load_exam(exam_dir)
        if exam_digest(exam_dir) != target["sha256"]:
            raise ConfigError(f"exam {exam.spec.slug!r} at {exam_dir} changed since it was loaded (its files no "
                              f"longer match {target['sha256']}); load it again so the run replays what the suite "
                              "holds, then run it again")
        replayable = {self.harness, *self.also_replays}
        if exam.spec.runner.name not in replayable or target["harness"] not in replayable:
            also = f" (and replays exams of {', '.join(sorted(self.also_replays))})" if self.also_replays else ""
            raise ConfigError(f"exam {exam.spec.slug!r} replays with harness {exam.spec.runner.name!r} "
                              f"({exam_dir / 'exam.toml'}: runner.name), but runner {self.name!r} runs "
                              f"{self.harness!r}{also}; run it with the runner whose harness is "
                              f"{exam.spec.runner.name!r}")
        return repo, exam

    def _condition(self, exam: Exam, adapter: HarnessAdapter) -> dict[str, Any]:
        """What the replays ran under, kept with each case run (variable names only: values may be secrets)."""
        overridden = self.model is not None and self.takes_model
        return {"name": self.condition, "harness": adapter.name, "harness_version": exam.spec.runner.version,
                "model": self.model if overridden else exam.spec.model, "model_overridden": overridden,
                "model_asked": self.model, "fingerprint": exam.spec.environment.fingerprint,
                "env": sorted(self.env), "timeout_seconds": self.timeout, "parallel": self.parallel,
                "guarantees": list(adapter.guarantees)}

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        """A git repository with one small exam of this runner's harness: add a line to ``greeting.txt``.

        Replaying it needs the harness configured: ``$ASSAY_CLAUDE_BIN`` naming a harness that reads
        ``.fake-harness/playbook.toml`` (committed here), or ``$ASSAY_EXAM_COMMAND``."""
        repo = Path(workdir) / "example-repo"
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "greeting.txt").write_text("hello\n", encoding="utf-8")
        (repo / ".fake-harness").mkdir(exist_ok=True)
        (repo / ".fake-harness" / "playbook.toml").write_text(
            '[[good]]\nsay = "Let me look."\nread = "greeting.txt"\n'
            '[[good]]\nedit = { path = "greeting.txt", old = "hello", new = "hello, world" }\n'
            '[[good]]\nsay = "Done."\n', encoding="utf-8")
        for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "example")):
            _git(repo, *args)
        commit = _git(repo, "rev-parse", "HEAD").strip()
        slug = "greet-the-world"
        spec = ExamSpec(slug=slug, runner=ExamRunnerSpec(name=cls.harness), workspace=ExamWorkspace(commit=commit),
                        environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
                        tools=ExamTools(allow=("Edit", "Read")),
                        source=ExamSource(session_id="example-session", harness=cls.harness))
        assertions = [
            ExamAssertion(key="greets-the-world", tier="outcome", check="file_contains",
                          params={"path": "greeting.txt", "text": "hello, world"}, status="accepted"),
            ExamAssertion(key="greeting-changed", tier="outcome", check="file_changed",
                          params={"path": "greeting.txt"}, status="accepted")]
        exam_dir = write_exam(repo / ".assay" / "exams" / slug, spec, "Make greeting.txt say hello, world.\n",
                              assertions)
        return "exam", {"exam": {"repo": str(repo.resolve()), "dir": f".assay/exams/{slug}", "harness": cls.harness,
                                 "sha256": exam_digest(exam_dir)}}


def _sweep(repo: Path, parent: Path) -> None:
    if parent.exists():
        sweep_worktrees(repo, parent)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Assay", "-c", "user.email=assay@example.com", "-c",
                           "commit.gpgsign=false", *args], cwd=repo, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RunnerError(f"git {' '.join(args)} in {repo} failed: {done.stderr.strip()}")
    return done.stdout


class ClaudeCodeRunner(ExamRunner):
    """Replays exams with Claude Code, headless: transcript, tool calls and workspace."""

    name: ClassVar[str] = "claude_code"
    harness: ClassVar[str] = ClaudeCodeHarness.name
    takes_model: ClassVar[bool] = True
    mechanisms: ClassVar[frozenset[str]] = evidence_mechanisms(ClaudeCodeHarness)


class CodexRunner(ExamRunner):
    """Replays exams with the Codex CLI, headless: its own exams and Claude Code's, read in Claude Code's tool
    names (see :mod:`.codex` for what Codex cannot be told)."""

    name: ClassVar[str] = "codex"
    harness: ClassVar[str] = CodexHarness.name
    also_replays: ClassVar[frozenset[str]] = CodexHarness.also_replays
    takes_model: ClassVar[bool] = True
    mechanisms: ClassVar[frozenset[str]] = evidence_mechanisms(CodexHarness)
    known_gaps: ClassVar[Mapping[str, str]] = MappingProxyType({
        "test_declared_mechanisms_are_honest": "an executed replay needs the Codex CLI and a model, which the kit "
                                               "does not configure (the real CLI is tested end to end against the "
                                               "scripted model)"})


class CommandAgentRunner(ExamRunner):
    """Replays exams with an agent run as a shell command (``$ASSAY_EXAM_COMMAND``): the workspace only."""

    name: ClassVar[str] = "command_agent"
    harness: ClassVar[str] = CommandHarness.name
    mechanisms: ClassVar[frozenset[str]] = evidence_mechanisms(CommandHarness)
