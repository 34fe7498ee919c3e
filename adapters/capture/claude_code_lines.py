"""Reading the lines of Claude Code session files (the main file and its subagents') into a draft.

One :class:`TranscriptReader` reads every file of a session, main file first. It folds streamed lines of
one model response (same ``message.id`` and ``requestId``) into one turn and one usage, pairs
``tool_use`` with ``tool_result`` by id through the shared draft, keeps the envelope of the main agent's
lines (session id, cwd and its changes, version, branch, first and last timestamps, the session resumed
from), and notes which call each subagent works for — named by the ``Task`` result or by the ``agent_progress``
records written while it works — so subagents can be traced to the call that started them. The harness's own
forks of the conversation (a side question, a compaction) are set aside, not read as subagents. Text the
harness inserts on the person's side is kept as ``system`` turns (:mod:`.claude_code_inserted`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.core.session import CwdChange, SessionRole, TokenUsage

from .assemble import DraftCall, DraftResult, DraftTurn, SessionDraft
from .base import json_lines, parse_time
from .claude_code_inserted import is_meta, split_inserted, strip_ansi

KNOWN_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
                         "attachment", "progress", "turn_end", "ai-title", "last-prompt", "custom-title", "agent-name",
                         "pr-link"})
"""Record types read or deliberately skipped; any other is counted in ``capture.unknown_types``."""

_EXIT_CODE = re.compile(r"^\s*(?:Error:\s*)?Exit code (-?\d+)")
_CODE_IN_WORDS = re.compile(r"\bcode (-?\d+)\b")
_AGENT_IN_TEXT = re.compile(r"\bagentId:\s*([A-Za-z0-9_-]+)")
_SYNTHETIC_MODEL = "<synthetic>"


@dataclass
class Envelope:
    """What the main agent's lines say about the session itself."""

    session_ids: list[str] = field(default_factory=list)
    cwd: str | None = None
    cwd_changes: list[CwdChange] = field(default_factory=list)
    version: str | None = None
    git_branch: str | None = None
    resumed_from: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None


@dataclass
class Responses:
    """Model responses folded as the harness writes them: one response may come as several lines (streaming),
    each repeating its usage; the first line of a response opens its turn, the rest add to it and are counted
    as duplicates, and the response's usage is kept once. Both the transcript reader and the headless stream
    reader fold responses this way."""

    draft: SessionDraft = field(default_factory=SessionDraft)
    responses: dict[tuple[Any, ...], DraftTurn] = field(default_factory=dict)
    usage: dict[str | None, dict[Any, dict[str, Any]]] = field(default_factory=dict)
    """Per agent (None: the main session), the last usage seen for each distinct response."""
    duplicate_lines: int = 0
    structured: dict[str, Any] = field(default_factory=dict)
    """Call id -> the structured copy of its result the harness keeps beside the text (``toolUseResult``)."""

    def fold(self, key: tuple[Any, ...], message: dict[str, Any], agent_id: str | None, at: datetime | None,
             cwd: str | None = None) -> None:
        """One line of the response ``key`` (the agent first, then what names the response)."""
        turn = self.responses.get(key)
        if turn is None:
            turn = self.draft.add_turn("assistant", "", at, agent_id)
            self.responses[key] = turn
            model = message.get("model")
            if isinstance(model, str) and model and model != _SYNTHETIC_MODEL:
                self.draft.model_response(model, main=agent_id is None)
        else:
            self.duplicate_lines += 1
        if isinstance(message.get("usage"), dict):
            self.usage.setdefault(agent_id, {})[key[1:]] = message["usage"]
        for block in blocks(message.get("content")):
            if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"]:
                if block["text"] not in turn.texts:
                    turn.texts.append(block["text"])
            elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                call_input = block.get("input") if isinstance(block.get("input"), dict) else {}
                self.draft.add_call(turn, DraftCall(
                    call_id=block["id"], name=str(block.get("name", "")), input=call_input,
                    turn=turn.index, agent_id=agent_id, called_at=at, cwd=cwd))

    def fold_user(self, message: dict[str, Any], role: SessionRole, agent_id: str | None, at: datetime | None,
                  structured: Any) -> None:
        """A user message: what the person wrote a ``user`` turn (with the ids of the tool results it carries,
        each answering its call: :meth:`answered`). Text the harness inserted (:func:`split_inserted`) goes to a
        ``system`` turn before it, never into the person's; a message of ``role`` ``system`` is all the harness's."""
        person: list[str] = []
        inserted: list[str] = []
        results = [b for b in blocks(message.get("content"))
                   if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)]
        for block in blocks(message.get("content")):
            if block.get("type") != "text" or not isinstance(block.get("text"), str) or not block["text"]:
                continue
            mine, theirs = ("", strip_ansi(block["text"])) if role == "system" else split_inserted(block["text"])
            person += [mine] if mine else []
            inserted += [theirs] if theirs else []
        if inserted or (role == "system" and not results):
            self.draft.add_turn("system", "\n\n".join(inserted), at, agent_id)
        if person or results or (role != "system" and not inserted):
            turn = self.draft.add_turn("user", "", at, agent_id)
            turn.texts += person
            turn.call_ids += [b["tool_use_id"] for b in results]
        for block in results:
            self.answered(block["tool_use_id"], block, structured, at)

    def answered(self, call_id: str, block: dict[str, Any], structured: Any, at: datetime | None) -> DraftResult:
        """The result ``block`` answers call ``call_id`` (the first answer keeps its structured copy)."""
        if call_id not in self.draft.results:
            self.structured[call_id] = structured
        result = DraftResult(output=text_of(block.get("content")), is_error=block.get("is_error") is True, at=at)
        self.draft.add_result(call_id, result)
        return result

    def tokens(self, agent_id: str | None) -> TokenUsage:
        """The tokens of one agent's distinct responses (the main session's for None)."""
        return sum_usage(self.usage.get(agent_id, {}).values())


