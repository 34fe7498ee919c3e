"""A coding agent's session, in words that belong to no harness.

A capture adapter (``adapters/capture/``) reads a harness's own transcript files and builds one
:class:`Session`; everything after capture — bless, distil, the exam's assertions, a replay's evidence —
reads only this shape. No module outside ``adapters/`` names a harness (a test enforces it): a harness is
a name in :attr:`Session.harness`, nothing more.

What the harness did is kept as it happened, and what a reader needs most is derived once, by the adapter
that knows the harness's tool names:

- :attr:`Session.turns` — the conversation in order: what the person asked, what the agent said;
- :attr:`Session.tool_calls` — every call paired with its result by id (results can arrive out of order);
  a call with no result is kept, marked ``unmatched``, and listed in :attr:`Capture.unmatched_calls`;
- :attr:`Session.files_read`, :attr:`Session.files_written`, :attr:`Session.commands` — read off the calls;
- :attr:`Session.tokens` — summed once per model response (streaming writes one response as several
  lines repeating its usage; the adapter de-duplicates before summing);
- :attr:`Session.subagents` — sessions the agent started, each with its own calls and tokens, traced to the
  call that started it when the transcript says so;
- :attr:`Session.capture` — what the reader could not use: record types it does not know (counted, never
  fatal), lines it could not parse, calls without results, results without calls.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SessionRole = Literal["user", "assistant", "system"]
CallStatus = Literal["ok", "error", "unmatched"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SessionTurn(_Model):
    """One message of the conversation (text only; tool traffic is in :class:`SessionToolCall`)."""

    index: int
    """Position in the session, from 0."""
    role: SessionRole
    text: str
    """The message's text blocks joined by blank lines ('' for a message that only called tools)."""
    at: datetime | None = None
    """When the harness wrote it (UTC)."""
    call_ids: tuple[str, ...] = ()
    """The tool calls this message made (assistant) or answered (user), in order."""
    agent_id: str | None = None
    """The subagent that spoke, or None for the main session."""


class SessionToolCall(_Model):
    """One tool call, paired with its result."""

    call_id: str
    name: str
    """The tool's name as the harness calls it."""
    input: dict[str, Any] = Field(default_factory=dict)
    status: CallStatus
    """``ok``; ``error`` when the harness marked the result an error; ``unmatched`` when no result came."""
    output: str | None = None
    """The result as text the agent saw (list results joined), or None when unmatched."""
    turn: int
    """The index of the assistant turn that made the call."""
    agent_id: str | None = None
    """The subagent that made the call, or None for the main session."""
    called_at: datetime | None = None
    answered_at: datetime | None = None
    exit_code: int | None = None
    """For a shell command, its exit status when the harness recorded one."""


class CommandRun(_Model):
    """A shell command the agent ran, with its exit status."""

    call_id: str
    command: str
    exit_code: int | None = None
    """None when the harness did not record one (an interrupted or unmatched call)."""
    is_test: bool = False
    """The command runs a test suite (pytest, npm test, go test, cargo test, make test, …)."""
    cwd: str | None = None


class TokenUsage(_Model):
    """Tokens over the session's distinct model responses."""

    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    responses: int = 0
    """Distinct model responses counted (after de-duplicating streamed lines)."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(input=self.input + other.input, output=self.output + other.output,
                          cache_creation=self.cache_creation + other.cache_creation,
                          cache_read=self.cache_read + other.cache_read, responses=self.responses + other.responses)

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_creation + self.cache_read


class CwdChange(_Model):
    """The working directory changed before turn ``turn``."""

    turn: int
    cwd: str


class Subagent(_Model):
    """A session the agent started (a task given to a helper agent)."""

    agent_id: str
    parent_call_id: str | None = None
    """The main session's call that started it; None when the transcript cannot trace it."""
    turns: int = 0
    tool_calls: int = 0
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    nested_in: str | None = None
    """The subagent that started this one, for nested subagents."""


