"""What the fake coding-agent harness writes: stream-json events, the session transcript, tokens and cost.

:class:`Recorder` is the fake's only writer. Every model response and tool result goes through it once and
comes out twice, in the two shapes the real harness uses:

- on stdout (``--output-format stream-json``), one event per line: ``system/init``, ``assistant`` events
  carrying an Anthropic message, ``user`` events carrying tool results, and a final ``result``;
- in the session transcript, ``<config dir>/projects/<encoded cwd>/<session id>.jsonl``, one entry per
  line with the envelope (``uuid``, ``parentUuid`` chain, ``sessionId``, ``timestamp``, ``cwd``,
  ``gitBranch``, ``version``, ...).

Like the real harness, a response with several content blocks is written as one line per block, every
line sharing the response's ``message.id`` (and ``requestId`` in the transcript) and repeating its usage.

Tokens are not measured, they are derived from text lengths (:func:`tokens_of`), so two runs of the same
playbook cost the same. :class:`Meter` models prompt caching the way the real traffic looks: each response
reads the conversation so far from the cache and writes what is new since the previous response.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

MODEL_ALIASES = {"sonnet": "claude-sonnet-4-5-20250929", "opus": "claude-opus-4-5-20251101",
                 "haiku": "claude-haiku-4-5-20251001"}
"""Short model names the CLI accepts, and the model each one means."""
DEFAULT_MODEL = MODEL_ALIASES["sonnet"]

PRICES_PER_MILLION = {"opus": (5.0, 25.0), "sonnet": (3.0, 15.0), "haiku": (1.0, 5.0)}
"""USD per million input and output tokens, by model family (the family is found in the model's name)."""
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
SYSTEM_PROMPT_TOKENS = 2800
"""The harness's own system prompt and tool definitions, as the first response writes them to the cache."""
CONTEXT_WINDOW = 200_000
JSON_SEPARATORS = (",", ":")
"""Compact JSON, as the harness writes it."""


def resolve_model(name: str | None) -> str:
    """The full model name for ``--model`` (an alias such as ``sonnet`` or a full name); the default when None."""
    if not name:
        return DEFAULT_MODEL
    return MODEL_ALIASES.get(name, name)


def prices(model: str) -> tuple[float, float]:
    """USD per million (input, output) tokens for ``model``; an unknown family is priced like sonnet."""
    for family, pair in PRICES_PER_MILLION.items():
        if family in model:
            return pair
    return PRICES_PER_MILLION["sonnet"]


def tokens_of(text: str) -> int:
    """A deterministic token count for ``text``: one token per four characters, at least one."""
    return max(1, (len(text) + 3) // 4)


def encode_cwd(cwd: str) -> str:
    """The project folder name the harness uses for a working directory: ``/`` and ``.`` become ``-``."""
    return re.sub(r"[/.]", "-", cwd)


def transcript_path(environ: Mapping[str, str], cwd: str, session_id: str) -> Path:
    """Where the session's transcript goes: under the first ``CLAUDE_CONFIG_DIR`` entry, else ``$HOME/.claude``."""
    configured = [part for part in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if part.strip()]
    root = Path(configured[0].strip()) if configured else Path(environ.get("HOME", "~")).expanduser() / ".claude"
    return root / "projects" / encode_cwd(cwd) / f"{session_id}.jsonl"


@dataclass
class Usage:
    """Token counts, as one response reports them or as a session's total."""

    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other`` into this total."""
        self.input += other.input
        self.output += other.output
        self.cache_creation += other.cache_creation
        self.cache_read += other.cache_read

    def cost(self, model: str) -> float:
        """What these tokens cost on ``model``, in USD (the client-side estimate the harness reports)."""
        per_input, per_output = prices(model)
        return (self.input * per_input + self.cache_creation * per_input * CACHE_WRITE_FACTOR
                + self.cache_read * per_input * CACHE_READ_FACTOR + self.output * per_output) / 1_000_000

    def message_usage(self) -> dict[str, Any]:
        """The ``usage`` object of an Anthropic message."""
        return {"input_tokens": self.input, "cache_creation_input_tokens": self.cache_creation,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": self.cache_creation, "ephemeral_1h_input_tokens": 0},
                "output_tokens": self.output, "service_tier": "standard"}

    def result_usage(self) -> dict[str, Any]:
        """The ``usage`` object of the final result event."""
        return {"input_tokens": self.input, "cache_creation_input_tokens": self.cache_creation,
                "cache_read_input_tokens": self.cache_read, "output_tokens": self.output,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard"}


@dataclass
class Meter:
    """Counts turns, tokens and cost over one session, with prompt caching."""

    model: str
    pending_context: int
    """Tokens added to the conversation since the previous response (first: system prompt and ask)."""
    cached_context: int = 0
    turns: int = 0
    total: Usage = field(default_factory=Usage)

    def respond(self, output_text: str) -> Usage:
        """Count one model response that writes ``output_text``; returns its usage."""
        usage = Usage(input=3 + self.turns % 4, output=tokens_of(output_text),
                      cache_creation=self.pending_context, cache_read=self.cached_context)
        self.cached_context += self.pending_context
        self.pending_context = usage.output
        self.turns += 1
        self.total.add(usage)
        return usage

    def add_context(self, text: str) -> None:
        """A tool result the next response will read."""
        self.pending_context += tokens_of(text)

    @property
    def cost(self) -> float:
        """USD spent so far."""
        return self.total.cost(self.model)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y")[:24]


def new_tool_use_id() -> str:
    """A tool call id in the Anthropic style (``toolu_…``)."""
    return _new_id("toolu_01")


class Recorder:
    """Writes one session's events to stdout (stream-json) and its entries to the transcript file."""

    def __init__(self, *, session_id: str, cwd: str, model: str, version: str, git_branch: str,
                 transcript: Path, out: IO[str], stream: bool) -> None:
        self.session_id, self.cwd, self.model, self.version = session_id, cwd, model, version
        self.git_branch = git_branch
        self.transcript = transcript
        self.out = out
        self.stream = stream
        self.parent_uuid: str | None = None
        self.last_text = ""
        self.api_seconds = 0.0
        transcript.parent.mkdir(parents=True, exist_ok=True)

    def emit(self, event: dict[str, Any]) -> None:
        """Print one stream-json event (only when the output format is stream-json)."""
        if self.stream:
            self.out.write(json.dumps(event, separators=JSON_SEPARATORS) + "\n")
            self.out.flush()

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        entry_uuid = str(uuid.uuid4())
        entry = {"parentUuid": self.parent_uuid, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                 "sessionId": self.session_id, "version": self.version, "gitBranch": self.git_branch,
                 "type": kind, "message": message, **extra, "uuid": entry_uuid, "timestamp": _now()}
        with self.transcript.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, separators=JSON_SEPARATORS) + "\n")
        self.parent_uuid = entry_uuid
        return entry_uuid

    def init(self, *, tools: list[str], mcp_servers: list[dict[str, str]], permission_mode: str,
             api_key_source: str) -> None:
        """The ``system/init`` event: what this session runs with."""
        self.emit({"type": "system", "subtype": "init", "cwd": self.cwd, "session_id": self.session_id,
                   "tools": tools, "mcp_servers": mcp_servers, "model": self.model, "permissionMode": permission_mode,
                   "slash_commands": ["compact", "context", "cost", "init", "review"], "apiKeySource": api_key_source,
                   "claude_code_version": self.version, "output_style": "default", "agents": ["general-purpose"],
                   "skills": [], "plugins": [], "uuid": str(uuid.uuid4())})

    def ask(self, prompt: str) -> None:
        """The person's ask, as the transcript's root entry (stdout does not echo it)."""
        self._entry("user", {"role": "user", "content": prompt})

    def respond(self, blocks: list[dict[str, Any]], usage: Usage, *, synthetic: bool = False) -> None:
        """One model response: a line per content block, sharing the message id and repeating the usage."""
        message_id, request_id = _new_id("msg_01"), _new_id("req_011C")
        final_stop = "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn"
        model = "<synthetic>" if synthetic else self.model
        for position, block in enumerate(blocks):
            message = {"id": message_id, "type": "message", "role": "assistant", "model": model,
                       "content": [block], "stop_reason": final_stop if position == len(blocks) - 1 else None,
                       "stop_sequence": None, "usage": usage.message_usage()}
            extra: dict[str, Any] = {"isApiErrorMessage": True} if synthetic else {"requestId": request_id}
            entry_uuid = self._entry("assistant", message, **extra)
            self.emit({"type": "assistant", "message": message, "parent_tool_use_id": None,
                       "session_id": self.session_id, "uuid": entry_uuid})
            if block["type"] == "text":
                self.last_text = block["text"]

    def tool_result(self, tool_use_id: str, content: str, *, is_error: bool, structured: Any) -> None:
        """The harness's answer to one tool call, in a user message."""
        block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        message = {"role": "user", "content": [block]}
        entry_uuid = self._entry("user", message, toolUseResult=structured)
        self.emit({"type": "user", "message": message, "parent_tool_use_id": None, "session_id": self.session_id,
                   "uuid": entry_uuid, "tool_use_result": structured})

    def model_call(self, delay: float) -> None:
        """Time spent waiting for the model: ``delay`` seconds, counted in ``duration_api_ms``."""
        started = time.monotonic()
        if delay > 0:
            time.sleep(delay)
        self.api_seconds += time.monotonic() - started


def result_event(recorder: Recorder, meter: Meter, *, subtype: str, is_error: bool, started: float,
                 denials: list[dict[str, Any]], errors: list[str]) -> dict[str, Any]:
    """The final ``result`` event: outcome, timing, turns, cost and tokens of the whole session."""
    event: dict[str, Any] = {
        "type": "result", "subtype": subtype, "is_error": is_error,
        "duration_ms": int((time.monotonic() - started) * 1000), "duration_api_ms": int(recorder.api_seconds * 1000),
        "num_turns": meter.turns}
    if subtype == "success":
        event["result"] = recorder.last_text
    total = meter.total
    event.update({
        "stop_reason": None, "session_id": recorder.session_id, "total_cost_usd": round(meter.cost, 6),
        "usage": total.result_usage(),
        "modelUsage": {meter.model: {
            "inputTokens": total.input, "outputTokens": total.output, "cacheReadInputTokens": total.cache_read,
            "cacheCreationInputTokens": total.cache_creation, "webSearchRequests": 0,
            "costUSD": round(meter.cost, 6), "contextWindow": CONTEXT_WINDOW}} if meter.turns else {},
        "permission_denials": denials, "uuid": str(uuid.uuid4())})
    if subtype != "success":
        event["errors"] = errors
    return event