@dataclass
class TranscriptReader(Responses):
    """Reads Claude Code lines into a :class:`SessionDraft`, one file after another."""

    envelope: Envelope = field(default_factory=Envelope)
    sidechain_envelope: Envelope = field(default_factory=Envelope)
    """What subagents' lines say (version, cwd, branch, times): the session's when no main line says it, as in a
    subagent's file read alone."""
    agents_seen: list[str] = field(default_factory=list)
    agents_named_by_results: dict[str, str] = field(default_factory=dict)
    """Subagent id -> the call whose result names it."""
    agents_named_by_progress: dict[str, str] = field(default_factory=dict)
    """Subagent id -> the call its ``agent_progress`` records name (``parentToolUseID``); they are written
    while the subagent works, so they trace one whose call was then rejected or interrupted."""
    side_forks: list[str] = field(default_factory=list)
    """Agent ids of the harness's own forks of the conversation (:func:`is_side_fork`), in the order met."""
    files: list[str] = field(default_factory=list)
    _cwd_now: str | None = None

    def read_file(self, path: Path, agent_id: str | None = None) -> None:
        """Read one file; ``agent_id`` is the subagent it belongs to when its lines do not say."""
        self.files.append(str(path))
        for number, record in json_lines(path):
            self.draft.lines += 1
            if record is None:
                self.draft.bad_lines.append(f"{path}:{number}")
                continue
            self._line(record, agent_id)

    def set_aside(self, agent_id: str) -> None:
        """Note one of the harness's own forks (its lines are not read)."""
        if agent_id not in self.side_forks:
            self.side_forks.append(agent_id)

    def session_envelope(self) -> Envelope:
        """The main lines' envelope, its missing parts taken from subagents' lines."""
        env, side = self.envelope, self.sidechain_envelope
        return Envelope(session_ids=env.session_ids, cwd=env.cwd or side.cwd, cwd_changes=env.cwd_changes,
                        version=env.version or side.version, git_branch=env.git_branch or side.git_branch,
                        resumed_from=env.resumed_from, started_at=env.started_at or side.started_at,
                        ended_at=env.ended_at or side.ended_at)

    def _line(self, record: dict[str, Any], file_agent: str | None) -> None:
        kind = record.get("type")
        if kind not in KNOWN_TYPES:
            self.draft.unknown_types[str(kind) if kind is not None else "(no type)"] += 1
            return
        agent_id = _agent_of(record, file_agent)
        if agent_id is not None and is_side_fork(agent_id):
            self.set_aside(agent_id)
            return
        if agent_id is not None and agent_id not in self.agents_seen:
            self.agents_seen.append(agent_id)
        at = parse_time(record.get("timestamp"))
        if agent_id is None:
            _times(self.envelope, at)
            self._envelope(record)
        else:
            _times(self.sidechain_envelope, at)
            _first_facts(self.sidechain_envelope, record)
        if kind == "assistant":
            self._assistant(record, agent_id, at)
        elif kind == "user":
            self._user(record, agent_id, at)
        elif kind == "progress":
            self._progress(record)
        elif kind == "attachment":
            self._attachment(record, agent_id, at)

    def _envelope(self, record: dict[str, Any]) -> None:
        env = self.envelope
        if isinstance(record.get("sessionId"), str):
            env.session_ids.append(record["sessionId"])
        if isinstance(record.get("session_id"), str) and env.resumed_from is None:
            env.resumed_from = record["session_id"]
        started_in = env.cwd
        _first_facts(env, record)
        cwd = record.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return
        if started_in is not None and cwd != self._cwd_now:
            env.cwd_changes.append(CwdChange(turn=len(self.draft.turns), cwd=cwd))
        self._cwd_now = cwd

    def _assistant(self, record: dict[str, Any], agent_id: str | None, at: datetime | None) -> None:
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        message_id = message.get("id") if isinstance(message.get("id"), str) else record.get("uuid", "")
        cwd = record.get("cwd") if isinstance(record.get("cwd"), str) else self._cwd_now
        self.fold((agent_id, str(message_id), str(record.get("requestId") or "")), message, agent_id, at, cwd)

    def _user(self, record: dict[str, Any], agent_id: str | None, at: datetime | None) -> None:
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        role: SessionRole = "system" if is_meta(record) else "user"
        self.fold_user(message, role, agent_id, at, record.get("toolUseResult"))

    def _attachment(self, record: dict[str, Any], agent_id: str | None, at: datetime | None) -> None:
        """A prompt typed while the agent worked (``queued_command``): the harness folds it into the running turn
        as an attachment, never a ``user`` line. The person's (``commandMode`` "prompt", from a human) is read as
        their message; any other queued text (a task notification, another session's message) as the harness's."""
        attachment = record.get("attachment") if isinstance(record.get("attachment"), dict) else {}
        if attachment.get("type") != "queued_command":
            return
        origin = attachment.get("origin") if isinstance(attachment.get("origin"), dict) else {}
        person = (attachment.get("commandMode", "prompt") == "prompt" and origin.get("kind", "human") == "human"
                  and attachment.get("isMeta") is not True)
        self.fold_user({"content": attachment.get("prompt")}, "user" if person else "system", agent_id, at, None)

    def _progress(self, record: dict[str, Any]) -> None:
        """An ``agent_progress`` record names a subagent (``data.agentId``) and the call it works for."""
        data = record.get("data") if isinstance(record.get("data"), dict) else {}
        agent, call = data.get("agentId"), record.get("parentToolUseID")
        if data.get("type") != "agent_progress" or not isinstance(agent, str) or not isinstance(call, str):
            return
        if agent and call and not is_side_fork(agent):
            self.agents_named_by_progress.setdefault(agent, call)

    def answered(self, call_id: str, block: dict[str, Any], structured: Any, at: datetime | None) -> DraftResult:
        """As :meth:`Responses.answered`; a result that names a subagent (``agentId``) traces it to this call."""
        result = super().answered(call_id, block, structured, at)
        named = structured.get("agentId") if isinstance(structured, dict) else None
        found = _AGENT_IN_TEXT.search(result.output)
        agent = named if isinstance(named, str) and named else (found.group(1) if found else None)
        if agent and agent not in self.agents_named_by_results:
            self.agents_named_by_results[agent] = call_id
        return result

    def settle_exit_codes(self, shell_tool: str) -> None:
        """Give each paired call of ``shell_tool`` its exit status (once every file is read: results may come
        before their calls)."""
        for call_id, result in self.draft.results.items():
            call = self.draft.calls.get(call_id)
            if call is not None and call.name == shell_tool:
                result.exit_code = shell_exit_code(result.output, result.is_error, self.structured.get(call_id))


