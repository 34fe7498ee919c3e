"""Replaying an exam with a headless coding-agent harness: the part that is the same for every harness.

:func:`replay` makes a git worktree at the exam's pin (patch applied), runs the harness there through a
:class:`HarnessAdapter` (which knows the harness's command line and reads its output), then runs the exam's
outcome probes in the worktree, and removes the worktree. The :class:`Replay` it returns becomes one
:class:`~assay.core.evidence.CaseRun` (:meth:`Replay.case_run`): the exam is the case, the replay a case run.

A harness that fails — crashes, reports an error, runs past the timeout, or does not keep to the exam's
tool allowlist — is status ``error`` (never a failed exam); only our own bad input raises (a missing
repository, a patch that does not apply, an adapter that cannot be configured).

:data:`HARNESSES` names every adapter by its harness's name, so a flow picks one from ``exam.spec.runner.name``
(:func:`harness_for`) without naming a harness itself.
"""

from __future__ import annotations

import functools
import os
import secrets
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from assay.core.errors import NotFoundError
from assay.core.evidence import CaseRun, ToolCall, Turn, TurnRole
from assay.core.exam import Exam
from assay.core.session import Session

from .exam_probes import PROBE_TIMEOUT, Probe, run_probes
from .watched import run_watched
from .worktree import ChangedFile, changed_files, replay_worktree

__all__ = ["HARNESSES", "HarnessAdapter", "HarnessOutcome", "OUTCOME_CHECKS", "Replay", "harness_for",
           "replay"]

OUTCOME_CHECKS = frozenset({"command_passes", "verify", "file_changed", "file_contains"})
"""The checks a replay's workspace decides, whatever the harness reports."""
_ROLES: dict[str, TurnRole] = {"user": "caller", "assistant": "agent", "system": "system"}


@dataclass(frozen=True)
class HarnessOutcome:
    """What a harness run came to, as its adapter reads it."""

    session: Session | None
    """The session the harness reported (None for an adapter with no transcript, or an empty run)."""
    status: Literal["executed", "error"]
    error: str | None = None
    """Why the run is an error, in words a person can act on."""
    stop_reason: str | None = None
    """How the agent stopped: ``success``, ``error_max_turns``, ``error_max_budget_usd``, ``timeout``, ..."""
    cost_usd: float | None = None
    duration_ms: float | None = None
    tools_offered: tuple[str, ...] | None = None
    """The tools the harness says it gave the agent (None when it does not say)."""
    allowlist_held: bool | None = None
    """Whether those were exactly the exam's allowlist (None when the harness does not say)."""


class HarnessAdapter(ABC):
    """Runs one headless harness and reads what it printed."""

    name: ClassVar[str]
    """The harness's name (as the exam's ``runner.name`` gives it)."""
    guarantees: ClassVar[tuple[str, ...]] = ()
    """One line each: what evidence a replay with this adapter yields."""
    supports: ClassVar[frozenset[str]] = frozenset()
    """The exam checks (by name) its evidence can decide."""
    feeds_stdin: ClassVar[bool] = False
    """Whether the instruction file is also given to the harness on stdin."""
    also_replays: ClassVar[frozenset[str]] = frozenset()
    """Other harnesses whose exams this one can replay (their allowlists read in its tool names)."""
    tool_names: ClassVar[Mapping[str, str]] = {}
    """The harness's tool names -> the names exams are written in, for a harness whose tools are named
    otherwise (the reported call keeps its own name in its arguments as ``harness_tool``)."""

    @abstractmethod
    def command(self, exam: Exam, instruction_file: Path, session_id: str) -> list[str]:
        """The command line that replays ``exam`` (run from the worktree's root)."""

    @abstractmethod
    def interpret(self, stdout: list[str], exit_code: int | None, stderr: str, *, exam: Exam, started: datetime,
                  ended: datetime) -> HarnessOutcome:
        """What the run came to, from its stdout lines, exit status (None: it never started) and stderr."""

    def environment(self, instruction_file: Path) -> dict[str, str]:
        """Variables added to the harness's environment (none by default)."""
        return {}


