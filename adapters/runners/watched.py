"""A watched subprocess: its output read line by line, a heartbeat while it runs, a deadline, no leftovers.

A replay runs programs it does not control (a coding-agent harness, an agent's own command, the exam's
test command). :func:`run_watched` starts one in a process group of its own, reads its stdout as lines
arrive, calls ``heartbeat`` for each line and at least every :data:`HEARTBEAT_SECONDS` while it runs, kills
the whole group at the deadline, and kills whatever the program left running when it exits — so nothing
keeps writing to a worktree that is about to be removed.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["HEARTBEAT_SECONDS", "Watched", "run_watched"]

HEARTBEAT_SECONDS = 2.0
"""The longest the heartbeat goes uncalled while a program runs."""
STDERR_CHARS = 20_000
"""How much of the end of stderr is kept."""
_END = object()


@dataclass(frozen=True)
class Watched:
    """How a watched program ended."""

    lines: list[str]
    """Its stdout, line by line (newlines removed); stderr too when it was merged."""
    exit_code: int | None
    """Its exit status (negative: the signal that ended it); None when it could not start."""
    stderr: str
    """The end of its stderr (empty when merged into ``lines``)."""
    timed_out: bool = False
    start_error: str | None = None
    """Why it could not start (a missing program, a bad working directory)."""


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _pump(stream: IO[str], lines: queue.Queue[object]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(_END)


def run_watched(argv: list[str], *, cwd: Path, env: Mapping[str, str], stdin: Path | None = None,
                timeout: float | None = None, heartbeat: Callable[[], None] | None = None,
                merge_stderr: bool = False) -> Watched:
    """Run ``argv`` in ``cwd`` with exactly ``env``; ``stdin`` is a file fed to it (else it reads nothing).

    At ``timeout`` seconds the program and everything it started are killed and :attr:`Watched.timed_out`
    is set; a program that cannot start is :attr:`Watched.start_error`, never an exception."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errors, \
            open(stdin if stdin is not None else os.devnull, "rb") as feed:
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=feed, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT if merge_stderr else errors, text=True,
                                       encoding="utf-8", errors="replace", start_new_session=True)
        except OSError as error:
            return Watched(lines=[], exit_code=None, stderr="", start_error=f"{argv[0]}: {error.strerror or error}")
        assert process.stdout is not None
        arrived: queue.Queue[object] = queue.Queue()
        pump = threading.Thread(target=_pump, args=(process.stdout, arrived), daemon=True)
        pump.start()
        try:
            lines, timed_out = _follow(process, arrived, timeout, heartbeat)
        finally:  # also when the heartbeat raised: nothing it started may outlive the call
            _kill_group(process)
            process.wait()
            pump.join(timeout=HEARTBEAT_SECONDS)
            if not pump.is_alive():  # else a process that escaped the group still holds the pipe: leave it be
                process.stdout.close()
        while not arrived.empty():
            item = arrived.get()
            if isinstance(item, str):
                lines.append(item.rstrip("\n"))
        errors.seek(0)
        tail = errors.read()[-STDERR_CHARS:]
    return Watched(lines=lines, exit_code=process.returncode, stderr=tail, timed_out=timed_out)


def _follow(process: subprocess.Popen[str], arrived: queue.Queue[object], timeout: float | None,
            heartbeat: Callable[[], None] | None) -> tuple[list[str], bool]:
    """Read lines until the program has exited and its output has ended, or the deadline passes;
    returns (lines, timed out)."""
    lines: list[str] = []
    deadline = None if timeout is None else time.monotonic() + timeout
    output_open = True
    while True:
        left = HEARTBEAT_SECONDS if deadline is None else deadline - time.monotonic()
        wait = max(0.05, min(HEARTBEAT_SECONDS, left))
        item: object = None
        if output_open:
            try:
                item = arrived.get(timeout=wait)
            except queue.Empty:
                pass
        else:
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        if heartbeat is not None:
            heartbeat()
        if item is _END:
            output_open = False
        elif isinstance(item, str):
            lines.append(item.rstrip("\n"))
        exited = process.poll() is not None
        if exited and not output_open:
            return lines, False
        if deadline is not None and time.monotonic() >= deadline and not exited:
            return lines, True
        if exited and item is None:
            _kill_group(process)  # it exited; whatever it left running still holds its output open