FORK_LABELS = ("side_question", "compact", "speculation", "session_memory", "prompt_suggestion", "agent_summary",
               "extract_memories", "auto_dream")
"""The labels Claude Code gives the agents it forks off the main conversation for its own ends (its forked-agent
runner, as of 2.1.97): a fork's agent id is ``a<label>-<hex>`` (``aside_question-…``, ``acompact-…``), a
subagent's ``a<hex>``. A fork's file replays the conversation so far (up to 2.1.100 an aside's copied all of
it); which forks keep a file changes with the version (2.1.97 keeps side questions', speculation's and session
memory's; earlier 2.1 versions also kept compaction's)."""


def is_side_fork(agent_id: str) -> bool:
    """Whether an agent id names one of the harness's own forks rather than a subagent the agent started."""
    return agent_id.startswith(tuple(f"a{label}-" for label in FORK_LABELS))


def _times(env: Envelope, at: datetime | None) -> None:
    if at is None:
        return
    env.started_at = at if env.started_at is None or at < env.started_at else env.started_at
    env.ended_at = at if env.ended_at is None or at > env.ended_at else env.ended_at


def _first_facts(env: Envelope, record: dict[str, Any]) -> None:
    """The first version, working directory and branch a line names."""
    if env.version is None and isinstance(record.get("version"), str) and record["version"]:
        env.version = record["version"]
    if env.git_branch is None and isinstance(record.get("gitBranch"), str) and record["gitBranch"]:
        env.git_branch = record["gitBranch"]
    if env.cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
        env.cwd = record["cwd"]


