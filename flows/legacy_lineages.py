"""The four legacy lineages: their export files, columns and how their verdict blobs read.

Each lineage arrives as a directory with one file per legacy table (``<table>.csv`` or
``<table>.parquet``, the same columns either way). This module only declares them; reading and
validating an export is :mod:`.legacy`, mapping it onto our model :mod:`.legacy_mapping`.
``docs/legacy.md`` describes every column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.core.evidence import vendor_reading

Kind = str
"""A column's type: ``text``, ``timestamp`` (ISO 8601; naive reads as UTC), ``number``, ``object`` (JSON
object text) or ``list`` (JSON array text)."""


@dataclass(frozen=True)
class Col:
    """One column of a legacy table."""

    name: str
    kind: Kind = "text"
    required: bool = False
    choices: tuple[str, ...] = ()
    why: str = ""
    """Why it is required, when the legacy table's own constraint says so."""


@dataclass(frozen=True)
class Table:
    """One legacy table: its file name (without extension) and columns."""

    file: str
    columns: tuple[Col, ...]

    def column(self, name: str) -> Col:
        return next(c for c in self.columns if c.name == name)


class BlobError(ValueError):
    """A verdict blob that does not read as its lineage's shape (the message says what is wrong)."""


Reading = tuple[bool | None, float | None]
"""A blob read as (met, value): null when the blob does not say."""


def _number(blob: dict[str, Any], key: str) -> float | None:
    value = blob.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BlobError(f"{key!r} must be a number or null, not {value!r}")
    return float(value)


