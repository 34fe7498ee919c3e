"""Suggested assertions for an exam, read off the blessed session, each citing what it came from.

Every suggestion is a draft: a person accepts or deletes it (``assay review``) before the exam runs.

- outcome: each test command that turned green (failed, then passed, and passed last) must pass; up to
  three commands that passed throughout must still pass; each file written must change, cited by the calls
  whose write tools wrote it (never by a call that only mentions it);
- trajectory: the changed files stay within those written (a folder with more than three becomes a glob);
  the tools that wrote files or ran tests are used; caps on turns, cost and wall time; bands on cost and
  turns, calibrated later from the exam's own baseline replays;
- profile: reads before the first write, and the tool mix — diagnostic only;
- judged: one rubric, "the change does what was asked".
"""

from __future__ import annotations

import math
import shlex
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from assay.core.exam import ExamAssertion, ExamCaps, slug_like
from assay.core.session import CommandRun, Session, SessionToolCall, is_test_command

from .exam_instruction import one_line
from .exam_workspace import repo_relative

__all__ = ["TestHistory", "assistant_turns", "caps_for", "suggest_assertions", "test_history", "verify_script"]

_PASSING_SAMPLE = 3
_GLOB_OVER = 3


def assistant_turns(session: Session) -> int:
    """The main session's assistant messages."""
    return sum(1 for t in session.turns if t.role == "assistant" and t.agent_id is None)


MIN_WALL_SECONDS = 60
"""The least wall-time cap: a replay also pays for its worktree, the harness's start and the probes."""


def caps_for(session: Session) -> ExamCaps:
    """Caps from what the session used: twice its turns, twice its cost, three times its wall time (at least
    :data:`MIN_WALL_SECONDS`)."""
    turns, cost, wall = assistant_turns(session), session.cost_usd, session.wall_seconds
    return ExamCaps(max_turns=math.ceil(2 * turns) if turns else None,
                    max_budget_usd=max(round(2 * cost, 2), 0.01) if cost else None,
                    max_wall_seconds=max(MIN_WALL_SECONDS, math.ceil(3 * wall)) if wall and wall > 0 else None)


class TestHistory:
    """Each test command the session ran (its working directory folded in), with its runs in order.

    A run counts only when it is a test run by the command's own words (:func:`is_test_command`: a test runner
    is the program it runs, not a word in a patch or an argument), its exit status is known, and its call wrote
    no file (a patch applied through the shell is a write, never a test run)."""

    def __init__(self, session: Session, root: Path):
        self.runs: dict[str, list[CommandRun]] = {}
        writers = {c.call_id for c in session.tool_calls if c.writes}
        for run in session.test_runs:
            if run.exit_code is not None and run.call_id not in writers and is_test_command(run.command):
                self.runs.setdefault(_command(run, root, session.cwd), []).append(run)

    def turned_green(self) -> list[tuple[str, CommandRun, CommandRun]]:
        """(command, its last failing run before the first pass after it, that pass) for each command that
        failed, then passed, and passed on its last run."""
        found = []
        for command, runs in self.runs.items():
            first_fail = next((i for i, r in enumerate(runs) if r.exit_code != 0), None)
            if first_fail is None or runs[-1].exit_code != 0:
                continue
            green = next(i for i in range(first_fail, len(runs)) if runs[i].exit_code == 0)
            fail = next(runs[i] for i in range(green - 1, -1, -1) if runs[i].exit_code != 0)
            found.append((command, fail, runs[green]))
        return found

    def passed_throughout(self) -> list[tuple[str, list[CommandRun]]]:
        """Commands every recorded run of which passed."""
        return [(c, runs) for c, runs in self.runs.items() if all(r.exit_code == 0 for r in runs)]


def test_history(session: Session, root: Path) -> TestHistory:
    """The session's test commands and how each went."""
    return TestHistory(session, root)


def _command(run: CommandRun, root: Path, session_cwd: str | None) -> str:
    command = run.command.strip()
    where = repo_relative(run.cwd, root, session_cwd) if run.cwd else None
    return f"cd {shlex.quote(where)} && {command}" if where else command


def verify_script(history: TestHistory) -> str | None:
    """``verify.sh`` running the first test command that turned green (else the first that passed throughout);
    None when there is neither."""
    green, passing = history.turned_green(), history.passed_throughout()
    command = green[0][0] if green else passing[0][0] if passing else None
    if command is None:
        return None
    why = "turned green in" if green else "passed throughout"
    return (f"#!/usr/bin/env bash\n# Does the work this exam asks for hold? Runs the test command that {why} the\n"
            "# blessed session, from the root of the workspace under test.\n"
            "# Exit codes: 0 the work holds, 1 it does not, anything else the check itself failed.\n"
            f"set -u\n{command}\n")  # fmt: skip


def _wrote(call: SessionToolCall, root: Path, cwd: str | None) -> list[str]:
    """The repository paths a call wrote: only those its write tool's own arguments name (the call's
    :attr:`~assay.core.session.SessionToolCall.writes`). A call that merely mentions a path — a command that
    prints it, a search, a message — wrote nothing."""
    return list(dict.fromkeys(p for path in call.writes if (p := repo_relative(path, root, cwd))))