def _agent_of(record: dict[str, Any], file_agent: str | None) -> str | None:
    """The subagent a line belongs to: its own ``agentId`` on a sidechain line, else the file's."""
    if record.get("isSidechain") is True:
        agent = record.get("agentId")
        return agent if isinstance(agent, str) and agent else (file_agent or "sidechain")
    return file_agent


def blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def text_of(content: Any) -> str:
    """A tool result as the text the agent saw: a string as is, a list's text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") if isinstance(b, dict) else str(b) for b in content]
        return "\n".join(p for p in parts if p)
    return ""


def shell_exit_code(output: str, is_error: bool, structured: Any) -> int | None:
    """A Bash call's exit status as far as the transcript records it.

    An error result starts "Exit code N" (or the structured result does, "Error: Exit code N"); otherwise it
    is unknown. A success is 0, unless the command was interrupted (unknown) or Claude Code interpreted a
    non-zero status as no error (``returnCodeInterpretation``, e.g. grep's "No matches found"): then the
    status is the number it names, or unknown.
    """
    if is_error:
        for text in (output, structured if isinstance(structured, str) else ""):
            found = _EXIT_CODE.match(text)
            if found:
                return int(found.group(1))
        return None
    if isinstance(structured, dict):
        if structured.get("interrupted") is True:
            return None
        interpretation = structured.get("returnCodeInterpretation")
        if isinstance(interpretation, str) and interpretation:
            found = _CODE_IN_WORDS.search(interpretation)
            return int(found.group(1)) if found else None
    return 0


def sum_usage(usages: Iterable[dict[str, Any]]) -> TokenUsage:
    """Tokens over distinct responses, each given by its Anthropic-style ``usage`` object."""
    total = TokenUsage()
    for usage in usages:
        total = total + TokenUsage(
            input=_int(usage.get("input_tokens")), output=_int(usage.get("output_tokens")),
            cache_creation=_int(usage.get("cache_creation_input_tokens")),
            cache_read=_int(usage.get("cache_read_input_tokens")), responses=1)
    return total


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
