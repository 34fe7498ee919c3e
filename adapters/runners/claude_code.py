"""Replaying an exam with Claude Code run headless (``claude -p``), read from its stream-json output.

The command gives the harness the exam's ask, exactly the exam's tools (``--tools`` is the real allowlist;
permission rules alone do not remove tools), no MCP servers but those named on the command line (none),
no permission prompts (a headless replay cannot answer them), a fresh session id, the exam's model and its
turn and budget caps. The program is ``$ASSAY_CLAUDE_BIN``, else ``claude`` on PATH.

Reading the outcome, in order: no ``result`` event means the harness crashed; the ``init`` event's tools must
be the exam's allowlist (else the replay proves nothing about the exam); ``is_error`` is an error even under
subtype ``success`` (a failed API call reads that way); a turn or budget cap that stopped the agent is the
agent's behaviour (executed, judged by the exam's caps), not an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.exam import Exam
from assay.core.exam_checks import CHECKS

from .claude_stream import HARNESS, read_stream
from .harness import HarnessAdapter, HarnessOutcome

__all__ = ["BINARY_VARIABLE", "ClaudeCodeHarness"]

BINARY_VARIABLE = "ASSAY_CLAUDE_BIN"
"""The environment variable naming the program to run instead of ``claude`` on PATH."""
CAP_STOPS = ("error_max_turns", "error_max_budget_usd")
"""Result subtypes that mean a cap stopped the agent."""
STDERR_TAIL = 1500


class ClaudeCodeHarness(HarnessAdapter):
    """Claude Code, headless, with stream-json output."""

    name: ClassVar[str] = HARNESS
    guarantees: ClassVar[tuple[str, ...]] = (
        "tool calls paired by id; Bash exit status read from the result ('Exit code N'; 0 on success)",
        "allowlist checked against the harness's own init event (the tools it says it offered)",
        "cost: the harness's client-side estimate (total_cost_usd), not billing",
        "turns from the stream (streamed events de-duplicated by message id); tokens: the result event's totals "
        "(a streamed message's usage is partial), a subagent's from its streamed responses",
        "subagent traffic kept apart by the call that started it (parent_tool_use_id)",
        "a crash (no result event), an error result or a broken allowlist is an error, never a failure",
    )
    supports: ClassVar[frozenset[str]] = frozenset(CHECKS)

    def __init__(self, binary: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        """``binary`` overrides ``$ASSAY_CLAUDE_BIN`` (read from ``environ``, default this process's)."""
        environ = os.environ if environ is None else environ
        self.binary = binary or environ.get(BINARY_VARIABLE) or "claude"

    def command(self, exam: Exam, instruction_file: Path, session_id: str) -> list[str]:
        """The headless command line replaying ``exam``, its ask read from ``instruction_file``."""
        spec = exam.spec
        ask = instruction_file.read_text(encoding="utf-8")
        ask = " " + ask if ask.startswith("-") else ask  # an ask that starts like an option is still the ask
        argv = [self.binary, "-p", ask, "--output-format", "stream-json", "--verbose", "--tools",
                ",".join(spec.tools.allow), "--strict-mcp-config", "--permission-mode", "bypassPermissions",
                "--session-id", session_id]
        if spec.model:
            argv += ["--model", spec.model]
        if spec.caps.max_turns is not None:
            argv += ["--max-turns", str(spec.caps.max_turns)]
        if spec.caps.max_budget_usd is not None:
            argv += ["--max-budget-usd", f"{spec.caps.max_budget_usd:g}"]
        return argv

    def interpret(self, stdout: list[str], exit_code: int | None, stderr: str, *, exam: Exam, started: datetime,
                  ended: datetime) -> HarnessOutcome:
        """The run's outcome from its stream (see the module docstring for the order of the checks)."""
        run = read_stream(stdout, prompt=exam.instruction, started_at=started, ended_at=ended)
        result, init = run.result or {}, run.init
        wall_ms = (ended - started).total_seconds() * 1000
        cost, duration = _number(result.get("total_cost_usd")), _number(result.get("duration_ms"))
        offered = tuple(str(t) for t in init["tools"]) if init and isinstance(init.get("tools"), list) else None
        allowed = tuple(exam.spec.tools.allow)
        held = None if offered is None else sorted(offered) == sorted(allowed)
        base = HarnessOutcome(session=run.session, status="executed", cost_usd=cost,
                              duration_ms=duration if duration is not None else wall_ms, tools_offered=offered,
                              allowlist_held=held)

        def error(text: str, stop_reason: str | None) -> HarnessOutcome:
            return replace(base, status="error", error=text, stop_reason=stop_reason)

        subtype = str(result.get("subtype") or "") or None
        if run.result is None:
            tail = stderr.strip()[-STDERR_TAIL:] or "(nothing on stderr)"
            return error(f"the harness crashed (exit {exit_code}): {tail}", "crash")
        if offered is None:
            return error("the harness did not report the tools it offered (no init event), so the exam's "
                         "allowlist cannot be shown to have held", subtype)
        if not held:
            return error(f"the allowlist did not hold: the harness offered {sorted(offered)}, the exam allows "
                         f"{sorted(allowed)}", subtype)
        if result.get("is_error") is True:
            return error(f"the harness reported an error (result {subtype}, is_error true): {_why(result)}", subtype)
        if subtype in CAP_STOPS:
            return replace(base, stop_reason=subtype)
        if subtype != "success":
            return error(f"the harness stopped with result {subtype}: {_why(result)}", subtype)
        if exit_code != 0:
            return error(f"the harness reported success but exited {exit_code}: {stderr.strip()[-STDERR_TAIL:]}",
                         subtype)
        return replace(base, stop_reason="success")


def _why(result: dict[str, Any]) -> str:
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    text = result.get("result")
    return str(text)[:STDERR_TAIL] if text else "no reason given"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
