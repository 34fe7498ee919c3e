"""Replaying an exam with the OpenAI Codex CLI run headless (``codex exec --json``).

The command reads the exam's ask on stdin (``-``) and runs in the replay's worktree with no approval prompts
(``codex exec`` never asks). An exam that allows a tool that writes replays without Codex's sandbox, as Claude
Code's replays run without permission prompts: the worktree is thrown away, and the ``workspace-write``
sandbox would leave a marker file (``.codex``) in the workspace that counts as a change; any other exam
replays in the ``read-only`` sandbox. It prints one JSON event per line:
``thread.started`` (the thread id), ``turn.started``, ``item.started``/``item.completed`` (agent messages,
command executions, file changes) and ``turn.completed`` (usage) or ``turn.failed``/``error``. The session
itself is read from the rollout Codex writes for that thread (``$CODEX_HOME/sessions/…/rollout-…-<thread
id>.jsonl``) by the Codex capture reader. The program is ``$ASSAY_CODEX_BIN``, else ``codex`` on PATH; which
model provider and model it talks to is Codex's own configuration (``$CODEX_HOME/config.toml``).

An exam distilled from a Claude Code session replays here too: its allowlist is in Claude Code's tool names,
and so are the tool calls this adapter reports (:attr:`CodexHarness.tool_names`), so the exam's ``tool_used``
and ``tool_not_used`` assertions judge both harnesses alike. What Codex cannot be told is stated in
:attr:`CodexHarness.guarantees`: it has no tool allowlist (its shell is always offered, ``apply_patch`` to the
models it knows; the allowlist chooses the sandbox, and web search is off unless the exam allows WebSearch), no
turn cap and no budget cap (the wall-time cap still holds: it is the replay's timeout), and it reports no
cost. Such an exam's model is Claude's: the runner drops it, so Codex uses its configured model unless the run
asks for one (``--model``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.errors import AssayError
from assay.core.exam import Exam
from assay.core.exam_checks import CHECKS
from assay.core.session import Session

from ..capture import read_session
from .harness import HarnessAdapter, HarnessOutcome

__all__ = ["BINARY_VARIABLE", "CodexHarness"]

HARNESS = "codex"
BINARY_VARIABLE = "ASSAY_CODEX_BIN"
"""The environment variable naming the program to run instead of ``codex`` on PATH."""
WRITING_TOOLS = frozenset({"Bash", "Edit", "Write", "NotebookEdit"})
"""Allowlisted tools that change the workspace: without any of them the replay runs in a read-only sandbox."""
TOOL_NAMES = {"exec_command": "Bash", "write_stdin": "Bash", "shell": "Bash", "shell_command": "Bash",
              "local_shell": "Bash", "apply_patch": "Edit", "update_plan": "TodoWrite", "web_search": "WebSearch"}
"""Codex's tools -> the Claude Code tool that does the same, the vocabulary exams are written in."""
STDERR_TAIL = 1500


class CodexHarness(HarnessAdapter):
    """The Codex CLI, headless, with JSON events and its rollout file."""

    name: ClassVar[str] = HARNESS
    guarantees: ClassVar[tuple[str, ...]] = (
        "session read from Codex's own rollout file for the run's thread (calls paired by call_id)",
        "tool calls reported in Claude Code's names (exec_command -> Bash, apply_patch -> Edit); the Codex name "
        "is kept in each call's arguments as harness_tool",
        "allowlist: not enforceable (Codex always offers its shell); it picks the sandbox (read-only when the "
        "exam allows no tool that writes, else none: the worktree is thrown away) and switches web search off "
        "unless WebSearch is allowed",
        "caps: no turn or budget cap (Codex has neither); the wall-time cap holds as the replay's timeout",
        "cost: none reported (Codex reports tokens only)",
        "a run with no turn.completed event, a turn.failed or error event, or a non-zero exit is an error",
    )
    supports: ClassVar[frozenset[str]] = frozenset(CHECKS)
    feeds_stdin: ClassVar[bool] = True
    also_replays: ClassVar[frozenset[str]] = frozenset({"claude-code"})
    tool_names: ClassVar[Mapping[str, str]] = TOOL_NAMES

    def __init__(self, binary: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        """``binary`` overrides ``$ASSAY_CODEX_BIN``; ``environ`` (default this process's) says where Codex keeps
        its rollouts (``$CODEX_HOME``, else ``~/.codex``)."""
        environ = os.environ if environ is None else environ
        self.binary = binary or environ.get(BINARY_VARIABLE) or "codex"
        home = environ.get("CODEX_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".codex")
        self.home = Path(home)

    def command(self, exam: Exam, instruction_file: Path, session_id: str) -> list[str]:
        """The headless command line replaying ``exam``; the ask comes on stdin."""
        spec = exam.spec
        writes = bool(WRITING_TOOLS & set(spec.tools.allow))
        argv = [self.binary, "exec", "--json", "--skip-git-repo-check", "--color", "never",
                "--sandbox", "danger-full-access" if writes else "read-only"]
        if "WebSearch" not in spec.tools.allow:
            argv += ["-c", 'web_search="disabled"']
        if spec.model:  # none for another harness's exam (the runner drops its model): Codex's configured one
            argv += ["--model", spec.model]
        return [*argv, "-"]

    def interpret(self, stdout: list[str], exit_code: int | None, stderr: str, *, exam: Exam, started: datetime,
                  ended: datetime) -> HarnessOutcome:
        """The run's outcome from its events, the session from its rollout."""
        events = [event for event in map(_event, stdout) if event is not None]
        thread = next((str(e.get("thread_id")) for e in events if e.get("type") == "thread.started"), None)
        session = self.rollout_session(thread) if thread else None
        wall_ms = (ended - started).total_seconds() * 1000
        failures = [_message(e) for e in events if e.get("type") in ("turn.failed", "error")]
        tail = stderr.strip()[-STDERR_TAIL:] or "(nothing on stderr)"
        if failures:
            stop, problem = "error", f"the harness reported an error: {'; '.join(failures)}"
        elif not any(e.get("type") == "turn.completed" for e in events):
            stop, problem = "crash", f"the harness crashed (exit {exit_code}, no turn.completed event): {tail}"
        elif exit_code != 0:
            stop, problem = "success", f"the harness completed its turn but exited {exit_code}: {tail}"
        else:
            return HarnessOutcome(session=session, status="executed", duration_ms=wall_ms, stop_reason="success")
        return HarnessOutcome(session=session, status="error", error=problem, duration_ms=wall_ms, stop_reason=stop)

    def rollout_session(self, thread: str) -> Session | None:
        """The session in the rollout Codex wrote for ``thread``, or None when there is none to read."""
        found = sorted((self.home / "sessions").glob(f"**/rollout-*-{thread}.jsonl"))
        if not found:
            return None
        try:
            return read_session(found[-1], HARNESS)
        except AssayError:
            return None


def _event(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def _message(event: dict[str, Any]) -> str:
    error = event.get("error")
    found = error.get("message") if isinstance(error, dict) else event.get("message")
    return str(found or "no reason given")
