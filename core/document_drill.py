"""The bodies of the drill-down documents: ``assay.show`` (one case run in full) and ``assay.diff`` (two
runs of one suite compared)."""

from __future__ import annotations

from typing import Any, Literal

from .document_runs import Body, Verdict


class CaseRunHeader(Body):
    """The case run and where it belongs."""

    case_run_id: str
    """Its id."""
    run_id: str
    """Its run."""
    suite: str
    """TEAM/SUITE."""
    case_key: str
    """Its case."""
    call_id: str | None
    """Its call id (a recorded call's, or the vendor's)."""
    runner: str
    """The runner that produced it."""
    status: str
    """executed or error."""
    error: str | None
    """Why it did not execute."""
    duration_ms: float | None
    """The call's duration."""
    cost_usd: float | None
    """Its cost."""
    started_at: str | None
    """When it started."""


class CaseRunVerdict(Body):
    """The case run's verdict for one consumer."""

    consumer: str
    """The consumer."""
    verdict: Verdict | None
    """Its verdict; null: not judged yet."""
    reason: str | None
    """Why."""


class ShownResult(Body):
    """One current result of the case run."""

    assertion_key: str
    """The behaviour."""
    mechanism: str
    """How it was checked."""
    met: bool | None
    """Met, not met, undetermined."""
    value: Any = None
    """What was measured."""
    evaluator: str | None
    """Who evaluated it."""
    reason: str | None
    """Why."""
    counted_by: list[str]
    """Consumers whose criteria count it."""
    decided_by: dict[Literal["turns", "calls"], list[int]] | None
    """The transcript turns or tool calls (by index) that decided it, when known."""


class ShownTurn(Body):
    """A transcript turn."""

    index: int
    """Its place."""
    role: str
    """caller, agent or system."""
    text: str
    """What was said."""
    t: float | None = None
    """Seconds from the start."""
    end_t: float | None = None
    """When it ended."""
    decides: list[str]
    """Assertion keys this turn decided."""


class ShownToolCall(Body):
    """A tool call."""

    index: int
    """Its place."""
    name: str
    """The tool."""
    arguments: str | None
    """Its arguments (JSON text)."""
    result: str | None
    """Its result (JSON text)."""
    is_error: bool | None
    """Whether the tool failed."""
    t: float | None = None
    """Seconds from the start."""
    decides: list[str]
    """Assertion keys this call decided."""


class ShowDoc(Body):
    """``assay show``: one case run in full."""

    case_run: CaseRunHeader
    """The case run."""
    verdicts: list[CaseRunVerdict]
    """Its verdict per consumer."""
    results: list[ShownResult]
    """Its current results."""
    transcript: list[ShownTurn]
    """Its transcript."""
    tool_calls: list[ShownToolCall]
    """Its tool calls."""


class ConsumerDiff(Body):
    """One consumer's verdict in both runs."""

    consumer: str
    """The consumer."""
    a: Verdict | None
    """In run A."""
    b: Verdict | None
    """In run B."""
    criteria_a: int | None
    """The criteria version stamped on run A."""
    criteria_b: int | None
    """The criteria version stamped on run B."""
    reason_a: str | None = None
    """Why, in run A."""
    reason_b: str | None = None
    """Why, in run B."""
    changed: bool
    """Whether the verdict differs."""


class CaseDiff(Body):
    """One case run's verdict for one consumer in both runs (matched by case and call)."""

    case_key: str
    """The case."""
    source_ref: str | None
    """The recorded call's id; empty when the case runs once."""
    consumer: str
    """The consumer."""
    a: Verdict | None
    """In run A."""
    b: Verdict | None
    """In run B."""
    changed: bool
    """Whether it differs."""


class KeyRate(Body):
    """An assertion key's results in one run."""

    results: int
    """How many."""
    met: int
    """Met."""
    nulls: int
    """Undetermined."""
    not_applicable: int = 0
    """Not met because the run's runner cannot evaluate the key (``assay:unsupported``): not a failure."""


class KeyFlip(Body):
    """A matched case run whose result for the key changed."""

    case_key: str
    """The case."""
    source_ref: str | None
    """The recorded call's id."""
    met_a: bool | None
    """In run A."""
    met_b: bool | None
    """In run B."""
    reason_a: str | None
    """Why, in run A."""
    reason_b: str | None
    """Why, in run B."""


class KeyDiff(Body):
    """An assertion key in both runs."""

    assertion_key: str
    """The behaviour."""
    a: KeyRate
    """In run A."""
    b: KeyRate
    """In run B."""
    changed: list[KeyFlip]
    """The case runs whose result changed."""


class DiffDoc(Body):
    """``assay diff``: two runs of one suite compared."""

    suite: str
    """TEAM/SUITE."""
    run_a: str
    """The earlier run."""
    run_b: str
    """The later run."""
    consumers: list[ConsumerDiff]
    """By consumer."""
    cases: list[CaseDiff]
    """By case run and consumer."""
    keys: list[KeyDiff]
    """By assertion key."""