@dataclass(frozen=True)
class Replay:
    """One replay of an exam: the harness's outcome and what the workspace showed afterwards."""

    outcome: HarnessOutcome
    files_changed: list[ChangedFile]
    """What the agent changed, relative to the starting state (pin plus patch)."""
    probes: list[Probe]
    worktree_name: str
    started_at: datetime
    ended_at: datetime
    adapter: str
    """The harness adapter's name."""
    probes_skipped: str | None = None
    """Why no probe ran (the harness failed before doing anything), or None."""
    guarantees: tuple[str, ...] = ()
    """What the adapter guarantees about its evidence."""
    tool_names: Mapping[str, str] = field(default_factory=dict)
    """The adapter's :attr:`HarnessAdapter.tool_names`: how its calls are named in the case run."""

    @property
    def wall_seconds(self) -> float:
        """How long the harness ran (probes not included)."""
        return (self.ended_at - self.started_at).total_seconds()

    def case_run(self, case_id: str, source_ref: str = "") -> CaseRun:
        """This replay as a case run: the conversation, the tool calls, and the workspace and session summary
        in ``artefact``."""
        session, outcome = self.outcome.session, self.outcome
        transcript = [Turn(role=_ROLES[t.role], text=t.text)
                      for t in (session.turns if session else ()) if t.agent_id is None and t.text]
        calls = [ToolCall(name=self.tool_names.get(c.name, c.name),
                          arguments={**c.input, "harness_tool": c.name} if c.name in self.tool_names else c.input,
                          result=c.output, is_error=c.status == "error")
                 for c in (session.tool_calls if session else ())]
        duration = outcome.duration_ms if outcome.duration_ms is not None else self.wall_seconds * 1000
        return CaseRun(case_id=case_id, source_ref=source_ref, status=outcome.status, error=outcome.error,
                       transcript=transcript, tool_calls=calls, cost_usd=outcome.cost_usd, duration_ms=duration,
                       started_at=self.started_at, artefact=self.artefact())

    def artefact(self) -> dict[str, Any]:
        """The JSON-safe summary kept with the case run: ``workspace`` (files changed, probes) and ``session``."""
        workspace: dict[str, Any] = {
            "worktree": self.worktree_name,
            "files_changed": [{"status": c.status, "path": c.path} for c in self.files_changed],
            "probes": [p.as_json() for p in self.probes]}
        if self.probes_skipped:
            workspace["probes_skipped"] = self.probes_skipped
        return {"workspace": workspace, "session": self._session_summary()}

    def _session_summary(self) -> dict[str, Any]:
        session, outcome = self.outcome.session, self.outcome
        summary: dict[str, Any] = {
            "adapter": self.adapter, "guarantees": list(self.guarantees),
            "harness": session.harness if session else self.adapter,
            "harness_version": session.harness_version if session else None,
            "model": session.model if session else None,
            "tools_offered": list(outcome.tools_offered) if outcome.tools_offered is not None else None,
            "allowlist_held": outcome.allowlist_held, "stop_reason": outcome.stop_reason,
            "cost_usd": outcome.cost_usd, "wall_seconds": round(self.wall_seconds, 3)}
        if session is None:
            return {**summary, "transcript": False}
        capture = session.capture
        return {**summary, "transcript": True,
                "turns": sum(1 for t in session.turns if t.role == "assistant" and t.agent_id is None),
                "tool_calls": len(session.tool_calls), "files_read": list(session.files_read),
                "files_written": list(session.files_written),
                "reads_before_first_write": len(session.reads_before_first_write()[0]),
                "tool_mix": dict(Counter(c.name for c in session.tool_calls)),
                "commands": [{"command": c.command, "exit_code": c.exit_code, "is_test": c.is_test}
                             for c in session.commands],
                "tokens": {**session.tokens.model_dump(), "total": session.tokens.total},
                "subagents": len(session.subagents),
                "capture": {"lines": capture.lines, "bad_lines": len(capture.bad_lines),
                            "unknown_types": sum(capture.unknown_types.values()),
                            "duplicate_lines": capture.duplicate_lines,
                            "unmatched_calls": len(capture.unmatched_calls),
                            "orphan_results": len(capture.orphan_results)}}


