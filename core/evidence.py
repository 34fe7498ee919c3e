"""What a runner reports: case-run evidence and its own evaluations.

Two shapes of the same contract. Small runners build :class:`CaseRun` rows (validated pydantic
models) and call :meth:`Report.from_case_runs`; runners that ingest in bulk (``recorded``) build the
Arrow tables directly against :func:`case_run_schema` / :func:`evaluation_schema`. Either way the lake
validates what arrives with its pandera schema before anything is written.

Free-form values (tool arguments, results, the compiled artefact, provider payloads, a vendor's raw
evaluation) travel as JSON text so the columnar schema stays fixed.

A runner's evaluation is kept on the vendor's own scale *and* read onto ours (``met`` + a 0–1
``value``) by one mapping, :func:`vendor_reading`, so every runner and the bulk path read a vendor's
verdict the same way (``docs/vendor-mappings.md`` lists each vendor's fields).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    """Seconds from the start of the conversation when the utterance began, when known."""
    end_t: float | None = None
    """Seconds from the start of the conversation when the utterance ended, when known (response
    latency is the agent's ``t`` minus the preceding caller turn's ``end_t``)."""


class ToolCall(_Row):
    """One tool call made by the agent, paired with its result."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    """The tool's result as returned to the agent (any JSON value), or None if it never returned."""
    is_error: bool = False
    t: float | None = None


def vendor_reading(
    verdict: str | None,
    score: float | None,
    scale_min: float | None,
    scale_max: float | None,
    pass_score: float | None = None,
) -> tuple[bool | None, float | None]:
    """A vendor's evaluation read as (met, value): the one mapping every runner uses.

    ``met``: the verdict when there is one (``pass`` True, ``fail`` False, ``error``/``unknown``
    None: a vendor that could not judge never fails a case); without a verdict, ``score >= pass_score``
    when both are known; else None. ``value``: the score normalised to 0–1 on the declared scale,
    ``(score - scale_min) / (scale_max - scale_min)``, when score and a non-empty scale are known;
    else 1.0 / 0.0 from a pass / fail verdict; else None.
    """
    score = None if score is None or score != score else score  # NaN reads as no score
    if verdict in ("pass", "fail"):
        met: bool | None = verdict == "pass"
    elif verdict is None and score is not None and pass_score is not None:
        met = score >= pass_score
    else:
        met = None
    if score is not None and scale_min is not None and scale_max is not None and scale_max > scale_min:
        value: float | None = (score - scale_min) / (scale_max - scale_min)
    elif verdict in ("pass", "fail"):
        value = 1.0 if verdict == "pass" else 0.0
    else:
        value = None
    return met, value


class Evaluation(_Row):
    """A runner's own judgment, kept as evidence on the vendor's own scale and read onto ours.

    When neither ``met`` nor ``value`` is given they are read from the verdict and score by
    :func:`vendor_reading` (no pass score); :meth:`from_vendor` also takes the vendor's pass score.
    """

    name: str
    """The runner's name for what it judged (a guardrail, a scorer, a criterion)."""
    evaluator: str
    """Who judged, as ``<runner>:<what>`` (``hamming:guardrail``, ``vapi:scorer``, ``fixed``)."""
    verdict: Verdict | None = None
    """The runner's categorical verdict, if it gives one."""
    score: float | None = None
    """The runner's score, if it gives one, on ``scale_min``..``scale_max``."""
    scale_min: float | None = None
    """The low end of the vendor's declared scale (a score there reads as value 0.0)."""
    scale_max: float | None = None
    """The high end of the vendor's declared scale (a score there reads as value 1.0)."""
    rationale: str | None = None
    """The vendor's explanation, if it gives one."""
    raw: dict[str, Any] | None = None
    """The vendor's evaluation object as received (redacted)."""
    met: bool | None = None
    """The vendor's judgment read as met or not met (``docs/vendor-mappings.md``); null when undetermined
    (a vendor error or unknown) and in files written before it existed."""
    value: float | None = None
    """The score normalised to 0–1 on the declared scale, else 1.0/0.0 from a pass/fail verdict; null
    when neither is known and in files written before it existed."""

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: Any) -> Any:
        if isinstance(data, dict) and "met" not in data and "value" not in data:
            met, value = vendor_reading(
                data.get("verdict"), data.get("score"), data.get("scale_min"), data.get("scale_max")
            )
            data = {**data, "met": met, "value": value}
        return data

    @classmethod
    def from_vendor(
        cls,
        *,
        name: str,
        evaluator: str,
        verdict: Verdict | None = None,
        score: float | None = None,
        scale_min: float | None = None,
        scale_max: float | None = None,
        pass_score: float | None = None,
        rationale: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> "Evaluation":
        """An evaluation with met and value read by :func:`vendor_reading`; ``pass_score`` is the
        vendor's own threshold on its scale (used for met only when it gives no verdict)."""
        met, value = vendor_reading(verdict, score, scale_min, scale_max, pass_score)
        return cls(
            name=name, evaluator=evaluator, verdict=verdict, score=score, scale_min=scale_min,
            scale_max=scale_max, rationale=rationale, raw=raw, met=met, value=value,
        )


class CaseRun(_Row):
    """Evidence of one execution of one case. ``status`` says whether it executed, never whether it was good."""

    case_id: str
    source_ref: str = ""
    """Distinguishes several case runs of one case in one run (a recorded call's id); empty otherwise."""
    status: CaseRunStatus = "executed"
    error: str | None = None
    """Why the case could not be executed (status ``error``), in the runner's or vendor's words."""
    transcript: list[Turn] = Field(default_factory=list)
    """The conversation: role (caller, agent, system), text, t and end_t (seconds from the start when
    the utterance began and ended; end_t reads null in files written before it existed)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    artefact: dict[str, Any] | None = None
    """The compiled artefact the case ran against (a compiled assistant config), when the runner reads one."""
    provider_ref: str | None = None
    provider_payload: dict[str, Any] | None = None
    cost_usd: float | None = None
    """What the execution cost in US dollars, only when the vendor gives dollars."""
    vendor_cost: float | None = None
    """What it cost as the vendor reports it, in ``vendor_cost_unit`` (never converted: credits stay credits);
    null in case runs stored before it existed."""
    vendor_cost_unit: str | None = None
    """The unit of ``vendor_cost`` (``USD``, ``credits``)."""
    duration_ms: float | None = None
    started_at: datetime | None = None
    evaluations: list[Evaluation] = Field(default_factory=list)


def case_run_schema() -> "pa.Schema":
    """Arrow schema of the case-run columns a runner reports."""
    import pyarrow as pa

    turn = pa.struct([("role", pa.string()), ("text", pa.string()), ("t", pa.float64()), ("end_t", pa.float64())])
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
            ("vendor_cost", pa.float64()),
            ("vendor_cost_unit", pa.string()),
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
            ("met", pa.bool_()),
            ("value", pa.float64()),
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
                    "vendor_cost": r.vendor_cost,
                    "vendor_cost_unit": r.vendor_cost_unit,
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