def _choice(blob: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str | None:
    value = blob.get(key)
    if value is not None and value not in allowed:
        raise BlobError(f"{key!r} must be one of {', '.join(allowed)} or null, not {value!r}")
    return value


def read_prompt_test(blob: dict[str, Any]) -> Reading:
    """``{"passed": true, "score": 0.8, "checks": [...], "notes": "..."}``: met = passed, value = score (0-1)."""
    passed = blob.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise BlobError(f"'passed' must be true, false or null, not {passed!r}")
    score = _number(blob, "score")
    if score is not None and not 0 <= score <= 1:
        raise BlobError(f"'score' must be between 0 and 1, not {score!r}")
    return passed, score


def read_simulation(blob: dict[str, Any]) -> Reading:
    """The vendor scorer's output ``{"verdict": "pass", "score": 8, "scale_min": 0, "scale_max": 10, ...}``,
    read by the one vendor mapping (:func:`assay.core.evidence.vendor_reading`)."""
    verdict = _choice(blob, "verdict", ("pass", "fail", "error", "unknown"))
    score, low, high = (_number(blob, k) for k in ("score", "scale_min", "scale_max"))
    if score is not None and (low is None or high is None or high <= low):
        raise BlobError("a 'score' needs its scale: 'scale_min' < 'scale_max'")
    return vendor_reading(verdict, score, low, high)


def read_hamming(blob: dict[str, Any]) -> Reading:
    """Hamming's verdicts ``{"status": "passed", "score": 87, "guardrails": [{"assertionName": ...}]}``:
    met = status, value = score / 100. The guardrails stay in the blob, never rows of their own."""
    status = _choice(blob, "status", ("passed", "failed", "error"))
    guardrails = blob.get("guardrails", [])
    if not isinstance(guardrails, list) or not all(isinstance(g, dict) and "assertionName" in g for g in guardrails):
        raise BlobError("'guardrails' must be a list of objects, each with an 'assertionName'")
    verdict = {"passed": "pass", "failed": "fail", "error": "error"}.get(status or "")
    return vendor_reading(verdict, _number(blob, "score"), 0.0, 100.0)


@dataclass(frozen=True)
class Lineage:
    """One legacy lineage: its three tables and which of their columns play which part."""

    name: str
    key_prefix: str
    """Case and suite keys are ``legacy-<key_prefix>-<legacy id>``."""
    title: str
    cases: Table
    runs: Table
    results: Table
    case_title: str
    case_target: str | None
    """The cases' column naming the target they belong to (their suite), if they have one."""
    run_target: str
    run_status: dict[str, str]
    """Legacy run status -> our final run status."""
    result_run: str
    result_case: str
    result_status: str
    executed: tuple[str, ...]
    """Result status values that mean the case executed (any other: it did not)."""
    blob: str
    read_blob: Callable[[dict[str, Any]], Reading]
    chat: bool | None = None
    """None: every row; False: rows whose ids do not start with ``chat-``; True: only those."""
    transcript: str | None = None
    call_id: str | None = None
    duration: str | None = None
    error: str | None = None


def _common(*columns: Col, team: bool = True) -> tuple[Col, ...]:
    return (Col("id", required=True), *((Col("team_id"),) if team else ()), *columns)


_RUN_TIMES = (Col("started_at", "timestamp", required=True), Col("finished_at", "timestamp"))
_CALL = (Col("call_id"), Col("transcript", "list"), Col("duration_seconds", "number"),
         Col("started_at", "timestamp"))

PROMPT_TEST = Lineage(
    name="prompt_test", key_prefix="pt", title="Blueprint validation (prompt_test)",
    cases=Table("prompt_test_cases", _common(
        Col("call_id", required=True, why="every prompt_test case comes from a real call"), Col("name", required=True),
        Col("caller_goal"), Col("expected_behaviour"),
        Col("created_at", "timestamp", required=True))),
    runs=Table("prompt_test_runs", _common(
        Col("assistant_config_id", required=True, why="every prompt_test run targets a config"),
        Col("status", required=True, choices=("completed", "failed", "cancelled")), Col("triggered_by"), *_RUN_TIMES)),
    results=Table("prompt_test_results", _common(
        Col("run_id", required=True), Col("case_id", required=True),
        Col("status", required=True, choices=("completed", "error")), Col("verdict", "object", required=True),
        Col("error"), Col("created_at", "timestamp"), team=False)),
    case_title="name", case_target=None, run_target="assistant_config_id",
    run_status={"completed": "completed", "failed": "error", "cancelled": "error"},
    result_run="run_id", result_case="case_id", result_status="status", executed=("completed",),
    blob="verdict", read_blob=read_prompt_test, error="error",
)

SIMULATION_V2 = Lineage(
    name="simulation_v2", key_prefix="sim", title="Simulation v2 (VAPI and ElevenLabs simulations)",
    cases=Table("simulation_v2_cases", _common(
        Col("assistant_id", required=True), Col("provider", required=True, choices=("vapi", "elevenlabs")),
        Col("name", required=True), Col("customer_prompt"), Col("success_criteria"), Col("template_id"),
        Col("created_at", "timestamp", required=True))),
    runs=Table("simulation_v2_runs", _common(
        Col("assistant_id", required=True), Col("provider", required=True, choices=("vapi", "elevenlabs")),
        Col("vendor_run_id"), Col("status", required=True, choices=("completed", "failed", "cancelled", "timed_out")),
        *_RUN_TIMES)),
    results=Table("simulation_v2_results", _common(
        Col("run_id", required=True), Col("case_id", required=True),
        Col("call_status", required=True, choices=("ended", "error", "no-answer")),
        Col("scorer_output", "object", required=True), *_CALL, team=False)),
    case_title="name", case_target="assistant_id", run_target="assistant_id",
    run_status={"completed": "completed", "failed": "error", "cancelled": "error", "timed_out": "timed_out"},
    result_run="run_id", result_case="case_id", result_status="call_status", executed=("ended",),
    blob="scorer_output", read_blob=read_simulation, transcript="transcript", call_id="call_id",
    duration="duration_seconds",
)

_HAMMING_CASES = Table("hamming_test_cases", _common(
    Col("agent_id", required=True), Col("name", required=True), Col("scenario"), Col("expected_outcome"),
    Col("created_at", "timestamp", required=True)))
_HAMMING_RUNS = Table("hamming_test_runs", _common(
    Col("agent_id", required=True), Col("hamming_run_id"),
    Col("status", required=True, choices=("completed", "failed", "cancelled", "timeout")), *_RUN_TIMES))
_HAMMING_RESULTS = Table("hamming_call_results", _common(
    Col("test_run_id", required=True), Col("test_case_id", required=True),
    Col("call_status", required=True, choices=("completed", "failed", "no-answer", "busy")),
    Col("guardrail_results", "object", required=True), *_CALL, team=False))
_HAMMING = {
    "cases": _HAMMING_CASES, "runs": _HAMMING_RUNS, "results": _HAMMING_RESULTS, "case_title": "name",
    "case_target": "agent_id", "run_target": "agent_id",
    "run_status": {"completed": "completed", "failed": "error", "cancelled": "error", "timeout": "timed_out"},
    "result_run": "test_run_id", "result_case": "test_case_id", "result_status": "call_status",
    "executed": ("completed",), "blob": "guardrail_results", "read_blob": read_hamming, "transcript": "transcript",
    "call_id": "call_id", "duration": "duration_seconds",
}

HAMMING_VOICE = Lineage(name="hamming_voice", key_prefix="hv", title="Hamming voice tests", chat=False, **_HAMMING)
CHAT_LANE = Lineage(name="chat_lane", key_prefix="hc", title="the chat lane (in the Hamming voice tables)",
                    chat=True, **_HAMMING)

LINEAGES: dict[str, Lineage] = {x.name: x for x in (PROMPT_TEST, SIMULATION_V2, HAMMING_VOICE, CHAT_LANE)}
"""Every lineage ``assay legacy import`` reads, by name."""

CHAT_PREFIX = "chat-"
"""The prefix on every id of the chat lane's rows in the Hamming voice tables."""
