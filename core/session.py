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
- :attr:`Session.files_read`, :attr:`Session.files_written`, :attr:`Session.commands` — read off the calls; a
  file is written only by a write tool's own arguments (each call's :attr:`SessionToolCall.writes`), never by
  a call that mentions it;
- :attr:`Session.tokens` — summed once per model response (streaming writes one response as several
  lines repeating its usage; the adapter de-duplicates before summing);
- :attr:`Session.subagents` — sessions the agent started, each with its own calls and tokens, traced to the
  call that started it when the transcript says so;
- :attr:`Session.capture` — what the reader could not use: record types it does not know (counted, never
  fatal), lines it could not parse, calls without results, results without calls, the harness's own forks
  of the conversation it set aside.

Text a harness inserts on the person's side (its commands' output, reminders, interruptions, summaries) is a
``system`` turn: :attr:`Session.user_turns` holds only what the person wrote.
"""

from __future__ import annotations

import re
import shlex
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
    writes: tuple[str, ...] = ()
    """The paths this call created or changed, as the write tool's own arguments name them (a file edit's path,
    a patch's file headers); empty for every other call, and for a write that failed. Only these count as
    writes: a call whose text merely mentions a path wrote nothing."""


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
    side_forks: tuple[str, ...] = ()
    """Transcripts the harness forked off the main conversation for its own ends — a side question the person
    asked while the agent worked, a compaction — by their agent ids. They are not subagents and not the
    session's work: their turns and calls are left out."""


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
        when no call shows a write). A call reads when it names a path read; it writes when it marks its
        :attr:`~SessionToolCall.writes`. A session whose reader marks no call's writes (an older blessed
        session) falls back to its list of paths written: a call writes when it names one and carries more
        text (the new content), or names one inside a multi-line text (a patch)."""
        read, written = set(self.files_read), set(self.files_written)
        marked = any(c.writes for c in self.tool_calls)
        reads: list[str] = []
        for call in self.tool_calls:
            strings = strings_of(call.input)
            if call.writes if marked else _names_a_write(strings, written):
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


def _names_a_write(strings: list[str], written: set[str]) -> bool:
    named = [s for s in strings if s in written]
    patched = any("\n" in s and any(path in s for path in written) for s in strings)
    return bool(named and len(strings) > len(named)) or patched


def strings_of(value: Any) -> list[str]:
    """Every string inside a JSON value (a tool call's input)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_of(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings_of(v)]
    return []


_TEST_PROGRAMS = frozenset({"pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest",
                            "verify.sh"})
_TEST_MODULES = frozenset({"pytest", "unittest", "tox", "nox"})
"""Test runners run as ``python -m <module>``."""
_TEST_SUBCOMMANDS = {"npm": {"test", "t"}, "yarn": {"test"}, "pnpm": {"test"}, "bun": {"test"}, "deno": {"test"},
                     "go": {"test"}, "cargo": {"test", "nextest"}, "make": {"test", "check"}, "mvn": {"test", "verify"},
                     "gradle": {"test"}, "gradlew": {"test"}, "dotnet": {"test"}, "mix": {"test"},
                     "rake": {"test", "spec"}}  # fmt: skip
"""Tools whose subcommand runs the tests (``npm run test*`` counts too)."""
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "timeout", "xvfb-run", "npx", "bunx", "uvx", "command",
                       "exec"})
"""Programs that run the command after them (their options and a duration skipped)."""
_RUNS = {"uv": "run", "poetry": "run", "pipenv": "run", "hatch": "run", "pdm": "run", "rye": "run", "bundle": "exec",
         "pnpm": "exec"}
"""Environment managers that run the command after their subcommand."""
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", "(", ")", ";;"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def is_test_command(command: str) -> bool:
    """Whether a shell command runs a test suite: one of its simple commands (split on ``&&``, ``;``, ``|`` and
    new lines) has a test runner as its program (``pytest``, ``python -m unittest``, ``npm test``, ``go test``,
    ``./verify.sh`` …), after wrappers such as ``env``, ``timeout``, ``uv run`` or ``bash -c``. A runner's name
    elsewhere — an argument to ``echo`` or ``grep``, a line of a here-document such as a patch — does not count."""
    return any(_runs_tests(words) for words in _simple_commands(_without_heredocs(command)))


def _without_heredocs(command: str) -> str:
    """The command with the bodies of its here-documents left out (their opening lines kept)."""
    kept, until = [], None
    for line in command.split("\n"):
        if until is not None:
            until = None if line.strip() == until else until
            continue
        kept.append(line)
        found = _HEREDOC.search(line)
        until = found.group(2) if found else None
    return "\n".join(kept)


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command, split on shell operators and new lines."""
    try:
        lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: the words as they stand
        tokens = command.replace("\n", " ; ").split()
    found: list[list[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS:
            found.append([])
        else:
            found[-1].append(token)
    return [words for words in found if words]


def _runs_tests(words: list[str]) -> bool:
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return False
    program, rest = words[0].rsplit("/", 1)[-1].lower(), words[1:]
    if program in _WRAPPERS:
        while rest and (rest[0].startswith("-") or rest[0][:1].isdigit() or _ASSIGNMENT.match(rest[0])):
            rest = rest[1:]
        return _runs_tests(rest)
    if _RUNS.get(program) and rest[:1] == [_RUNS[program]]:
        return _runs_tests(rest[1:])
    if program in _SHELLS:
        flag = next((i for i, w in enumerate(rest) if w.startswith("-") and "c" in w and not w.startswith("--")), None)
        if flag is not None:
            return flag + 1 < len(rest) and is_test_command(rest[flag + 1])
        script = next((w for w in rest if not w.startswith("-")), "")
        return script.rsplit("/", 1)[-1] in _TEST_PROGRAMS
    if program in _TEST_PROGRAMS:
        return True
    if re.fullmatch(r"python[\d.]*|py", program):
        if "-m" in rest:
            return rest.index("-m") + 1 < len(rest) and rest[rest.index("-m") + 1] in _TEST_MODULES
        script = [w for w in rest if not w.startswith("-")]
        return script[:1] != [] and script[0].endswith("manage.py") and script[1:2] == ["test"]
    subcommands = _TEST_SUBCOMMANDS.get(program.removesuffix(".bat"))
    if subcommands:
        args = [w for w in rest if not w.startswith("-")]
        return bool(args) and (args[0] in subcommands or (args[0] == "run" and args[1:2] != []
                                                          and args[1].startswith("test")))
    return False
