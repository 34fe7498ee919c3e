"""Anthropic's Messages API, as the scripted model answers it: what Claude Code calls.

``POST /v1/messages`` takes ``{model, max_tokens, messages, system?, tools?, stream?}`` and answers a message
``{id, type: "message", role: "assistant", model, content, stop_reason, stop_sequence, usage}``. With
``stream: true`` the same message comes as server-sent events: ``message_start`` (the message, content
empty), for each content block ``content_block_start``, its deltas (``text_delta``; ``input_json_delta``
carrying a tool call's input as partial JSON) and ``content_block_stop``, then ``message_delta`` (the
``stop_reason``, ``tool_use`` or ``end_turn``, and the output usage) and ``message_stop``. Errors are
``{"type": "error", "error": {"type", "message"}}``. This follows the API reference's "Messages" and
"Streaming messages" pages (API version 2023-06-01), and what Claude Code 2.1 sends.

The tool calls are Claude Code's own tools with their documented inputs: ``Read {file_path}``, ``Edit
{file_path, old_string, new_string, replace_all?}``, ``Write {file_path, content}``, ``Bash {command,
description}``; file paths absolute, under the working directory the system prompt names.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .harness_events import tokens_of
from .model_script import Script, Turn

TOOLS = {"read": "Read", "edit": "Edit", "write": "Write", "run": "Bash"}
"""Playbook action -> the Claude Code tool that does it."""
_CWD = re.compile(r"(?:Primary )?[Ww]orking directory: (\S+)")


class RequestError(ValueError):
    """A request the real API would refuse (400), with the reason."""


def _id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def _texts(value: Any) -> Iterator[str]:
    """Every text of a ``system`` or ``content`` value (a string or a list of blocks)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield block["text"]


def validate(body: Any) -> dict[str, Any]:
    """The request, checked against the documented required fields; RequestError naming the bad one."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise RequestError("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        raise RequestError("max_tokens: Field required (an integer of 1 or more)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: at least one message is required")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise RequestError(f"messages.{index}.role: Input should be 'user' or 'assistant'")
    if messages[0]["role"] != "user":
        raise RequestError("messages: the first message must use the 'user' role")
    return body


def tool_results(body: dict[str, Any]) -> int:
    """How many tool results the conversation already carries (how far the agent got)."""
    return sum(1 for message in body["messages"] if message["role"] == "user" and isinstance(message["content"], list)
               for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result")


def working_directory(body: dict[str, Any]) -> str | None:
    """The agent's working directory, as Claude Code's system prompt states it."""
    for text in _texts(body.get("system")):
        found = _CWD.search(text)
        if found:
            return found.group(1)
    return None


def tool_call(turn: Turn, cwd: str) -> dict[str, Any]:
    """The ``tool_use`` block for a turn's action, with the real tool's input fields."""
    argument = turn.argument
    if turn.action == "run":
        tool_input: dict[str, Any] = {"command": argument, "description": f"Run {argument}"[:60]}
    elif turn.action == "read":
        tool_input = {"file_path": str(Path(cwd) / argument)}
    elif turn.action == "write":
        tool_input = {"file_path": str(Path(cwd) / argument["path"]), "content": argument["content"]}
    else:
        tool_input = {"file_path": str(Path(cwd) / argument["path"]), "old_string": argument["old"],
                      "new_string": argument["new"]}
        if argument.get("replace_all"):
            tool_input["replace_all"] = True
    return {"type": "tool_use", "id": _id("toolu_01"), "name": TOOLS[str(turn.action)], "input": tool_input}


def respond(body: dict[str, Any], script: Script) -> dict[str, Any]:
    """The next message of the script for this conversation."""
    cwd = working_directory(body)
    turn = script.next_turn(cwd, tool_results(body))
    content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    if turn.action:
        content.append(tool_call(turn, cwd or "."))
    usage = {"input_tokens": tokens_of(json.dumps(body["messages"])), "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "output_tokens": tokens_of(json.dumps(content))}
    return {"id": _id("msg_01"), "type": "message", "role": "assistant", "model": body["model"], "content": content,
            "stop_reason": "tool_use" if turn.action else "end_turn", "stop_sequence": None, "usage": usage}


def stream(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``message`` as the streaming API sends it: (event name, data) pairs."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(block["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            for piece in _pieces(json.dumps(block["input"])):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def _pieces(text: str, size: int = 40) -> list[str]:
    """``text`` in the small pieces a stream delivers it in."""
    return [text[at:at + size] for at in range(0, len(text), size)] or [""]


def error(kind: str, message: str) -> dict[str, Any]:
    """The API's error body (``kind``: ``invalid_request_error``, ``authentication_error``, ``not_found_error``)."""
    return {"type": "error", "error": {"type": kind, "message": message}}


__all__ = ["RequestError", "TOOLS", "error", "respond", "stream", "tool_results", "validate", "working_directory"]
