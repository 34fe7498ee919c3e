"""What every capture adapter does the same way once it has read a harness's lines.

:class:`SessionDraft` collects turns, calls and results as an adapter meets them (in any order), then
pairs calls with results by id and builds the frozen :class:`~assay.core.session.Session`: unmatched
calls and orphan results listed, models counted, record types it did not know tallied. :func:`with_writes`
marks each successful call of a write tool with the path its own argument names, and :func:`files_written`
reads the session's written files off those marks only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assay.core.session import CallStatus, SessionRole, SessionToolCall, SessionTurn


@dataclass
class DraftTurn:
    """A turn being built: streamed lines of one response add to it."""

    index: int
    """Its position in the session."""
    role: SessionRole
    texts: list[str] = field(default_factory=list)
    at: datetime | None = None
    call_ids: list[str] = field(default_factory=list)
    agent_id: str | None = None


@dataclass
class DraftCall:
    """A call as the transcript made it, before its result is known."""

    call_id: str
    name: str
    input: dict[str, Any]
    turn: int
    agent_id: str | None
    called_at: datetime | None
    cwd: str | None = None
    """The working directory when the call was made."""


@dataclass
class DraftResult:
    """A call's result as the transcript gave it."""

    output: str
    is_error: bool
    at: datetime | None
    exit_code: int | None = None


@dataclass
class SessionDraft:
    """The parts of a session an adapter has read so far."""

    turns: list[DraftTurn] = field(default_factory=list)
    calls: dict[str, DraftCall] = field(default_factory=dict)
    results: dict[str, DraftResult] = field(default_factory=dict)
    result_order: list[str] = field(default_factory=list)
    unknown_types: Counter[str] = field(default_factory=Counter)
    bad_lines: list[str] = field(default_factory=list)
    model_uses: list[str] = field(default_factory=list)
    """The model of each of the main session's responses (for the most-used model)."""
    models_in_order: list[str] = field(default_factory=list)
    """The model of every response, subagents' included (for the order of first use)."""
    lines: int = 0

    def add_turn(self, role: SessionRole, text: str, at: datetime | None, agent_id: str | None = None) -> DraftTurn:
        """Start a new turn (its index is its position)."""
        turn = DraftTurn(index=len(self.turns), role=role, texts=[text] if text else [], at=at, agent_id=agent_id)
        self.turns.append(turn)
        return turn

    def add_call(self, turn: DraftTurn, call: DraftCall) -> bool:
        """Record a call made by ``turn``; False (nothing recorded) when its id was already seen."""
        if call.call_id in self.calls:
            return False
        self.calls[call.call_id] = call
        turn.call_ids.append(call.call_id)
        return True

    def add_result(self, call_id: str, result: DraftResult) -> None:
        """Record a call's result; a second result for the same id replaces nothing (the first counts)."""
        if call_id in self.results:
            return
        self.results[call_id] = result
        self.result_order.append(call_id)

    def model_response(self, model: str, main: bool) -> None:
        """Count one model response; ``main`` when the main session (not a subagent) made it."""
        self.models_in_order.append(model)
        if main:
            self.model_uses.append(model)

    def status(self, call_id: str) -> CallStatus:
        """The status a call ends with."""
        result = self.results.get(call_id)
        if result is None:
            return "unmatched"
        return "error" if result.is_error else "ok"

    def tool_calls(self) -> tuple[SessionToolCall, ...]:
        """Every call, in the order made, paired with its result by id."""
        built = []
        for call in self.calls.values():
            result = self.results.get(call.call_id)
            built.append(SessionToolCall(
                call_id=call.call_id, name=call.name, input=call.input, status=self.status(call.call_id),
                output=result.output if result else None, turn=call.turn, agent_id=call.agent_id,
                called_at=call.called_at, answered_at=result.at if result else None,
                exit_code=result.exit_code if result else None))
        return tuple(built)

    def session_turns(self) -> tuple[SessionTurn, ...]:
        """The turns, numbered from 0."""
        return tuple(SessionTurn(index=i, role=t.role, text="\n\n".join(t.texts), at=t.at,
                                 call_ids=tuple(t.call_ids), agent_id=t.agent_id)
                     for i, t in enumerate(self.turns))

    def unmatched_calls(self) -> tuple[str, ...]:
        return tuple(c for c in self.calls if c not in self.results)

    def orphan_results(self) -> tuple[str, ...]:
        return tuple(r for r in self.result_order if r not in self.calls)

    def model(self) -> str | None:
        """The model that wrote most of the main session's responses (on a tie, the first used).

        Subagents often run a cheaper model of their own; the main session's is the one a replay asks for."""
        if not self.model_uses:
            return None
        counts = Counter(self.model_uses)
        top = max(counts.values())
        return next(m for m in self.model_uses if counts[m] == top)

    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.models_in_order))


def first_seen(values: list[str]) -> tuple[str, ...]:
    """Values without repeats, in order of first appearance."""
    return tuple(dict.fromkeys(v for v in values if v))


def with_writes(calls: Iterable[SessionToolCall], write_fields: Mapping[str, str]) -> tuple[SessionToolCall, ...]:
    """The calls, each successful call of a write tool marked with the path its own argument names.

    ``write_fields`` maps a write tool's name to the input field naming its file. Nothing else marks a write:
    a call that only mentions a path (in a command, a search, a message) wrote nothing."""
    marked = []
    for call in calls:
        path = call.input.get(write_fields[call.name]) if call.name in write_fields else None
        if call.status == "ok" and isinstance(path, str) and path:
            call = call.model_copy(update={"writes": (path,)})
        marked.append(call)
    return tuple(marked)


def files_written(calls: Iterable[SessionToolCall]) -> tuple[str, ...]:
    """The paths the calls wrote, in order of first write."""
    return first_seen([path for call in calls for path in call.writes])