class _Keys:
    """Unique assertion keys, each a valid identifier."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, prefix: str, text: str = "") -> str:
        base = f"{prefix}-{slug_like(text)}".strip("-")[:60].rstrip("-") if text else prefix
        key, n = base, 2
        while key in self.used:
            key, n = f"{base}-{n}", n + 1
        self.used.add(key)
        return key


def _allow(written: list[str]) -> list[str]:
    by_folder: dict[str, list[str]] = {}
    for path in written:
        by_folder.setdefault(str(PurePosixPath(path).parent), []).append(path)
    allow = []
    for folder, paths in by_folder.items():
        allow += [f"{folder}/**"] if folder != "." and len(paths) > _GLOB_OVER else paths
    return sorted(allow)


def suggest_assertions(session: Session, root: Path, written: list[str], caps: ExamCaps) -> list[ExamAssertion]:
    """Every suggested assertion for the session, all drafts, outcome first."""
    key, out = _Keys(), []

    def add(name: tuple[str, ...], tier: str, check: str, params: dict[str, Any], evidence: list[str],
            note: str | None = None) -> None:
        out.append(ExamAssertion(key=key(*name), tier=tier, check=check, params=params, evidence=tuple(evidence),
                                 note=note))  # fmt: skip

    history = test_history(session, root)
    for command, fail, green in history.turned_green():
        evidence = [f"call {fail.call_id}: `{command}` exited {fail.exit_code}",
                    f"call {green.call_id}: `{command}` exited 0"]
        add(("passes", command), "outcome", "command_passes", {"command": command}, evidence,
            "failed during the session, then passed")
    for command, runs in history.passed_throughout()[:_PASSING_SAMPLE]:
        add(("passes", command), "outcome", "command_passes", {"command": command},
            [f"call {r.call_id}: `{command}` exited 0" for r in runs], "passed throughout the session")
    writers = [(c, p) for c in session.tool_calls for p in _wrote(c, root, session.cwd)]
    for path in written:
        cited = [f"call {c.call_id} ({c.name}, turn {c.turn}) wrote {p}" for c, p in writers if p == path]
        add(("changed", path), "outcome", "file_changed", {"path": path}, cited or [f"the session wrote {path}"])
    if written:
        add(("files-within",), "trajectory", "files_within", {"allow": _allow(written)},
            [f"the session wrote: {', '.join(written)}"])
    for tool, cited in _tool_evidence(session, writers).items():
        add(("uses", tool), "trajectory", "tool_used", {"tool": tool}, cited[:3])
    turns, cost, wall = assistant_turns(session), session.cost_usd, session.wall_seconds
    used = {"turns": f"{turns} assistant turns", "cost_usd": f"{cost} USD", "wall_seconds": f"{wall or 0:.0f} s"}
    for measure, cap, factor in (("turns", caps.max_turns, "twice"), ("cost_usd", caps.max_budget_usd, "twice"),
                                 ("wall_seconds", caps.max_wall_seconds, "three times")):
        if cap is not None:
            add(("cap", measure), "trajectory", "cap", {"measure": measure, "max": cap},
                [f"the session used {used[measure]}; the cap is {factor} that"])
    for measure in ("cost_usd", "turns"):
        seen = "recorded no cost" if measure == "cost_usd" and cost is None else f"used {used[measure]}"
        add(("band", measure), "trajectory", "band", {"measure": measure, "k": 3.0}, [f"the session {seen}"],
            "the band is calibrated from the exam's own baseline replays")
    add(("profile", "reads-before-first-write"), "profile", "profile", {"measure": "reads_before_first_write"},
        [_reads_before_first_write(session)], "diagnostic only")
    mix = Counter(c.name for c in session.tool_calls)
    add(("profile", "tool-mix"), "profile", "profile", {"measure": "tool_mix"},
        ["tool mix: " + ", ".join(f"{name} {n}" for name, n in mix.most_common())], "diagnostic only")
    ask = session.user_turns[0]
    add(("does-what-was-asked",), "judged", "rubric", {"text": f"The change does what was asked: {one_line(ask.text)}"},
        [f"turn {ask.index}: the person's first message"])
    return out


def _tool_evidence(session: Session, writers: list[tuple[SessionToolCall, str]]) -> dict[str, list[str]]:
    """The tools that wrote files or ran tests, each with the calls that show it."""
    cited: dict[str, list[str]] = {}
    for call, path in writers:
        cited.setdefault(call.name, []).append(f"call {call.call_id} (turn {call.turn}) wrote {path}")
    for run in session.test_runs:
        tool = next((c.name for c in session.tool_calls if c.call_id == run.call_id), None)
        if tool is not None:
            cited.setdefault(tool, []).append(f"call {run.call_id} ran `{one_line(run.command, 80)}`")
    return cited


def _reads_before_first_write(session: Session) -> str:
    reads, first = session.reads_before_first_write()
    where = f"the first write is call {first}" if first else "no call shows a write"
    return f"reads before the first write: {len(reads)} ({where}; reads: {', '.join(reads) or 'none'})"