class Capture(_Model):
    """What reading the transcript met that it could not use; reported, never fatal."""

    files: tuple[str, ...] = ()
    """The transcript files read (the session's and its subagents')."""
    lines: int = 0
    unknown_types: dict[str, int] = Field(default_factory=dict)
    """Record types the adapter does not know, with how often each occurred."""
    bad_lines: tuple[str, ...] = ()
    """``file:line`` of lines that were not JSON objects."""
    duplicate_lines: int = 0
    """Streamed lines folded into a response already counted."""
    unmatched_calls: tuple[str, ...] = ()
    """Call ids that never got a result."""
    orphan_results: tuple[str, ...] = ()
    """Result ids that answer no call."""
    untraced_subagents: tuple[str, ...] = ()
    """Subagents whose starting call the transcript does not name."""


class Session(_Model):
    """One coding-agent session, harness-neutral."""

    session_id: str
    harness: str
    """The harness's name as its capture adapter declares it."""
    harness_version: str | None = None
    model: str | None = None
    """The model that wrote most responses."""
    models: tuple[str, ...] = ()
    """Every model seen, in order of first use."""
    cwd: str | None = None
    """The working directory at the start."""
    cwd_changes: tuple[CwdChange, ...] = ()
    git_branch: str | None = None
    git_commit: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    turns: tuple[SessionTurn, ...] = ()
    tool_calls: tuple[SessionToolCall, ...] = ()
    files_read: tuple[str, ...] = ()
    """Paths read, as the agent named them, in order of first read."""
    files_written: tuple[str, ...] = ()
    """Paths created or changed, in order of first write."""
    commands: tuple[CommandRun, ...] = ()
    tokens: TokenUsage = Field(default_factory=TokenUsage)
    """The main session's tokens (each subagent's are on it)."""
    cost_usd: float | None = None
    """What the harness reported it cost; None when its transcripts carry no cost."""
    subagents: tuple[Subagent, ...] = ()
    resumed_from: str | None = None
    """The session this one was resumed from, when the transcript says so (never merged with it)."""
    capture: Capture = Field(default_factory=Capture)

    @property
    def wall_seconds(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def tools_used(self) -> tuple[str, ...]:
        """Tool names the session called, in order of first use."""
        return tuple(dict.fromkeys(c.name for c in self.tool_calls))

    @property
    def test_runs(self) -> tuple[CommandRun, ...]:
        return tuple(c for c in self.commands if c.is_test)

    @property
    def user_turns(self) -> tuple[SessionTurn, ...]:
        return tuple(t for t in self.turns if t.role == "user" and t.agent_id is None and t.text)

    def reads_before_first_write(self) -> tuple[tuple[str, ...], str | None]:
        """The calls that read a file before the first call that wrote one (their ids), and that call's id (None
        when no call shows a write). From the session's own lists of paths: a call writes when it names a
        written path and carries more text (the new content), or names it inside a multi-line text (a patch);
        a call reads when it names a path read."""
        read, written = set(self.files_read), set(self.files_written)
        reads: list[str] = []
        for call in self.tool_calls:
            strings = strings_of(call.input)
            named = [s for s in strings if s in written]
            patched = any("\n" in s and any(path in s for path in written) for s in strings)
            if (named and len(strings) > len(named)) or patched:
                return tuple(reads), call.call_id
            if any(s in read for s in strings):
                reads.append(call.call_id)
        return tuple(reads), None

    def call(self, call_id: str) -> SessionToolCall:
        for c in self.tool_calls:
            if c.call_id == call_id:
                return c
        raise KeyError(call_id)


class SessionRef(_Model):
    """A session found on this machine, before it is read whole (``assay sessions``)."""

    session_id: str
    harness: str
    path: str
    """The transcript file."""
    cwd: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    first_prompt: str | None = None
    """The first thing the person asked, cut to one line."""


def strings_of(value: Any) -> list[str]:
    """Every string inside a JSON value (a tool call's input)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_of(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings_of(v)]
    return []


_TEST_WORDS = ("pytest", "py.test", "unittest", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit",
               "ctest")
_TEST_PHRASES = ("npm test", "npm run test", "yarn test", "pnpm test", "go test", "cargo test", "make test",
                 "make check", "mvn test", "gradle test", "./gradlew test", "dotnet test", "mix test",
                 "bundle exec rake test", "verify.sh")


def is_test_command(command: str) -> bool:
    """Whether a shell command runs a test suite: a known test runner as a word, or a known phrase."""
    text = " ".join(command.split()).lower()
    words = {w.strip("'\"();&|") for w in text.replace("/", " ").split()}
    return any(w in words for w in _TEST_WORDS) or any(p in text for p in _TEST_PHRASES)
