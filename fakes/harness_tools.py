"""The fake harness's tools (Read, Edit, Write, Bash), done for real in the working directory, and its permission rules.

Each tool returns a :class:`ToolOutcome`: the text the model sees (the ``tool_result`` content), whether it
is an error, and the structured result the transcript keeps as ``toolUseResult``. Texts follow the real
harness: Read numbers lines ``     1→…``; Edit refuses a file not read first, a string not found or found
more than once; a failing command's result starts ``Exit code N``; an unknown tool is "No such tool
available".

:class:`Permissions` decides whether a call may run, the way ``--permission-mode``, ``--allowedTools``,
``--disallowedTools`` and ``--settings`` rules do: deny rules win; ``bypassPermissions`` allows everything;
Read needs no permission; ``acceptEdits`` allows Edit and Write inside the working directories; ``plan``
allows nothing that changes the workspace; anything else needs an allow rule (``Bash``,
``Bash(python -m pytest:*)`` for a command prefix, ``Edit(src/**)`` for paths). :func:`mcp_servers` lists
the MCP servers a session is configured with (the fake starts none, so they add no tools).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASH_TIMEOUT_SECONDS = 120
WRITING_TOOLS = ("Edit", "Write")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")


class UsageError(ValueError):
    """A bad command line, playbook or mode: the CLI prints it and exits 1."""


def json_or_file(value: str) -> dict[str, Any]:
    """A JSON object given inline (``{...}``) or as a file path, as ``--settings`` and ``--mcp-config`` take it."""
    try:
        text = value if value.lstrip().startswith("{") else Path(value).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, json.JSONDecodeError) as bad:
        raise UsageError(f"Invalid JSON or unreadable file {value[:60]!r}: {bad}") from bad
    return data if isinstance(data, dict) else {}


def mcp_servers(configs: list[str], strict: bool, cwd: Path) -> list[dict[str, str]]:
    """The MCP servers configured for the session: ``--mcp-config``, and the project's ``.mcp.json`` unless strict.

    The fake starts none of them, so each is reported ``failed`` and adds no tools.
    """
    sources = [json_or_file(value) for value in configs]
    if not strict and (cwd / ".mcp.json").is_file():
        sources.append(json_or_file(str(cwd / ".mcp.json")))
    names = sorted({name for source in sources for name in source.get("mcpServers", {})})
    return [{"name": name, "status": "failed"} for name in names]


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced."""

    content: str
    """The tool_result text the model reads."""
    is_error: bool
    structured: Any
    """The transcript's ``toolUseResult``: a dict on success, ``"Error: …"`` on failure."""


def failure(message: str, *, wrap: bool = True) -> ToolOutcome:
    """A refused or failed call; ``wrap`` marks it as the harness's own error (``<tool_use_error>``)."""
    content = f"<tool_use_error>{message}</tool_use_error>" if wrap else message
    return ToolOutcome(content, True, f"Error: {message}")


def no_such_tool(name: str) -> ToolOutcome:
    """The answer to a call of a tool the session does not have."""
    return failure(f"Error: No such tool available: {name}")


def _numbered(text: str, first: int = 1) -> str:
    return "\n".join(f"{number:>6}→{line}" for number, line in enumerate(text.splitlines(), start=first))


def _patch(before: str, after: str) -> list[dict[str, Any]]:
    """The change as hunks (``oldStart``, ``oldLines``, ``newStart``, ``newLines``, ``lines``)."""
    old, new = before.splitlines(), after.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(a=old, b=new).get_grouped_opcodes(4):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in old[i1:i2]]
                continue
            lines += ["-" + line for line in old[i1:i2]] + ["+" + line for line in new[j1:j2]]
        first, last = group[0], group[-1]
        hunks.append({"oldStart": first[1] + 1, "oldLines": last[2] - first[1], "newStart": first[3] + 1,
                      "newLines": last[4] - first[3], "lines": lines})
    return hunks


def _updated(path: Path, after: str, hunks: list[dict[str, Any]]) -> str:
    start = hunks[0]["newStart"] if hunks else 1
    snippet = "\n".join(after.splitlines()[start - 1:start - 1 + (hunks[0]["newLines"] if hunks else 8)])
    return (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the "
            f"edited file:\n{_numbered(snippet, start)}")


