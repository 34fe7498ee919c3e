"""Reading a headless Claude Code run's stream-json output (``claude -p``) into a :class:`Session`.

The stream is one JSON event per line: a ``system``/``init`` event (session id, model, the tools the session
was given, cwd, version), ``assistant`` events carrying one Anthropic message each (a response with several
content blocks arrives as several events sharing the message id and repeating its usage), ``user`` events
carrying tool results, and a final ``result`` event (subtype, ``is_error``, turns, cost, duration, usage; its
usage is the main session's token count, the streamed messages' own being partial).
Events with a non-null ``parent_tool_use_id`` are a subagent's traffic: the subagent is named by the call
that started it. Lines that are not JSON objects are counted, never fatal; a run that died mid-way still
reads as the session it was so far.

Transcript files carry the same messages (:mod:`assay.adapters.capture.claude_code`); the names of the
tools that read, write and run commands are shared with that reader.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from assay.core.session import Capture, CommandRun, Session, Subagent, TokenUsage, is_test_command

from ..capture.assemble import first_seen
from ..capture.claude_code import READ_TOOLS, SHELL_TOOL, WRITE_TOOLS
from ..capture.claude_code_lines import Responses, shell_exit_code

__all__ = ["HARNESS", "StreamRun", "read_stream"]

HARNESS = "claude-code"
KNOWN_EVENTS = frozenset({"system", "assistant", "user", "result", "stream_event"})
"""Event types read or deliberately skipped; any other is counted in ``capture.unknown_types``."""


@dataclass(frozen=True)
class StreamRun:
    """What one headless run printed: the session, and the two events that frame it."""

    session: Session | None
    """None when the run printed no event at all."""
    init: dict[str, Any] | None
    """The ``system``/``init`` event (None when the run died before it)."""
    result: dict[str, Any] | None
    """The final ``result`` event (None when the run died before it)."""


@dataclass
class _Reader(Responses):
    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    agents: list[str] = field(default_factory=list)
    events: int = 0

    def line(self, number: int, raw: str) -> None:
        if not raw.strip():
            return
        self.draft.lines += 1
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            self.draft.bad_lines.append(f"stdout:{number}")
            return
        kind = event.get("type")
        if kind not in KNOWN_EVENTS:
            self.draft.unknown_types[str(kind) if kind is not None else "(no type)"] += 1
            return
        self.events += 1
        parent = event.get("parent_tool_use_id")
        agent_id = parent if isinstance(parent, str) and parent else None
        if agent_id is not None and agent_id not in self.agents:
            self.agents.append(agent_id)
        if kind == "system" and event.get("subtype") == "init" and self.init is None:
            self.init = event
        elif kind == "result":
            self.result = event
        elif kind == "assistant":
            self.assistant(event, agent_id)
        elif kind == "user":
            self.user(event, agent_id)

    def assistant(self, event: dict[str, Any], agent_id: str | None) -> None:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        message_id = str(message.get("id") or event.get("uuid") or f"line-{self.draft.lines}")
        self.fold((agent_id, message_id), message, agent_id, None)

    def user(self, event: dict[str, Any], agent_id: str | None) -> None:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        self.fold_user(message, "user", agent_id, None, event.get("tool_use_result"))


def read_stream(lines: Iterable[str], *, prompt: str | None = None, started_at: datetime | None = None,
                ended_at: datetime | None = None) -> StreamRun:
    """The session a headless run printed. ``prompt`` (the ask; the stream does not echo it) becomes the first
    user turn; ``started_at``/``ended_at`` are when the run was started and ended (the stream has no clock)."""
    reader = _Reader()
    if prompt is not None:
        reader.draft.add_turn("user", prompt, started_at)
    for number, raw in enumerate(lines, start=1):
        reader.line(number, raw)
    if reader.events == 0:
        return StreamRun(session=None, init=None, result=None)
    return StreamRun(session=_session(reader, started_at, ended_at), init=reader.init, result=reader.result)


def _session(reader: _Reader, started_at: datetime | None, ended_at: datetime | None) -> Session:
    draft, init, result = reader.draft, reader.init or {}, reader.result or {}
    for call_id, outcome in draft.results.items():
        call = draft.calls.get(call_id)
        if call is not None and call.name == SHELL_TOOL:
            outcome.exit_code = shell_exit_code(outcome.output, outcome.is_error, reader.structured.get(call_id))
    calls = draft.tool_calls()
    ok = [c for c in calls if c.status == "ok"]
    commands = tuple(CommandRun(call_id=c.call_id, command=str(c.input.get("command", "")), exit_code=c.exit_code,
                                is_test=is_test_command(str(c.input.get("command", ""))))
                     for c in calls if c.name == SHELL_TOOL)
    subagents = tuple(Subagent(agent_id=agent, parent_call_id=agent,
                               turns=sum(1 for t in draft.turns if t.agent_id == agent),
                               tool_calls=sum(1 for c in calls if c.agent_id == agent), tokens=reader.tokens(agent))
                      for agent in reader.agents)
    session_id = _text(init.get("session_id")) or _text(result.get("session_id")) or "unknown"
    version = _text(init.get("claude_code_version")) or _text(init.get("version"))
    cost = result.get("total_cost_usd")
    return Session(
        session_id=session_id, harness=HARNESS, harness_version=version,
        model=draft.model() or _text(init.get("model")), models=draft.models(), cwd=_text(init.get("cwd")),
        started_at=started_at, ended_at=ended_at, turns=draft.session_turns(), tool_calls=calls,
        files_read=first_seen([str(c.input.get(READ_TOOLS[c.name], "")) for c in ok if c.name in READ_TOOLS]),
        files_written=first_seen([str(c.input.get(WRITE_TOOLS[c.name], "")) for c in ok if c.name in WRITE_TOOLS]),
        commands=commands, tokens=_main_tokens(reader.tokens(None), result.get("usage"), bool(reader.agents)),
        cost_usd=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
        subagents=subagents,
        capture=Capture(lines=draft.lines, unknown_types=dict(sorted(draft.unknown_types.items())),
                        bad_lines=tuple(draft.bad_lines), duplicate_lines=reader.duplicate_lines,
                        unmatched_calls=draft.unmatched_calls(), orphan_results=draft.orphan_results()))


def _main_tokens(streamed: TokenUsage, usage: Any, subagents: bool) -> TokenUsage:
    """The main session's tokens: the result event's totals when it has them and no subagent ran.

    An ``assistant`` event is printed as soon as its content block is complete, before the response's last
    usage (``message_delta``) arrives, so its ``output_tokens`` is the count so far (Claude Code 2.1, against
    any streaming Messages API); the result's ``usage`` is what the harness summed once each response ended.
    With subagents that sum may include theirs, so the streamed counts stand."""
    if subagents or not isinstance(usage, dict):
        return streamed
    counts = [usage.get(key) for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                        "cache_read_input_tokens")]
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        return streamed
    return TokenUsage(input=counts[0], output=counts[1], cache_creation=counts[2], cache_read=counts[3],
                      responses=streamed.responses)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