def _now() -> datetime:
    return datetime.now(UTC)


def replay(exam: Exam, repo: Path, adapter: HarnessAdapter, *, parent: Path, env: Mapping[str, str] | None = None,
           timeout: float | None = None, heartbeat: Callable[[], None] | None = None, replay_name: str,
           probe_timeout: float = PROBE_TIMEOUT) -> Replay:
    """Replay ``exam`` once with ``adapter`` in a fresh worktree of ``repo`` under ``parent``; the worktree is
    removed afterwards.

    ``env`` is the whole environment of the harness and the probes (default: this process's); ``timeout``
    bounds the harness's run in seconds (then status ``error``, stop reason ``timeout``); ``heartbeat`` is
    called as the harness prints and at least every few seconds; ``replay_name`` (a file-name-safe word) goes
    into the worktree's name, which a random suffix makes unique, so replays of one exam can run in parallel."""
    environ = dict(os.environ if env is None else env)
    name = f"{exam.spec.slug}-{replay_name}-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory(prefix="assay-instruction-") as scratch, \
            replay_worktree(repo, exam.spec.workspace.commit, exam.patch_path, parent=Path(parent), name=name,
                            exam=exam.spec.slug) as tree:
        instruction_file = Path(scratch) / "instruction.md"
        instruction_file.write_text(exam.instruction, encoding="utf-8")
        argv = adapter.command(exam, instruction_file, str(uuid.uuid4()))
        started = _now()
        run = run_watched(argv, cwd=tree.path, env={**environ, **adapter.environment(instruction_file)},
                          stdin=instruction_file if adapter.feeds_stdin else None, timeout=timeout,
                          heartbeat=heartbeat)
        ended = _now()
        if run.start_error is not None:
            outcome = HarnessOutcome(session=None, status="error", error=f"the harness could not start: "
                                                                          f"{run.start_error}")
        else:
            outcome = adapter.interpret(run.lines, run.exit_code, run.stderr, exam=exam, started=started,
                                        ended=ended)
        if run.timed_out:
            outcome = replace(outcome, status="error", stop_reason="timeout",
                              error=f"timeout: the harness was still running after {timeout:g} s and was stopped")
        files = changed_files(tree)
        acted = bool(files) or bool(outcome.session and outcome.session.tool_calls)
        skipped = None
        if outcome.status == "error" and not acted:
            skipped = f"no outcome probe ran: the harness failed before doing anything ({outcome.error})"
            probes: list[Probe] = []
        else:
            probes = run_probes(exam, tree.path, files, env=environ, timeout=probe_timeout, heartbeat=heartbeat)
    return Replay(outcome=outcome, files_changed=files, probes=probes, worktree_name=name, started_at=started,
                  ended_at=ended, adapter=adapter.name, probes_skipped=skipped, guarantees=adapter.guarantees,
                  tool_names=dict(adapter.tool_names))


@functools.cache
def _harnesses() -> dict[str, type[HarnessAdapter]]:
    from .claude_code import ClaudeCodeHarness
    from .codex import CodexHarness
    from .command_agent import CommandHarness

    return {adapter.name: adapter for adapter in (ClaudeCodeHarness, CodexHarness, CommandHarness)}


def __getattr__(name: str) -> Any:
    """:data:`HARNESSES` is built on first use: its adapters' modules import this one."""
    if name == "HARNESSES":
        return _harnesses()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


HARNESSES: dict[str, type[HarnessAdapter]]
"""Every harness adapter by its harness's name (as an exam's ``runner.name`` gives it)."""


def harness_for(name: str, environ: Mapping[str, str] | None = None) -> HarnessAdapter:
    """The adapter that replays exams of harness ``name``, configured from ``environ`` (default: this process's);
    :class:`NotFoundError` naming the known harnesses when there is none."""
    known = _harnesses()
    if name not in known:
        raise NotFoundError("harness adapter", name, "an exam replays with the harness its exam.toml names "
                            "(runner.name)", known=sorted(known), known_as="known harnesses")
    return known[name](environ=environ)
