"""Codex CLI rollouts: where they live, and how one becomes a :class:`Session`.

A rollout is ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl`` (``CODEX_HOME``
defaults to ``~/.codex``), one ``{"timestamp", "type", "payload"}`` object per line.

Turns come from ``response_item`` messages — what the model was given and what it answered, in order
with its calls — and never from the ``event_msg`` copies (``user_message``, ``agent_message``), which
would count every message twice. Context the harness injects as a user message (environment context,
instructions files) and developer messages are ``system`` turns, and so is each compaction of the context
(its summary as text). Calls (``function_call``, ``custom_tool_call``, ``local_shell_call``, and the
model's own ``web_search_call``) belong to the assistant turn of the response that made them; a response
with calls but no text gets an empty assistant turn. Results pair on ``call_id``; what each call did is read
by :mod:`.codex_calls`.

Tokens are the last ``token_count`` event's ``total_token_usage`` (a running total, never summed):
cached input is ``cache_read`` and the rest of the input is ``input``. A command's exit code is its
``exec_command_end`` event's, else the one its output records (for a unified exec process that outlived its
call, the output of the ``write_stdin`` poll that saw it exit); a non-zero one makes the call an ``error``.
Rollouts name no files read (there is no read tool) and no cost.

**Resumed and forked rollouts.** ``codex resume`` appends to the session's own rollout: it stays one session.
A fork (``codex fork``) starts a rollout of its own and copies the earlier rollout into it before its own turns
(:mod:`.codex_fork` finds where the copy ends). The copy is the earlier session's work, not this one's: its lines
are counted but not read, and :attr:`Session.resumed_from` names the earlier session (``forked_from_id`` when
the rollout records it, else the copied ``session_meta``'s id). The running token total goes on from the copy's
last one, so this session's tokens are the difference.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.session import Capture, CommandRun, CwdChange, Session, SessionRef, SessionRole, TokenUsage
from assay.core.session import is_test_command

from .assemble import DraftCall, DraftResult, DraftTurn, SessionDraft, files_written, first_seen
from .base import CaptureAdapter, first_records, json_lines, one_line, parse_time, within
from .codex_fork import Replay, uuid7_time
from .codex_calls import STDIN_TOOL, CallOutput, call_output, patch_of, patch_refused, shell_command, stdin_session

KNOWN_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
KNOWN_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                         "custom_tool_call", "custom_tool_call_output", "web_search_call", "ghost_snapshot",
                         "compaction", "compaction_summary"})
KNOWN_EVENTS = frozenset({"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
                          "token_count", "task_started", "task_complete", "turn_aborted", "context_compacted",
                          "exec_command_begin", "exec_command_end", "terminal_interaction", "patch_apply_end",
                          "web_search_end", "mcp_tool_call_end", "entered_review_mode", "exited_review_mode",
                          "undo_completed", "thread_rolled_back", "thread_name_updated", "item_completed", "error"})
"""What is read or deliberately skipped; anything else is counted as ``type`` or ``type/payload type``."""

_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>",
             "<user_shell_command>", "Warning: apply_patch was requested via")
_COMPACTED = "(the harness compacted the conversation)"


class CodexAdapter(CaptureAdapter):
    """Codex CLI rollout files (``$CODEX_HOME/sessions``)."""

    name: ClassVar[str] = "codex"
    aliases: ClassVar[tuple[str, ...]] = ("codex-cli", "codex_cli")
    guarantees: ClassVar[tuple[str, ...]] = (
        "tool calls paired on call_id; unmatched calls and orphan results listed",
        "tokens: the last total_token_usage, never summed (a fork's less the total its replay ended with)",
        "turns from response_item messages only (event_msg copies ignored); a compaction is a system turn",
        "commands from shell, shell_command, local_shell and exec_command calls; a patch is never a command",
        "exit status from exec_command_end, else the output's metadata, 'Exit code:' or 'Process exited with "
        "code' line (a unified exec process's from the write_stdin poll that saw it exit), else None",
        "files_written from apply_patch headers in every form (tool, ['apply_patch', PATCH], heredoc script)",
        "resumed or forked rollouts: the replayed earlier session is left out and named in resumed_from",
        "files_read: not in rollouts (empty)",
        "cost: not in transcripts (None)",
    )

    def discover(self, repo: Path, environ: Mapping[str, str]) -> list[SessionRef]:
        """Rollouts under ``$CODEX_HOME/sessions`` whose ``session_meta`` cwd is ``repo`` or inside it."""
        folder = codex_home(environ) / "sessions"
        if not folder.is_dir():
            return []
        refs = [_ref(path, self.name) for path in sorted(folder.rglob("rollout-*.jsonl"))]
        return [r for r in refs if r is not None and within(r.cwd, repo)]

    def sniff(self, path: Path) -> bool:
        """Rollout lines wrap a ``payload`` in one of the rollout record types."""
        records = first_records(path)
        return bool(records) and any("payload" in r and r.get("type") in KNOWN_TYPES for r in records)

    def read(self, path: Path) -> Session:
        """The session in one rollout file."""
        reader = _Rollout()
        reader.read(Path(path))
        return reader.session(self.name, Path(path))


def codex_home(environ: Mapping[str, str]) -> Path:
    """``$CODEX_HOME``, or ``~/.codex``."""
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME", "~")) / ".codex"


@dataclass
class _Rollout:
    """Reads one rollout's lines into a draft."""

    draft: SessionDraft = field(default_factory=SessionDraft)
    meta: dict[str, Any] = field(default_factory=dict)
    resumed_from: str | None = None
    replay: Replay = field(default_factory=Replay)
    cwd: str | None = None
    cwd_changes: list[CwdChange] = field(default_factory=list)
    model_now: str | None = None
    response: DraftTurn | None = None
    """The assistant turn later calls belong to; None once the model's calls were answered."""
    compaction: DraftTurn | None = None
    """The latest turn, when it notes a compaction (its line and its event are one compaction)."""
    totals: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] | None = None
    """The running token total the replay of an earlier session ended with (this session's count starts there)."""
    exit_codes: dict[str, int] = field(default_factory=dict)
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``exec_command_end`` events by call id."""
    patch_failed: set[str] = field(default_factory=set)
    running: dict[str, str] = field(default_factory=dict)
    """Unified exec processes still running after their call: session id → the ``exec_command`` call id."""
    started_at: datetime | None = None
    ended_at: datetime | None = None

    def read(self, path: Path) -> None:
        for number, record in json_lines(path):
            self.draft.lines += 1
            if record is None:
                self.draft.bad_lines.append(f"{path}:{number}")
                continue
            at = parse_time(record.get("timestamp"))
            if at is not None:
                self.started_at = self.started_at if self.started_at and self.started_at <= at else at
                self.ended_at = self.ended_at if self.ended_at and self.ended_at >= at else at
            kind, payload = record.get("type"), record.get("payload")
            payload = payload if isinstance(payload, dict) else {}
            if self.replay.goes_on(kind, payload, at):
                self.baseline = _total(payload) or self.baseline
                continue
            if kind not in KNOWN_TYPES:
                self.draft.unknown_types[str(kind) if kind is not None else "(no type)"] += 1
            elif kind == "session_meta":
                self._meta(payload, at)
            elif kind == "turn_context":
                self._cwd(payload.get("cwd"))
                self.model_now = payload.get("model") if isinstance(payload.get("model"), str) else self.model_now
            elif kind == "response_item":
                self._item(payload, at, number)
            elif kind == "event_msg":
                self._event(payload, at)
            elif kind == "compacted":
                self._compacted(payload.get("message"), at)

    def _meta(self, payload: dict[str, Any], at: datetime | None) -> None:
        """The first ``session_meta`` is this session's; another session's starts a replay of its history."""
        if not self.meta:
            self.meta = payload
            self.resumed_from = _str(payload.get("forked_from_id"))
            self.replay.created = uuid7_time(payload.get("id")) or parse_time(payload.get("timestamp")) or at
            self._cwd(payload.get("cwd"))
        elif _str(payload.get("id")) and payload.get("id") != self.meta.get("id") and not self.draft.turns:
            self.resumed_from = self.resumed_from or payload["id"]
            self.replay.active = True

    def _cwd(self, cwd: Any) -> None:
        if not isinstance(cwd, str) or not cwd:
            return
        if self.cwd is None:
            self.cwd = cwd
        elif cwd != self._cwd_now():
            self.cwd_changes.append(CwdChange(turn=len(self.draft.turns), cwd=cwd))

    def _cwd_now(self) -> str | None:
        return self.cwd_changes[-1].cwd if self.cwd_changes else self.cwd

    def _item(self, item: dict[str, Any], at: datetime | None, number: int) -> None:
        kind = item.get("type")
        if kind not in KNOWN_ITEMS:
            self.draft.unknown_types[f"response_item/{kind}"] += 1
        elif kind == "message":
            self._message(item, at)
        elif kind == "function_call":
            self._call(item, str(item.get("name", "")), _arguments(item.get("arguments")), at)
        elif kind == "custom_tool_call":
            self._call(item, str(item.get("name", "")), {"input": item.get("input")}, at)
        elif kind == "local_shell_call":
            self._call(item, "local_shell", {"action": item.get("action")}, at)
        elif kind == "web_search_call":
            self._web_search(item, at, number)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(item, at)

    def _add_turn(self, role: SessionRole, text: str, at: datetime | None) -> DraftTurn:
        self.compaction = None
        return self.draft.add_turn(role, text, at)

    def _message(self, item: dict[str, Any], at: datetime | None) -> None:
        parts = [p.get("text") for p in item.get("content") or [] if isinstance(p, dict)]
        text = "\n\n".join(p for p in parts if isinstance(p, str) and p)
        role: SessionRole = "assistant" if item.get("role") == "assistant" else "user"
        if item.get("role") in ("developer", "system") or (role == "user" and text.lstrip().startswith(_INJECTED)):
            role = "system"
        turn = self._add_turn(role, text, at)
        if role == "assistant":
            self._model_response()
        self.response = turn if role == "assistant" else None

    def _model_response(self) -> None:
        if self.model_now:
            self.draft.model_response(self.model_now, main=True)

    def _call(self, item: dict[str, Any], name: str, arguments: dict[str, Any], at: datetime | None) -> str | None:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            return None
        if self.response is None:
            self.response = self._add_turn("assistant", "", at)
            self._model_response()
        self.draft.add_call(self.response, DraftCall(call_id=call_id, name=name, input=arguments,
                                                     turn=self.response.index, agent_id=None, called_at=at,
                                                     cwd=self._cwd_now()))
        return call_id

    def _web_search(self, item: dict[str, Any], at: datetime | None, number: int) -> None:
        """The model's own search: no call id and no output line; its status says how it went."""
        call_id = self._call({"call_id": item.get("id") or f"web_search_call@{number}"}, "web_search",
                             {"action": item.get("action")}, at)
        if call_id is not None and item.get("status") not in ("in_progress", "searching"):
            self.draft.add_result(call_id, DraftResult(output="", is_error=item.get("status") in ("failed",
                                                                                                  "incomplete"), at=at))

    def _output(self, item: dict[str, Any], at: datetime | None) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            return
        output = call_output(item.get("output"))
        self._exit_code(call_id, output)
        call = self.draft.calls.get(call_id)
        if call is not None and patch_refused(output.text) and patch_of(call.name, call.input) is not None:
            self.patch_failed.add(call_id)
        self.draft.add_result(call_id, DraftResult(output=output.text, is_error=output.failed, at=at))
        self.response = None

    def _exit_code(self, call_id: str, output: CallOutput) -> None:
        """Record the exit code an output shows, for the command it belongs to: a ``write_stdin`` poll reports
        the exit of the process an ``exec_command`` call left running."""
        call = self.draft.calls.get(call_id)
        owner = call_id
        if call is not None and call.name == STDIN_TOOL:
            session = stdin_session(call.name, call.input)
            owner = self.running.get(session, "") if session else ""
            if session and output.running is None:
                self.running.pop(session, None)
        elif output.running is not None:
            self.running[output.running] = call_id
        if owner and output.exit_code is not None:
            self.exit_codes.setdefault(owner, output.exit_code)

    def _event(self, event: dict[str, Any], at: datetime | None) -> None:
        kind = event.get("type")
        call_id = event.get("call_id") if isinstance(event.get("call_id"), str) else None
        if kind not in KNOWN_EVENTS:
            self.draft.unknown_types[f"event_msg/{kind}"] += 1
        elif kind == "token_count":
            total = _total(event)
            if total is not None and total != (self.totals[-1] if self.totals else self.baseline):
                self.totals.append(total)
        elif kind == "exec_command_end" and call_id:
            self.ended[call_id] = event
        elif kind == "patch_apply_end" and call_id and event.get("success") is False:
            self.patch_failed.add(call_id)
        elif kind == "context_compacted":
            self._compacted(None, at)

    def _compacted(self, summary: Any, at: datetime | None) -> None:
        """A compaction is noted once, by its ``compacted`` line or its ``context_compacted`` event, whichever
        comes first; the line's summary is its text."""
        text = summary if isinstance(summary, str) and summary.strip() else ""
        if self.compaction is None:
            self.compaction = self.draft.add_turn("system", text or _COMPACTED, at)
            self.response = None
        elif text and self.compaction.texts == [_COMPACTED]:
            self.compaction.texts = [text]

    def exit_code(self, call_id: str) -> int | None:
        ended = self.ended.get(call_id, {}).get("exit_code")
        return ended if isinstance(ended, int) and not isinstance(ended, bool) else self.exit_codes.get(call_id)

    def tokens(self) -> TokenUsage:
        """The last running total, less the one a replayed earlier session ended with."""
        if not self.totals:
            return TokenUsage()
        last, base = self.totals[-1], self.baseline or {}

        def used(key: str) -> int:
            return max(_int(last.get(key)) - _int(base.get(key)), 0)

        cached = used("cached_input_tokens")
        return TokenUsage(input=max(used("input_tokens") - cached, 0), output=used("output_tokens"), cache_read=cached,
                          responses=len(self.totals))

    def session(self, harness: str, path: Path) -> Session:
        draft = self.draft
        calls, commands = [], []
        for call in draft.tool_calls():
            made = draft.calls[call.call_id]
            code, command = self.exit_code(call.call_id), shell_command(made.name, made.input)
            status = call.status
            if status == "ok" and (code or call.call_id in self.patch_failed):
                status = "error"
            patch = patch_of(made.name, made.input)
            writes = tuple(first_seen(patch.paths())) if patch is not None and status == "ok" else ()
            calls.append(call.model_copy(update={"status": status, "exit_code": code if command else None,
                                                 "writes": writes}))
            if command is not None:
                text, workdir = command
                ended_cwd = self.ended.get(call.call_id, {}).get("cwd")
                commands.append(CommandRun(call_id=call.call_id, command=text, exit_code=code,
                                           is_test=is_test_command(text), cwd=workdir or _str(ended_cwd) or made.cwd))
        git = self.meta.get("git") if isinstance(self.meta.get("git"), dict) else {}
        session_id = self.meta.get("id") if isinstance(self.meta.get("id"), str) else path.stem
        return Session(
            session_id=session_id, harness=harness, harness_version=_str(self.meta.get("cli_version")),
            model=draft.model(), models=draft.models(), cwd=self.cwd, cwd_changes=tuple(self.cwd_changes),
            git_branch=_str(git.get("branch")), git_commit=_str(git.get("commit_hash")),
            started_at=self.started_at, ended_at=self.ended_at, turns=draft.session_turns(), tool_calls=tuple(calls),
            files_written=files_written(calls), commands=tuple(commands),
            tokens=self.tokens(), cost_usd=None, resumed_from=self.resumed_from,
            capture=Capture(files=(str(path),), lines=draft.lines,
                            unknown_types=dict(sorted(draft.unknown_types.items())), bad_lines=tuple(draft.bad_lines),
                            unmatched_calls=draft.unmatched_calls(), orphan_results=draft.orphan_results()))


def _arguments(raw: Any) -> dict[str, Any]:
    """A function call's arguments (a JSON string) as a dict; kept whole under ``arguments`` otherwise."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": raw}


def _total(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A ``token_count`` event's running total (None for any other line, and for a count with no usage yet)."""
    info = payload.get("info") if payload.get("type") == "token_count" else None
    total = info.get("total_token_usage") if isinstance(info, dict) else None
    return total if isinstance(total, dict) else None


def _ref(path: Path, harness: str) -> SessionRef | None:
    """A rollout's summary; None when it has no ``session_meta``."""
    reader = _Rollout()
    reader.read(path)
    if not reader.meta:
        return None
    prompt = next((t for t in reader.draft.turns if t.role == "user" and t.texts), None)
    return SessionRef(session_id=str(reader.meta.get("id") or path.stem), harness=harness, path=str(path),
                      cwd=reader.cwd, started_at=reader.started_at, ended_at=reader.ended_at,
                      first_prompt=one_line("\n\n".join(prompt.texts)) if prompt else None)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
