"""Claude Code session files: where they live, and how one becomes a :class:`Session`.

A session is ``<projects>/<encoded cwd>/<sessionId>.jsonl``, where ``<projects>`` is each of
``$CLAUDE_CONFIG_DIR/projects`` (the variable may list several directories, comma-separated),
``~/.claude/projects`` and ``~/.config/claude/projects``, and the encoded cwd is the starting directory
with ``/`` and ``.`` turned into ``-`` (an encoding that loses information, so a match is confirmed by the
``cwd`` the file itself records).

Subagents are read in every layout: the current one (``<sessionId>/subagents/agent-<id>.jsonl`` beside an
``agent-<id>.meta.json`` naming the starting call's ``toolUseId``), the older one (``agent-<id>.jsonl``
beside the session file, claimed by its ``sessionId``) and sidechain lines inside the main file. A subagent
whose meta file does not name its call is traced through the ``Task`` result that names its ``agentId``;
one traced by neither is listed in ``capture.untraced_subagents``.

Turns are in reading order: the main file (its inline sidechain lines where they stand), then each
subagent file. ``files_read``, ``files_written`` and ``commands`` include subagents' calls (they work in
the same tree) and count a read or a write only when its call succeeded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from assay.core.session import Capture, CommandRun, Session, SessionRef, Subagent, is_test_command

from .assemble import first_seen
from .base import CaptureAdapter, first_records, json_lines, one_line, parse_time, within
from .claude_code_lines import KNOWN_TYPES, TranscriptReader

SHELL_TOOL = "Bash"
READ_TOOLS = {"Read": "file_path"}
WRITE_TOOLS = {"Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path"}
"""Tool name -> the input field naming the file."""

_AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")


class ClaudeCodeAdapter(CaptureAdapter):
    """Claude Code's session files (``~/.claude/projects``)."""

    name: ClassVar[str] = "claude-code"
    aliases: ClassVar[tuple[str, ...]] = ("claude", "claude_code", "claudecode")
    guarantees: ClassVar[tuple[str, ...]] = (
        "tool calls paired by id (results may come first); unmatched calls and orphan results listed",
        "tokens summed once per response (streamed lines de-duplicated on message id + request id)",
        "subagents read in the current, older and inline layouts; untraceable ones listed",
        "session tokens are the main session's; each subagent carries its own",
        "resumed_from is the snake-case session_id, never merged with sessionId",
        "Bash exit status: the leading 'Exit code N' of an error; 0 for a success, unless it was interrupted or "
        "its status was read as no error (returnCodeInterpretation): then the number it names, else None",
        "model: the main session's most used; models: every model in order of first use, subagents' included",
        "cost: not in transcripts (None)",
    )

    def discover(self, repo: Path, environ: Mapping[str, str]) -> list[SessionRef]:
        """Sessions under every projects directory whose recorded starting cwd is ``repo`` or inside it."""
        prefix = _loose(str(repo).rstrip("/"))
        found: list[SessionRef] = []
        for root in projects_dirs(environ):
            if not root.is_dir():
                continue
            for project in sorted(p for p in root.iterdir() if p.is_dir()):
                name = _loose(project.name)
                if name != prefix and not name.startswith(prefix + "-"):
                    continue
                for path in sorted(project.glob("*.jsonl")):
                    ref = None if _AGENT_FILE.match(path.name) else _ref(path, self.name)
                    if ref is not None and within(ref.cwd, repo):
                        found.append(ref)
        return found

    def sniff(self, path: Path) -> bool:
        """Claude Code lines carry no ``payload`` and have a ``sessionId`` or one of its record types."""
        records = first_records(path)
        return bool(records) and all("payload" not in r for r in records) and any(
            "sessionId" in r or r.get("type") in KNOWN_TYPES for r in records)

    def read(self, path: Path) -> Session:
        """The session in ``path`` with every subagent file that belongs to it."""
        path = Path(path)
        reader = TranscriptReader()
        reader.read_file(path)
        session_id = _session_id(path, reader.envelope.session_ids)
        metas: dict[str, str | None] = {}
        for agent_id, agent_path, meta_call in _subagent_files(path, session_id):
            metas[agent_id] = meta_call
            if agent_id not in reader.agents_seen:
                reader.agents_seen.append(agent_id)
            reader.read_file(agent_path, agent_id)
        reader.settle_exit_codes(SHELL_TOOL)
        return _session(self.name, session_id, reader, metas)


def projects_dirs(environ: Mapping[str, str]) -> list[Path]:
    """Where Claude Code keeps projects: each ``$CLAUDE_CONFIG_DIR``'s, then the home directory's two."""
    roots = [Path(d.strip()) / "projects" for d in environ.get("CLAUDE_CONFIG_DIR", "").split(",") if d.strip()]
    home = environ.get("HOME")
    if home:
        roots += [Path(home) / ".claude" / "projects", Path(home) / ".config" / "claude" / "projects"]
    return list(dict.fromkeys(roots))


def encode_cwd(cwd: str) -> str:
    """The project directory name Claude Code gives a starting directory."""
    return re.sub(r"[/.]", "-", cwd)


