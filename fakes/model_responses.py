"""OpenAI's Responses API, as the scripted model answers it: what the Codex CLI calls.

``POST /v1/responses`` takes ``{model, input, instructions?, tools?, stream?}`` and answers a response
``{id, object: "response", created_at, status, model, output: [items], usage}``. With ``stream: true`` it
comes as server-sent events, each with a ``sequence_number``: ``response.created``, for each output item
``response.output_item.added``, its deltas (``response.output_text.delta`` for a message,
``response.function_call_arguments.delta`` for a function call, ``response.custom_tool_call_input.delta``
for a freeform tool call) and ``response.output_item.done``, then ``response.completed`` carrying the usage
(``input_tokens``, ``input_tokens_details.cached_tokens``, ``output_tokens``,
``output_tokens_details.reasoning_tokens``, ``total_tokens``). Errors are ``{"error": {"message", "type",
"code"}}``. This follows the API reference's "Responses" and "Streaming events" pages and what Codex 0.118
reads (``codex-rs/codex-api/src/sse/responses.rs``).

The calls use the tools the request offers, by their declared shapes: a command goes to ``exec_command
{cmd}`` (or ``shell_command {command}``, or ``shell {command: [argv]}`` for older clients), a file is read with
``cat`` through it, and edits and writes are ``apply_patch`` patches (``*** Begin Patch`` ... ``*** End
Patch``), sent as a freeform call's input or a function call's ``input`` argument, as the tool is declared,
or, when Codex offers no ``apply_patch`` tool (it offers one only to models it knows), as an ``apply_patch``
command with the patch on a heredoc, which Codex applies itself. An edit's patch is cut from the file as it is
on disk, which the agent has read.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .harness_events import tokens_of
from .harness_tools import UsageError
from .model_script import Script, Turn, edit_hunk

SHELL_TOOLS = ("exec_command", "shell_command", "shell")
"""The command tools Codex declares, the one it prefers first."""
RESULT_ITEMS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_CWD = re.compile(r"<cwd>([^<]+)</cwd>")


class RequestError(ValueError):
    """A request the real API would refuse (400), with the reason."""


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def validate(body: Any) -> dict[str, Any]:
    """The request, checked against the documented fields; RequestError naming the bad one."""
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise RequestError("Missing required parameter: 'model'.")
    if not isinstance(body.get("input"), str | list):
        raise RequestError("Invalid type for 'input': expected a string or an array of input items.")
    if not isinstance(body.get("tools", []), list):
        raise RequestError("Invalid type for 'tools': expected an array.")
    return body


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = body["input"]
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def tool_results(body: dict[str, Any]) -> int:
    """How many tool outputs the conversation already carries (how far the agent got)."""
    return sum(1 for item in _items(body) if item.get("type") in RESULT_ITEMS)


def working_directory(body: dict[str, Any]) -> str | None:
    """The agent's working directory, as Codex's environment context states it."""
    for item in _items(body):
        for part in item.get("content") or []:
            found = _CWD.search(part.get("text", "")) if isinstance(part, dict) else None
            if found:
                return found.group(1).strip()
    return None


def _offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in body.get("tools", []) if isinstance(tool, dict) and "name" in tool}


def _shell_call(offered: dict[str, dict[str, Any]], command: str) -> dict[str, Any]:
    name = next((n for n in SHELL_TOOLS if n in offered), SHELL_TOOLS[0])
    arguments: dict[str, Any] = {"cmd": command} if name == "exec_command" else (
        {"command": command} if name == "shell_command" else {"command": ["bash", "-c", command]})
    if "login" in offered.get(name, {}).get("parameters", {}).get("properties", {}):
        arguments["login"] = False  # a login shell's profile would reset PATH: run where the harness runs
    return {"type": "function_call", "id": _id("fc"), "call_id": _id("call"), "name": name,
            "arguments": json.dumps(arguments), "status": "completed"}


def patch(turn: Turn, cwd: Path) -> str:
    """The ``apply_patch`` text for an edit or write turn (paths relative to the working directory)."""
    argument = turn.argument
    path, target = argument["path"], cwd / argument["path"]
    if turn.action == "write":
        added = [f"+{line}" for line in argument["content"].removesuffix("\n").split("\n")]
        if not target.exists():
            return "\n".join(["*** Begin Patch", f"*** Add File: {path}", *added, "*** End Patch"]) + "\n"
        removed = [f"-{line}" for line in target.read_text(encoding="utf-8").removesuffix("\n").split("\n")]
    else:
        try:
            text = target.read_text(encoding="utf-8")
        except OSError as missing:
            raise UsageError(f"the script edits {path}, which cannot be read under {cwd}: {missing}") from missing
        before, after = edit_hunk(text, argument["old"], argument["new"], bool(argument.get("replace_all")))
        removed, added = [f"-{line}" for line in before], [f"+{line}" for line in after]
    return "\n".join(["*** Begin Patch", f"*** Update File: {path}", "@@", *removed, *added, "*** End Patch"]) + "\n"


def _patch_call(offered: dict[str, dict[str, Any]], text: str) -> dict[str, Any]:
    if "apply_patch" not in offered and any(name in offered for name in SHELL_TOOLS):
        return _shell_call(offered, f"apply_patch <<'PATCH'\n{text}PATCH")  # the harness applies it itself
    if offered.get("apply_patch", {}).get("type") == "function":
        return {"type": "function_call", "id": _id("fc"), "call_id": _id("call"), "name": "apply_patch",
                "arguments": json.dumps({"input": text}), "status": "completed"}
    return {"type": "custom_tool_call", "id": _id("ctc"), "call_id": _id("call"), "name": "apply_patch",
            "input": text, "status": "completed"}


def tool_call(turn: Turn, body: dict[str, Any], cwd: str) -> dict[str, Any]:
    """The output item calling the tool that does the turn's action."""
    offered = _offered(body)
    if turn.action == "run":
        return _shell_call(offered, turn.argument)
    if turn.action == "read":
        return _shell_call(offered, f"cat {shlex.quote(turn.argument)}")
    return _patch_call(offered, patch(turn, Path(cwd)))


