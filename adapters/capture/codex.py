"""Codex CLI rollouts: where they live, and how one becomes a :class:`Session`.

A rollout is ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl`` (``CODEX_HOME``
defaults to ``~/.codex``), one ``{"timestamp", "type", "payload"}`` object per line.

Turns come from ``response_item`` messages — what the model was given and what it answered, in order
with its calls — and never from the ``event_msg`` copies (``user_message``, ``agent_message``), which
would count every message twice. Context the harness injects as a user message (environment context,
instructions files) and developer messages are ``system`` turns. Calls (``function_call``,
``custom_tool_call``, ``local_shell_call``) belong to the assistant turn of the response that made them;
a response with calls but no text gets an empty assistant turn. Results pair on ``call_id``.

Tokens are the last ``token_count`` event's ``total_token_usage`` (a running total, never summed):
cached input is ``cache_read`` and the rest of the input is ``input``. A shell call whose output records
a non-zero exit code is an ``error``; a patch sent through the shell is a write, not a command.
Rollouts name no files read (there is no read tool) and no cost.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.session import Capture, CommandRun, CwdChange, Session, SessionRef, SessionRole, TokenUsage
from assay.core.session import is_test_command

from .assemble import DraftCall, DraftResult, DraftTurn, SessionDraft, first_seen
from .base import CaptureAdapter, first_records, json_lines, one_line, parse_time, within

KNOWN_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
KNOWN_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                         "custom_tool_call", "custom_tool_call_output"})
KNOWN_EVENTS = frozenset({"user_message", "agent_message", "agent_reasoning", "token_count", "task_started",
                          "task_complete", "turn_aborted"})
"""What is read or deliberately skipped; anything else is counted as ``type`` or ``type/payload type``."""

SHELL_TOOLS = frozenset({"shell", "shell_command", "container.exec", "local_shell"})
PATCH_TOOL = "apply_patch"
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_PATCH_PATH = re.compile(r"^\*\*\* (?:Update File|Add File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)
_EXIT_LINE = re.compile(r"^Exit code: (-?\d+)", re.MULTILINE)


class CodexAdapter(CaptureAdapter):
    """Codex CLI rollout files (``$CODEX_HOME/sessions``)."""

    name: ClassVar[str] = "codex"
    aliases: ClassVar[tuple[str, ...]] = ("codex-cli", "codex_cli")
    guarantees: ClassVar[tuple[str, ...]] = (
        "tool calls paired on call_id; unmatched calls and orphan results listed",
        "tokens: the last total_token_usage, never summed",
        "turns from response_item messages only (event_msg copies ignored)",
        "shell exit status from the output's metadata or its 'Exit code:' line, else None",
        "files_written from apply_patch headers; files_read: not in rollouts (empty)",
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
    cwd: str | None = None
    cwd_changes: list[CwdChange] = field(default_factory=list)
    model_now: str | None = None
    response: DraftTurn | None = None
    """The assistant turn later calls belong to; None once the model's calls were answered."""
    totals: list[dict[str, Any]] = field(default_factory=list)
    exit_codes: dict[str, int] = field(default_factory=dict)
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
            if kind not in KNOWN_TYPES:
                self.draft.unknown_types[str(kind) if kind is not None else "(no type)"] += 1
            elif kind == "session_meta" and not self.meta:
                self.meta = payload
                self._cwd(payload.get("cwd"))
            elif kind == "turn_context":
                self._cwd(payload.get("cwd"))
                self.model_now = payload.get("model") if isinstance(payload.get("model"), str) else self.model_now
            elif kind == "response_item":
                self._item(payload, at)
            elif kind == "event_msg":
                self._event(payload)

    def _cwd(self, cwd: Any) -> None:
        if not isinstance(cwd, str) or not cwd:
            return
        if self.cwd is None:
            self.cwd = cwd
        elif cwd != self._cwd_now():
            self.cwd_changes.append(CwdChange(turn=len(self.draft.turns), cwd=cwd))

    def _cwd_now(self) -> str | None:
        return self.cwd_changes[-1].cwd if self.cwd_changes else self.cwd

    def _item(self, item: dict[str, Any], at: datetime | None) -> None:
        kind = item.get("type")
        if kind not in KNOWN_ITEMS:
            self.draft.unknown_types[f"response_item/{kind}"] += 1
        elif kind == "message":
            self._message(item, at)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(item, at)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(item, at)

    def _message(self, item: dict[str, Any], at: datetime | None) -> None:
        parts = [p.get("text") for p in item.get("content") or [] if isinstance(p, dict)]
        text = "\n\n".join(p for p in parts if isinstance(p, str) and p)
        role: SessionRole = "assistant" if item.get("role") == "assistant" else "user"
        if item.get("role") in ("developer", "system") or (role == "user" and text.lstrip().startswith(_INJECTED)):
            role = "system"
        turn = self.draft.add_turn(role, text, at)
        if role == "assistant":
            self._model_response()
        self.response = turn if role == "assistant" else None

    def _model_response(self) -> None:
        if self.model_now:
            self.draft.model_response(self.model_now, main=True)

    def _call(self, item: dict[str, Any], at: datetime | None) -> None:
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            return
        if item["type"] == "function_call":
            name, call_input = str(item.get("name", "")), _arguments(item.get("arguments"))
        elif item["type"] == "custom_tool_call":
            name, call_input = str(item.get("name", "")), {"input": item.get("input")}
        else:
            name, call_input = "local_shell", {"action": item.get("action")}
        if self.response is None:
            self.response = self.draft.add_turn("assistant", "", at)
            self._model_response()
        self.draft.add_call(self.response, DraftCall(call_id=call_id, name=name, input=call_input,
                                                     turn=self.response.index, agent_id=None, called_at=at,
                                                     cwd=self._cwd_now()))

    def _output(self, item: dict[str, Any], at: datetime | None) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            return
        text, exit_code, failed = _output(item.get("output"))
        if exit_code is not None:
            self.exit_codes[call_id] = exit_code
        self.draft.add_result(call_id, DraftResult(output=text, is_error=failed, at=at))
        self.response = None

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind not in KNOWN_EVENTS:
            self.draft.unknown_types[f"event_msg/{kind}"] += 1
        elif kind == "token_count" and isinstance(event.get("info"), dict):
            total = event["info"].get("total_token_usage")
            if isinstance(total, dict) and (not self.totals or self.totals[-1] != total):
                self.totals.append(total)

    def tokens(self) -> TokenUsage:
        if not self.totals:
            return TokenUsage()
        last = self.totals[-1]
        cached = _int(last.get("cached_input_tokens"))
        return TokenUsage(input=max(_int(last.get("input_tokens")) - cached, 0), output=_int(last.get("output_tokens")),
                          cache_read=cached, responses=len(self.totals))

    def session(self, harness: str, path: Path) -> Session:
        draft = self.draft
        for call_id, result in draft.results.items():
            call = draft.calls.get(call_id)
            result.is_error = result.is_error or bool(self.exit_codes.get(call_id))
            if call is not None and _shell_command(call) is not None:
                result.exit_code = self.exit_codes.get(call_id)
        calls = draft.tool_calls()
        written = [p for c in calls if c.status == "ok" for p in _patched_paths(draft.calls[c.call_id])]
        commands = []
        for c in calls:
            command = _shell_command(draft.calls[c.call_id])
            if command is not None:
                text, workdir = command
                commands.append(CommandRun(call_id=c.call_id, command=text, exit_code=c.exit_code,
                                           is_test=is_test_command(text), cwd=workdir or draft.calls[c.call_id].cwd))
        git = self.meta.get("git") if isinstance(self.meta.get("git"), dict) else {}
        session_id = self.meta.get("id") if isinstance(self.meta.get("id"), str) else path.stem
        return Session(
            session_id=session_id, harness=harness, harness_version=_str(self.meta.get("cli_version")),
            model=draft.model(), models=draft.models(), cwd=self.cwd, cwd_changes=tuple(self.cwd_changes),
            git_branch=_str(git.get("branch")), git_commit=_str(git.get("commit_hash")),
            started_at=self.started_at, ended_at=self.ended_at, turns=draft.session_turns(), tool_calls=calls,
            files_written=first_seen(written), commands=tuple(commands), tokens=self.tokens(), cost_usd=None,
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


def _output(raw: Any) -> tuple[str, int | None, bool]:
    """A call's output as (text the model saw, exit code if recorded, whether it is marked failed).

    The output is a string — sometimes JSON ``{"output", "metadata": {"exit_code"}}``, sometimes text with an
    ``Exit code: N`` line — or an object ``{"content", "success"}``.
    """
    failed = False
    if isinstance(raw, dict):
        failed = raw.get("success") is False
        raw = raw.get("content", "")
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and "output" in parsed:
        metadata = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
        code = metadata.get("exit_code")
        return str(parsed["output"]), code if isinstance(code, int) else None, failed
    found = _EXIT_LINE.search(text)
    return text, int(found.group(1)) if found else None, failed


def _shell_command(call: DraftCall) -> tuple[str, str | None] | None:
    """(command text, working directory) for a shell call; None for any other call, and for a patch sent
    through the shell (``["apply_patch", PATCH]``: the harness applies it itself, it runs no command)."""
    if call.name not in SHELL_TOOLS:
        return None
    action = call.input.get("action") if isinstance(call.input.get("action"), dict) else {}
    command = call.input.get("command", action.get("command"))
    if isinstance(command, list) and command[:1] == [PATCH_TOOL]:
        return None
    workdir = call.input.get("workdir") or action.get("working_directory")
    return _command_text(command), workdir if isinstance(workdir, str) else None


def _command_text(command: Any) -> str:
    """A command as one line: ``bash -lc SCRIPT`` is its script; other argument lists are shell-quoted."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
        return json.dumps(command)
    if len(command) == 3 and Path(command[0]).name in ("bash", "sh", "zsh") and command[1] in ("-lc", "-c"):
        return command[2]
    return shlex.join(command)


def _patched_paths(call: DraftCall) -> list[str]:
    """The files an ``apply_patch`` call (as a tool or as a shell command) adds, updates, deletes or moves to."""
    if call.name == PATCH_TOOL:
        patch = call.input.get("input", call.input.get("patch", ""))
    else:
        command = call.input.get("command")
        is_patch = isinstance(command, list) and len(command) == 2 and command[0] == PATCH_TOOL
        patch = command[1] if is_patch else ""
    return _PATCH_PATH.findall(patch) if isinstance(patch, str) else []


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