def _loose(name: str) -> str:
    """A directory name with every character other than letters, digits and ``-`` as ``-`` (matches both the
    documented encoding and harness versions that replace more characters)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", name)


def _ref(path: Path, harness: str) -> SessionRef | None:
    """A session file's summary; None when it names no starting directory (a file of summaries only)."""
    session_ids: list[str] = []
    cwd = first_prompt = None
    started = ended = None
    for _, record in json_lines(path):
        if record is None or record.get("isSidechain") is True:
            continue
        if isinstance(record.get("sessionId"), str):
            session_ids.append(record["sessionId"])
        if cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
            cwd = record["cwd"]
        at = parse_time(record.get("timestamp"))
        if at is not None:
            started = at if started is None or at < started else started
            ended = at if ended is None or at > ended else ended
        if first_prompt is None and record.get("type") == "user" and not record.get("isMeta"):
            first_prompt = one_line(_prompt_text(record.get("message")))
    if cwd is None:
        return None
    return SessionRef(session_id=_session_id(path, session_ids), harness=harness, path=str(path), cwd=cwd,
                      started_at=started, ended_at=ended, first_prompt=first_prompt)


def _prompt_text(message: Any) -> str | None:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]
        return "\n".join(texts) or None
    return None


def _session_id(path: Path, session_ids: list[str]) -> str:
    """The session's id: the file's name when its lines agree, else the id its lines use most."""
    if not session_ids or path.stem in session_ids:
        return path.stem
    return max(dict.fromkeys(session_ids), key=session_ids.count)


def _subagent_files(path: Path, session_id: str) -> list[tuple[str, Path, str | None]]:
    """(agent id, file, the call its meta file names) for each subagent file of a session, current layout
    first, then older files beside the session that carry its id."""
    found: list[tuple[str, Path, str | None]] = []
    folder = path.parent / path.stem / "subagents"
    if folder.is_dir():
        for agent_path in sorted(folder.rglob("agent-*.jsonl")):
            agent_id = _agent_id(agent_path)
            found.append((agent_id, agent_path, _meta_call(agent_path.with_name(f"agent-{agent_id}.meta.json"))))
    for agent_path in sorted(path.parent.glob("agent-*.jsonl")):
        records = first_records(agent_path, 5)
        if any(r.get("sessionId") == session_id for r in records):
            found.append((_agent_id(agent_path), agent_path, None))
    return found


def _agent_id(agent_path: Path) -> str:
    """The agent id in a subagent file's name (``agent-<id>.jsonl``)."""
    return agent_path.name[len("agent-"):-len(".jsonl")]


def _meta_call(meta: Path) -> str | None:
    """The ``toolUseId`` a subagent's meta file names, if it exists and names one."""
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    call = data.get("toolUseId") if isinstance(data, dict) else None
    return call if isinstance(call, str) and call else None


def _session(harness: str, session_id: str, reader: TranscriptReader, metas: dict[str, str | None]) -> Session:
    draft, env = reader.draft, reader.envelope
    calls = draft.tool_calls()
    subagents = []
    for agent_id in reader.agents_seen:
        parent = metas.get(agent_id) or reader.agents_named_by_results.get(agent_id)
        parent_call = draft.calls.get(parent) if parent else None
        subagents.append(Subagent(
            agent_id=agent_id, parent_call_id=parent,
            turns=sum(1 for t in draft.turns if t.agent_id == agent_id),
            tool_calls=sum(1 for c in calls if c.agent_id == agent_id), tokens=reader.tokens(agent_id),
            nested_in=parent_call.agent_id if parent_call else None))
    ok = [c for c in calls if c.status == "ok"]
    commands = tuple(
        CommandRun(call_id=c.call_id, command=str(c.input.get("command", "")), exit_code=c.exit_code,
                   is_test=is_test_command(str(c.input.get("command", ""))), cwd=draft.calls[c.call_id].cwd)
        for c in calls if c.name == SHELL_TOOL)
    return Session(
        session_id=session_id, harness=harness, harness_version=env.version, model=draft.model(),
        models=draft.models(), cwd=env.cwd, cwd_changes=tuple(env.cwd_changes), git_branch=env.git_branch,
        started_at=env.started_at, ended_at=env.ended_at, turns=draft.session_turns(), tool_calls=calls,
        files_read=first_seen([str(c.input.get(READ_TOOLS[c.name], "")) for c in ok if c.name in READ_TOOLS]),
        files_written=first_seen([str(c.input.get(WRITE_TOOLS[c.name], "")) for c in ok if c.name in WRITE_TOOLS]),
        commands=commands, tokens=reader.tokens(None), cost_usd=None, subagents=tuple(subagents),
        resumed_from=env.resumed_from if env.resumed_from != session_id else None,
        capture=Capture(
            files=tuple(reader.files), lines=draft.lines, unknown_types=dict(sorted(draft.unknown_types.items())),
            bad_lines=tuple(draft.bad_lines), duplicate_lines=reader.duplicate_lines,
            unmatched_calls=draft.unmatched_calls(), orphan_results=draft.orphan_results(),
            untraced_subagents=tuple(s.agent_id for s in subagents if s.parent_call_id is None)))