def respond(body: dict[str, Any], script: Script) -> dict[str, Any]:
    """The next response of the script for this conversation."""
    cwd = working_directory(body)
    turn = script.next_turn(cwd, tool_results(body))
    output: list[dict[str, Any]] = []
    if turn.text:
        output.append({"type": "message", "id": _id("msg"), "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    if turn.action:
        output.append(tool_call(turn, body, cwd or "."))
    prompt, written = tokens_of(json.dumps(body["input"])), tokens_of(json.dumps(output))
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": written,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + written}
    return {"id": _id("resp"), "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body["model"], "output": output, "usage": usage}


def stream(response: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``response`` as the streaming API sends it: (event name, data) pairs, numbered in sequence."""
    number = 0

    def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
        nonlocal number
        number += 1
        return kind, {"type": kind, "sequence_number": number - 1, **data}

    yield event("response.created", response={**response, "status": "in_progress", "output": [], "usage": None})
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "content": [],
                                                                                "status": "in_progress"})
            text = item["content"][0]["text"]
            yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []})
            yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                        delta=text)
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=text)
            yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0,
                        part=item["content"][0])
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": "",
                                                                                "status": "in_progress"})
            yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                        delta=item["arguments"])
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        arguments=item["arguments"])
        else:
            yield event("response.output_item.added", output_index=index, item={**item, "input": "",
                                                                                "status": "in_progress"})
            yield event("response.custom_tool_call_input.delta", item_id=item["id"], output_index=index,
                        delta=item["input"])
            yield event("response.custom_tool_call_input.done", item_id=item["id"], output_index=index,
                        input=item["input"])
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)


def error(kind: str, message: str, code: str | None = None) -> dict[str, Any]:
    """The API's error body (``kind``: ``invalid_request_error``, ...)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


__all__ = ["RequestError", "SHELL_TOOLS", "error", "patch", "respond", "stream", "tool_results", "validate",
           "working_directory"]
