"""What a runner reports: case-run evidence and its own evaluations.

Two shapes of the same contract. Small runners build :class:`CaseRun` rows (validated pydantic
models) and call :meth:`Report.from_case_runs`; runners that ingest in bulk (``recorded``) build the
Arrow tables directly against :func:`case_run_schema` / :func:`evaluation_schema`. Either way the lake
validates what arrives with its pandera schema before anything is written.

Free-form values (tool arguments, results, the compiled artefact, provider payloads, a vendor's raw
evaluation) travel as JSON text so the columnar schema stays fixed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import pyarrow as pa

TurnRole = Literal["caller", "agent", "system"]
CaseRunStatus = Literal["executed", "error"]
Verdict = Literal["pass", "fail", "error", "unknown"]

NATIVE_PREFIX = "assertion:"
"""A runner evaluation named ``assertion:<assertion key>`` is the runner's own judgment *of that
assertion* (an assertion sent into a vendor's slot: a VAPI eval judge plan, a Hamming selected
assertion). Judging maps it onto that assertion's result, with the vendor as the evaluator."""


def native_evaluation_name(assertion_key: str) -> str:
    """The evaluation name under which a runner reports its own verdict on assertion ``assertion_key``."""
    return f"{NATIVE_PREFIX}{assertion_key}"


CASE_RUN_STATUSES: tuple[str, ...] = ("executed", "error")
TURN_ROLES: tuple[str, ...] = ("caller", "agent", "system")
VERDICTS: tuple[str, ...] = ("pass", "fail", "error", "unknown")


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(_Row):
    """One utterance."""

    role: TurnRole
    """Who said it: the caller (the simulated or recorded human), the agent under test, or system."""
    text: str
    """What was said."""
    t: float | None = None
    """Seconds from the start of the conversation, when known."""


class ToolCall(_Row):
    """One tool call made by the agent, paired with its result."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    """The tool's result as returned to the agent (any JSON value), or None if it never returned."""
    is_error: bool = False
    t: float | None = None


class Evaluation(_Row):
    """A runner's own judgment, kept as evidence on the vendor's own scale."""

    name: str
    """The runner's name for what it judged (a guardrail, a scorer, a criterion)."""
    evaluator: str
    """Who judged, as ``<runner>:<what>`` (``hamming:guardrail``, ``vapi:scorer``, ``fixed``)."""
    verdict: Verdict | None = None
    """The runner's categorical verdict, if it gives one."""
    score: float | None = None
    """The runner's score, if it gives one, on ``scale_min``..``scale_max``."""
    scale_min: float | None = None
    scale_max: float | None = None
    rationale: str | None = None
    raw: dict[str, Any] | None = None
    """The vendor's evaluation object as received (redacted)."""


class CaseRun(_Row):
    """Evidence of one execution of one case. ``status`` says whether it executed, never whether it was good."""

    case_id: str
    source_ref: str = ""
    """Distinguishes several case runs of one case in one run (a recorded call's id); empty otherwise."""
    status: CaseRunStatus = "executed"
    error: str | None = None
    """Why the case could not be executed (status ``error``), in the runner's or vendor's words."""
    transcript: list[Turn] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    artefact: dict[str, Any] | None = None
    """The compiled artefact the case ran against (a compiled assistant config), when the runner reads one."""
    provider_ref: str | None = None
    provider_payload: dict[str, Any] | None = None
    cost_usd: float | None = None
    duration_ms: float | None = None
    started_at: datetime | None = None
    evaluations: list[Evaluation] = Field(default_factory=list)


def case_run_schema() -> "pa.Schema":
    """Arrow schema of the case-run columns a runner reports."""
    import pyarrow as pa

    turn = pa.struct([("role", pa.string()), ("text", pa.string()), ("t", pa.float64())])
    tool = pa.struct(
        [
            ("name", pa.string()),
            ("arguments", pa.string()),
            ("result", pa.string()),
            ("is_error", pa.bool_()),
            ("t", pa.float64()),
        ]
    )
    return pa.schema(
        [
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("source_ref", pa.string(), nullable=False),
            pa.field("status", pa.string(), nullable=False),
            ("error", pa.string()),
            ("transcript", pa.list_(turn)),
            ("tool_calls", pa.list_(tool)),
            ("artefact", pa.string()),
            ("provider_ref", pa.string()),
            ("provider_payload", pa.string()),
            ("cost_usd", pa.float64()),
            ("duration_ms", pa.float64()),
            ("started_at", pa.timestamp("us", tz="UTC")),
        ]
    )


def evaluation_schema() -> "pa.Schema":
    """Arrow schema of the runner-evaluation columns a runner reports."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("case_id", pa.string(), nullable=False),
            pa.field("source_ref", pa.string(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("evaluator", pa.string(), nullable=False),
            ("verdict", pa.string()),
            ("score", pa.float64()),
            ("scale_min", pa.float64()),
            ("scale_max", pa.float64()),
            ("rationale", pa.string()),
            ("raw", pa.string()),
        ]
    )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class Report:
    """One report: a batch of case runs and the runner's evaluations of them.

    ``request_id`` makes the report idempotent: reporting the same id twice changes nothing.
    """

    request_id: str
    case_runs: "pa.Table"
    evaluations: "pa.Table"
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.case_runs.num_rows

    @classmethod
    def from_case_runs(cls, request_id: str, runs: list[CaseRun]) -> "Report":
        import pyarrow as pa

        rows, evals = [], []
        for r in runs:
            rows.append(
                {
                    "case_id": r.case_id,
                    "source_ref": r.source_ref,
                    "status": r.status,
                    "error": r.error,
                    "transcript": [t.model_dump() for t in r.transcript],
                    "tool_calls": [
                        {**c.model_dump(), "arguments": _json(c.arguments), "result": _json(c.result)}
                        for c in r.tool_calls
                    ],
                    "artefact": _json(r.artefact),
                    "provider_ref": r.provider_ref,
                    "provider_payload": _json(r.provider_payload),
                    "cost_usd": r.cost_usd,
                    "duration_ms": r.duration_ms,
                    "started_at": r.started_at,
                }
            )
            for e in r.evaluations:
                evals.append(
                    {**e.model_dump(), "raw": _json(e.raw), "case_id": r.case_id, "source_ref": r.source_ref}
                )
        return cls(
            request_id=request_id,
            case_runs=pa.Table.from_pylist(rows, schema=case_run_schema()),
            evaluations=pa.Table.from_pylist(evals, schema=evaluation_schema()),
        )

    def to_payload(self) -> dict[str, Any]:
        """A JSON-able copy of the whole report (kept with a rejected report); timestamps as ISO text."""
        payload = {
            "request_id": self.request_id,
            "case_runs": self.case_runs.to_pylist(),
            "evaluations": self.evaluations.to_pylist(),
            "meta": self.meta,
        }
        return json.loads(json.dumps(payload, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v)))
