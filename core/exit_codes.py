"""The command line's exit codes: one contract for every command.

A CI job reads the code, not the output: 0 when the gated consumers pass, 80 when one fails, 82 when
no verdict is possible. 1 is the tool's own failure (an :class:`~assay.core.errors.AssayError`), 2 a
malformed command line. 81 and 83 are reserved for drift and staleness.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    """What an ``assay`` process's exit status means."""

    PASS = 0
    """Done; every gated consumer passed (or nothing was gated)."""
    FAILURE = 1
    """The tool itself failed: a bad bundle, an unknown run, a consumer with no criteria to gate on."""
    USAGE = 2
    """The command line is malformed (an unknown option, a missing argument)."""
    FAIL = 80
    """A gated consumer's verdict is ``fail``: a regression."""
    DRIFT = 81
    """Reserved: drift suspected."""
    NO_VERDICT = 82
    """A gated consumer's verdict is ``error`` or none is possible (the run ended error or timed out)."""
    STALE = 83
    """Reserved: the evidence is stale."""


MEANING: dict[ExitCode, str] = {
    ExitCode.PASS: "done; every gated verdict held (or nothing was gated)",
    ExitCode.FAILURE: "the tool itself failed (a bad bundle, an unknown run, nothing to gate on)",
    ExitCode.USAGE: "the command line is malformed",
    ExitCode.FAIL: "a gated verdict is fail: a regression",
    ExitCode.DRIFT: "drift suspected: an escalation stopped at its budget without a decision",
    ExitCode.NO_VERDICT: "no verdict possible: the run, the runner or the harness errored",
    ExitCode.STALE: "stale: the pin or the toolchain no longer applies (when stale exams are asked to count)",
}
"""One line per code, as ``assay version`` prints it."""

SEVERITY: tuple[ExitCode, ...] = (ExitCode.NO_VERDICT, ExitCode.FAIL, ExitCode.DRIFT, ExitCode.STALE, ExitCode.PASS)
"""Verdict codes from most to least severe: combining several, the most severe wins."""

VERDICT_CODES: dict[str | None, ExitCode] = {"pass": ExitCode.PASS, "fail": ExitCode.FAIL, "error": ExitCode.NO_VERDICT,
                                             None: ExitCode.NO_VERDICT}
"""A consumer's verdict (``None``: no verdict possible) -> the exit code it gates to."""


def most_severe(codes: Iterable[ExitCode]) -> ExitCode:
    """The most severe of ``codes`` by :data:`SEVERITY`; :attr:`ExitCode.PASS` when there are none."""
    return min(codes, key=SEVERITY.index, default=ExitCode.PASS)


def verdict_code(verdict: str | None) -> ExitCode:
    """The exit code a gated consumer's verdict maps to."""
    return VERDICT_CODES[verdict]


__all__ = ["MEANING", "SEVERITY", "VERDICT_CODES", "ExitCode", "most_severe", "verdict_code"]