@dataclass
class Workspace:
    """The working directory the tools act in, and the files the session has read."""

    cwd: Path
    read_paths: set[Path] = field(default_factory=set)

    def path(self, relative: str) -> Path:
        """The absolute path for a playbook path (relative to the working directory, or absolute)."""
        return (self.cwd / relative).resolve()

    def read(self, path: Path) -> ToolOutcome:
        """Read a file, numbering its lines."""
        if not path.is_file():
            return failure(f"File does not exist. Current working directory: {self.cwd}")
        text = path.read_text(encoding="utf-8")
        self.read_paths.add(path)
        lines = len(text.splitlines())
        return ToolOutcome(_numbered(text), False, {"type": "text", "file": {
            "filePath": str(path), "content": text, "numLines": lines, "startLine": 1, "totalLines": lines}})

    def edit(self, path: Path, old: str, new: str, replace_all: bool) -> ToolOutcome:
        """Replace ``old`` with ``new`` in a file the session has read."""
        if not path.is_file():
            return failure(f"File does not exist. Current working directory: {self.cwd}")
        if path not in self.read_paths:
            return failure("File has not been read yet. Read it first before writing to it.")
        before = path.read_text(encoding="utf-8")
        found = before.count(old) if old else 0
        if not found:
            return failure(f"String to replace not found in file.\nString: {old}")
        if found > 1 and not replace_all:
            return failure(f"Found {found} matches of the string to replace, but replace_all is false. To replace "
                           "all occurrences, set replace_all to true. To replace only one occurrence, please provide "
                           f"more context to uniquely identify the instance.\nString: {old}")
        after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
        path.write_text(after, encoding="utf-8")
        hunks = _patch(before, after)
        return ToolOutcome(_updated(path, after, hunks), False, {
            "filePath": str(path), "oldString": old, "newString": new, "originalFile": before,
            "structuredPatch": hunks, "userModified": False, "replaceAll": replace_all})

    def write(self, path: Path, content: str) -> ToolOutcome:
        """Create a file, or overwrite one the session has read."""
        existed = path.is_file()
        if existed and path not in self.read_paths:
            return failure("File has not been read yet. Read it first before writing to it.")
        before = path.read_text(encoding="utf-8") if existed else None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        self.read_paths.add(path)
        hunks = _patch(before, content) if before is not None else []
        text = _updated(path, content, hunks) if existed else f"File created successfully at: {path}"
        return ToolOutcome(text, False, {"type": "update" if existed else "create", "filePath": str(path),
                                         "content": content, "structuredPatch": hunks, "originalFile": before})

    def bash(self, command: str) -> ToolOutcome:
        """Run ``command`` with bash in the working directory, with the environment the harness was given."""
        try:
            done = subprocess.run(["bash", "-c", command], cwd=self.cwd, env=os.environ.copy(), capture_output=True,
                                  text=True, timeout=BASH_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as expired:
            output = _text(expired.stdout) + _text(expired.stderr)
            return failure(f"Command timed out after {BASH_TIMEOUT_SECONDS // 60}m 0.0s\n{output}".rstrip(),
                           wrap=False)
        stdout, stderr = done.stdout.rstrip("\n"), done.stderr.rstrip("\n")
        output = "\n".join(part for part in (stdout, stderr) if part)
        if done.returncode:
            return failure(f"Exit code {done.returncode}\n{output}".rstrip("\n"), wrap=False)
        return ToolOutcome(output, False, {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False})


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def split_tool_list(values: list[str] | None) -> list[str]:
    """Tool names or rules from repeated flags, separated by commas or spaces (not inside parentheses)."""
    names: list[str] = []
    for value in values or []:
        current, depth = "", 0
        for char in value:
            depth += (char == "(") - (char == ")")
            if depth == 0 and (char == "," or char.isspace()):
                names.append(current)
                current = ""
            else:
                current += char
        names.append(current)
    return [name.strip() for name in names if name.strip()]


def _rule(text: str) -> tuple[str, str | None]:
    if text.endswith(")") and "(" in text:
        name, _, spec = text[:-1].partition("(")
        return name, spec
    return text, None


@dataclass
class Permissions:
    """Which tool calls may run, from the permission mode and the allow and deny rules."""

    mode: str
    allow: list[str]
    deny: list[str]
    roots: list[Path]
    """The working directory and every ``--add-dir``: where ``acceptEdits`` accepts edits."""

    @classmethod
    def from_flags(cls, options: argparse.Namespace, cwd: Path) -> Permissions:
        """The session's permission mode and rules, from the command line and ``--settings``."""
        settings = json_or_file(options.settings).get("permissions", {}) if options.settings else {}
        mode = options.permission_mode or settings.get("defaultMode") or "default"
        if options.dangerously_skip_permissions:
            mode = "bypassPermissions"
        roots = [cwd, *(Path(extra).resolve() for extra in options.add_dir)]
        return cls(mode=mode, allow=split_tool_list(options.allowed) + list(settings.get("allow", [])),
                   deny=split_tool_list(options.disallowed) + list(settings.get("deny", [])), roots=roots)

    def removed_tools(self) -> set[str]:
        """Tools a bare deny rule (``Bash``, no pattern) takes out of the session entirely."""
        return {name for name, spec in map(_rule, self.deny) if spec is None}

    def _matches(self, rule: str, tool: str, target: str, cwd: Path) -> bool:
        name, spec = _rule(rule)
        if name != tool and not (name == "Edit" and tool in WRITING_TOOLS):
            return False
        if spec is None or spec in ("*", "**"):
            return True
        if tool == "Bash":
            return target.startswith(spec[:-2]) if spec.endswith(":*") else target == spec
        relative = os.path.relpath(target, cwd)
        return fnmatch.fnmatch(relative, spec.lstrip("./")) or fnmatch.fnmatch(target, spec)

    def allows(self, tool: str, target: str, cwd: Path) -> tuple[bool, str]:
        """Whether the call may run, and the refusal text when it may not.

        ``target`` is the command for Bash and the absolute file path for the file tools.
        """
        if any(self._matches(rule, tool, target, cwd) for rule in self.deny):
            return False, f"Permission to use {tool} has been denied."
        asked = f"Claude requested permissions to use {tool}, but you haven't granted it yet."
        if self.mode == "bypassPermissions" or tool == "Read":
            return True, ""
        if self.mode == "plan":
            return False, asked
        if any(self._matches(rule, tool, target, cwd) for rule in self.allow):
            return True, ""
        inside = any(Path(target).is_relative_to(root) for root in self.roots)
        if tool in WRITING_TOOLS and self.mode == "acceptEdits" and inside:
            return True, ""
        return False, asked
