"""Gates for CI: consumers' verdicts as one exit code (the JUnit report of the same verdicts is :mod:`.junit`).

A gate names consumers (``--gate CONSUMER``); the command exits with the most severe of their verdict
codes (:mod:`assay.core.exit_codes`). A consumer with no criteria where it is asked to gate is an
error, never a silent pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assay.core.errors import GateError
from assay.core.exit_codes import ExitCode, most_severe, verdict_code

from .workspace import Workspace

NO_VERDICT_STATUSES = frozenset({"error", "timed_out"})
"""Run statuses after which no verdict is possible: ``assay run`` exits 82 on them."""


def check_consumers(option: str, consumers: Iterable[str], known: Iterable[str], where: str) -> None:
    """Raise :class:`GateError` naming the ``consumers`` not among ``known`` (those with criteria ``where``)."""
    have = sorted(set(known))
    missing = [c for c in dict.fromkeys(consumers) if c not in have]
    if missing:
        raise GateError(option, missing, where, have)


def check_suite_gates(ws: Workspace, suite: str, gates: Sequence[str]) -> None:
    """Before a run: every gated consumer has criteria on ``suite`` (so the run will stamp it a verdict)."""
    from assay.storage.catalog.runs import current_criteria, find_suite

    with ws.engine.connect() as conn:
        s = find_suite(conn, suite)
        known = [r.consumer_key for r in current_criteria(conn, s.suite_id)]
    check_consumers("--gate", gates, known, f"suite {s.team_id}/{s.suite_key}")


def gate_code(rows: Sequence[dict[str, Any]], gates: Sequence[str], where: str) -> ExitCode:
    """The exit code of the gated consumers' verdicts in ``rows`` (``verdicts_for`` entries), most severe first."""
    check_consumers("--gate", gates, (r["consumer"] for r in rows), where)
    return most_severe(verdict_code(r["verdict"]) for r in rows if r["consumer"] in gates)


def gated(rows: Sequence[dict[str, Any]], gates: Sequence[str]) -> list[dict[str, Any]]:
    """The rows a gate reads: the gated consumers' (every row when nothing is gated), so a report says what the gate says."""
    return [r for r in rows if r["consumer"] in gates] if gates else list(rows)


def run_code(status: str, rows: Sequence[dict[str, Any]], gates: Sequence[str]) -> ExitCode:
    """``assay run``'s exit code: 82 for a run that ended error or timed out, else its gated consumers' code."""
    ended = ExitCode.NO_VERDICT if status in NO_VERDICT_STATUSES else ExitCode.PASS
    return most_severe([ended, gate_code(rows, gates, "this run")]) if gates else ended


__all__ = ["NO_VERDICT_STATUSES", "check_consumers", "check_suite_gates", "gate_code", "gated", "run_code"]
