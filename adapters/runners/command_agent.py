"""Replaying an exam with any agent that runs as a shell command: no transcript, only the workspace.

The command line is ``$ASSAY_EXAM_COMMAND`` (run with ``bash -c`` from the worktree's root). The agent finds
the exam's ask in the file named by ``$ASSAY_INSTRUCTION_FILE`` and on its stdin. Nothing it prints is read
as a session, so only the exam's outcome checks can be decided; its exit status is recorded as how it
stopped (a non-zero exit is the agent's behaviour, not an error), and only a run past the timeout is an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from assay.core.errors import UsageError
from assay.core.exam import Exam

from .harness import OUTCOME_CHECKS, HarnessAdapter, HarnessOutcome

__all__ = ["COMMAND_VARIABLE", "INSTRUCTION_VARIABLE", "CommandHarness"]

COMMAND_VARIABLE = "ASSAY_EXAM_COMMAND"
"""The environment variable holding the agent's shell command line."""
INSTRUCTION_VARIABLE = "ASSAY_INSTRUCTION_FILE"
"""The environment variable naming the file that holds the exam's ask."""


class CommandHarness(HarnessAdapter):
    """An agent run as a shell command, judged only by what it leaves in the workspace."""

    name: ClassVar[str] = "command"
    guarantees: ClassVar[tuple[str, ...]] = (
        "no transcript: trajectory checks unsupported",
        "outcome checks only, read from the workspace after the command exits",
        "stop reason: the command's exit status ('success' for 0, else 'exit N'); only a timeout is an error",
        "cost: not known (None)",
    )
    supports: ClassVar[frozenset[str]] = OUTCOME_CHECKS
    feeds_stdin: ClassVar[bool] = True

    def __init__(self, command: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        """``command`` overrides ``$ASSAY_EXAM_COMMAND`` (read from ``environ``, default this process's)."""
        environ = os.environ if environ is None else environ
        self.shell_command = command or environ.get(COMMAND_VARIABLE) or None

    def command(self, exam: Exam, instruction_file: Path, session_id: str) -> list[str]:
        """``bash -c`` the agent's command line; :class:`UsageError` when none was given."""
        if not self.shell_command or not self.shell_command.strip():
            raise UsageError(f"exam {exam.spec.slug!r}: no agent command to replay it with; set {COMMAND_VARIABLE} "
                             "to the shell command that runs the agent")
        return ["bash", "-c", self.shell_command]

    def environment(self, instruction_file: Path) -> dict[str, str]:
        """The instruction file's path, in ``$ASSAY_INSTRUCTION_FILE``."""
        return {INSTRUCTION_VARIABLE: str(instruction_file)}

    def interpret(self, stdout: list[str], exit_code: int | None, stderr: str, *, exam: Exam, started: datetime,
                  ended: datetime) -> HarnessOutcome:
        """Executed, whatever the exit status; the status is the stop reason."""
        if exit_code == 0:
            stop = "success"
        elif exit_code is not None and exit_code < 0:
            stop = f"killed by signal {-exit_code}"
        else:
            stop = f"exit {exit_code}"
        return HarnessOutcome(session=None, status="executed", stop_reason=stop,
                              duration_ms=(ended - started).total_seconds() * 1000)
