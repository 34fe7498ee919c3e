"""What a Codex CLI tool call did, read off its name, its arguments and the text it returned.

Codex has run commands and written files through several tools over its versions:

- a command: ``shell`` (an argument list, ``["bash", "-lc", SCRIPT]`` on Unix, ``["powershell.exe", "-Command",
  SCRIPT]`` on Windows), ``container.exec``, ``local_shell_call`` (an ``action``), ``shell_command`` (a string),
  and unified exec: ``exec_command`` (``cmd``, ``workdir``, ``yield_time_ms``…) whose process may outlive the
  call and is then polled or fed through ``write_stdin`` (``session_id``, ``chars``);
- a patch: the ``apply_patch`` tool (its freeform ``input``, or a JSON ``input`` argument), or a command that is
  really a patch — ``["apply_patch", PATCH]`` or a script ``apply_patch <<'EOF' … EOF`` (optionally after
  ``cd DIR &&``), which Codex intercepts and applies itself. A patch is a write, never a command.

A command's exit status is written differently by each generation: JSON ``{"output", "metadata":
{"exit_code"}}``, an ``Exit code: N`` line, or unified exec's ``Process exited with code N`` (``Process
running with session ID N`` while it still runs) — those lines in the header above ``Output:``, never in what
the command printed.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

SHELL_TOOLS = frozenset({"shell", "shell_command", "container.exec", "local_shell", "exec_command"})
"""Tools whose call runs one command."""
STDIN_TOOL = "write_stdin"
"""Unified exec's tool that writes to (or just polls) a process an ``exec_command`` left running."""
PATCH_TOOLS = frozenset({"apply_patch", "applypatch"})

_PATCH_PATH = re.compile(r"^\*\*\* (?:Update File|Add File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)
_HEREDOC = re.compile(r"\A\s*(?:cd\s+(?P<cd>'[^']*'|\"[^\"]*\"|[^\s'\"&;|]+)\s*&&\s*)?apply_?patch\s*"
                      r"<<-?\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[ \t]*\n(?P<body>.*?)\n[ \t]*(?P=tag)\s*\Z", re.DOTALL)
_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)\s*$", re.MULTILINE)
_PATCH_REFUSED = re.compile(r"\A\s*(?:apply_patch verification failed|Failed to apply patch|Invalid patch)")
_WRAPPED = "\nOutput:\n"
"""Where unified exec's text output begins; a patch it intercepted reports there as JSON ``{"output", "metadata"}``."""
_RUNNING = re.compile(r"^Process running with session ID (\d+)\s*$", re.MULTILINE)
_SHELLS = {"bash": ("-lc", "-c"), "sh": ("-lc", "-c"), "zsh": ("-lc", "-c"), "cmd": ("/c", "/C"),
           "powershell": ("-Command", "-command", "-c"), "pwsh": ("-Command", "-command", "-c")}


@dataclass(frozen=True)
class CallOutput:
    """A call's output as the model saw it, and what it says about the command."""

    text: str
    exit_code: int | None = None
    failed: bool = False
    """The harness marked the output a failure (``success: false``)."""
    running: str | None = None
    """Unified exec: the process still runs under this session id."""


@dataclass(frozen=True)
class Patch:
    """A patch a call applies."""

    text: str

    def paths(self) -> list[str]:
        """The files it adds, updates, deletes or moves to, as the patch names them (relative to the directory
        it was applied in: a ``cd DIR && apply_patch`` script's are relative to ``DIR``)."""
        return _PATCH_PATH.findall(self.text)


def call_output(raw: Any) -> CallOutput:
    """A ``*_call_output``'s ``output``: a string (plain, or JSON ``{"output", "metadata"}``, alone or after
    unified exec's ``Output:`` line), a list of content items, or an object ``{"content", "success"}``."""
    failed = False
    if isinstance(raw, dict):
        failed = raw.get("success") is False
        raw = raw.get("content", "")
    if isinstance(raw, list):
        raw = "\n".join(str(p.get("text")) for p in raw if isinstance(p, dict) and isinstance(p.get("text"), str))
    text = raw if isinstance(raw, str) else json.dumps(raw)
    parsed = _json(text)
    header, wrapped, body = text.partition(_WRAPPED)
    found, running = _EXIT_CODE.search(header), _RUNNING.search(header)
    if not isinstance(parsed, dict) and wrapped and not found and not running:
        parsed = _json(body)
    if isinstance(parsed, dict) and "output" in parsed:
        metadata = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
        code = metadata.get("exit_code")
        return CallOutput(str(parsed["output"]), code if isinstance(code, int) else None, failed)
    return CallOutput(text, int(found.group(1)) if found else None, failed,
                      running.group(1) if running and not found else None)


def patch_refused(text: str) -> bool:
    """Whether an ``apply_patch`` output says the patch was not applied (a freeform tool's output carries no exit
    code: Codex answers a patch it cannot verify with this text)."""
    return bool(_PATCH_REFUSED.match(text))


def patch_of(name: str, arguments: dict[str, Any]) -> Patch | None:
    """The patch a call applies, whichever form it takes; None for any other call."""
    if name in PATCH_TOOLS:
        text = arguments.get("input", arguments.get("patch"))
        return Patch(text) if isinstance(text, str) else None
    if name not in SHELL_TOOLS:
        return None
    command = _raw_command(arguments)
    if isinstance(command, list) and len(command) == 2 and command[0] in PATCH_TOOLS and isinstance(command[1], str):
        return Patch(command[1])
    script = _script(command)
    found = _HEREDOC.match(script) if script is not None else None
    if found is None:
        return None
    return Patch(found.group("body"))


def shell_command(name: str, arguments: dict[str, Any]) -> tuple[str, str | None] | None:
    """(command as one line of shell, its working directory) for a call that runs a command; None for any other
    call, and for a patch sent through the shell."""
    if name not in SHELL_TOOLS or patch_of(name, arguments) is not None:
        return None
    action = arguments.get("action") if isinstance(arguments.get("action"), dict) else {}
    workdir = arguments.get("workdir") or action.get("working_directory")
    return command_text(_raw_command(arguments)), workdir if isinstance(workdir, str) else None


def stdin_session(name: str, arguments: dict[str, Any]) -> str | None:
    """The unified exec session a ``write_stdin`` call writes to."""
    session = arguments.get("session_id") if name == STDIN_TOOL else None
    return str(session) if isinstance(session, int | str) and not isinstance(session, bool) else None


def command_text(command: Any) -> str:
    """A command as one line: a shell's ``-lc SCRIPT`` (or ``-Command``, ``/c``) is its script; other argument
    lists are shell-quoted."""
    script = _script(command)
    if script is not None:
        return script
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        return shlex.join(command)
    return json.dumps(command)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _raw_command(arguments: dict[str, Any]) -> Any:
    action = arguments.get("action") if isinstance(arguments.get("action"), dict) else {}
    return arguments.get("cmd", arguments.get("command", action.get("command")))


def _script(command: Any) -> str | None:
    """The script a command runs: the string itself, or a shell's script argument (its last argument, after
    options such as ``-NoProfile``)."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or len(command) < 3 or not all(isinstance(a, str) for a in command):
        return None
    shell = _program(command[0])
    flags = _SHELLS.get(shell, ())
    return command[-1] if any(a in flags for a in command[1:-1]) else None


def _program(path: str) -> str:
    name = PureWindowsPath(path).name if "\\" in path else PurePosixPath(path).name
    return name.lower().removesuffix(".exe")
