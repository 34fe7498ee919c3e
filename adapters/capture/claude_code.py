"""Claude Code session files: where they live, and how one becomes a :class:`Session`.

A session is ``<projects>/<encoded cwd>/<sessionId>.jsonl``, where ``<projects>`` is each of
``$CLAUDE_CONFIG_DIR/projects`` (the variable may list several directories, comma-separated),
``~/.claude/projects`` and ``~/.config/claude/projects``, and the encoded cwd is the starting directory
with every character but letters, digits and ``-`` turned into ``-`` (``C:\\Users\\dev\\app`` becomes
``C--Users-dev-app``; older versions replaced only ``/`` and ``.``). The encoding loses information, so a
match is confirmed by the ``cwd`` the file itself records.

Subagents are read in every layout: the current one (``<sessionId>/subagents/agent-<id>.jsonl`` beside an
``agent-<id>.meta.json`` naming the starting call's ``toolUseId``), the older one (``agent-<id>.jsonl``
beside the session file, claimed by its ``sessionId``) and sidechain lines inside the main file. A subagent
whose meta file does not name its call is traced through the ``Task`` result that names its ``agentId``, else
through the ``agent_progress`` records the main file holds while it works (which also trace a subagent whose
call was rejected); one traced by none is listed in ``capture.untraced_subagents``. A subagent's file given
alone reads as that subagent's work, its version and cwd from its own lines.

The harness's own forks of the conversation — a side question (``agent-aside_question-*``, ``/btw``), a
compaction (``agent-acompact-*``), speculation, session memory and the like — replay the main conversation
for the harness's ends: they are not subagents and not read; their ids are listed in ``capture.side_forks``.

Turns are in reading order: the main file (its inline sidechain lines where they stand), then each
subagent file. Text the harness inserts on the person's side (slash commands and their output, IDE context,
reminders, interruptions, caveats, compact summaries) is a ``system`` turn, never the person's ask; a prompt
the person typed while the agent worked, which the harness keeps only as a ``queued_command`` attachment, is
their turn where it was absorbed.
``files_read``, ``files_written`` and ``commands`` include subagents' calls (they work in the same tree) and
count a read or a write only when its call succeeded; a write is a write tool's own ``file_path`` or
``notebook_path`` (each call's ``writes``), never a path a call merely mentions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from assay.core.session import Capture, CommandRun, Session, SessionRef, Subagent, is_test_command

from .assemble import files_written, first_seen, with_writes
from .base import CaptureAdapter, first_records, is_windows_path, json_lines, one_line, parse_time, within
from .claude_code_inserted import is_meta, split_inserted
from .claude_code_lines import KNOWN_TYPES, TranscriptReader, blocks, is_side_fork

SHELL_TOOL = "Bash"
READ_TOOLS = {"Read": "file_path"}
WRITE_TOOLS = {"Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path"}
"""Tool name -> the input field naming the file."""

_AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")
PROJECT_NAME_LIMIT = 200
"""Claude Code cuts a longer project directory name to this many characters and adds a hash of the cwd."""


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
        "text the harness inserts (slash commands, IDE context, reminders, interruptions, compact summaries) is a "
        "system turn, never the person's ask; ANSI escapes removed; a prompt typed mid-turn (a queued_command "
        "attachment) is the person's turn",
        "side-question and compaction forks are not subagents: listed in capture.side_forks, their lines unread",
        "files_written and each call's writes: only Edit, MultiEdit, Write and NotebookEdit paths of calls that "
        "succeeded",
        "a subagent file read alone: version, cwd and branch from its own lines, its parent call from its meta file",
    )

    def discover(self, repo: Path, environ: Mapping[str, str]) -> list[SessionRef]:
        """Sessions under every projects directory whose recorded starting cwd is ``repo`` or inside it."""
        fold = str.lower if is_windows_path(str(repo)) else str  # Windows paths compare without case
        prefix = fold(encode_cwd(str(repo).rstrip("/\\")))
        found: list[SessionRef] = []
        for root in projects_dirs(environ):
            if not root.is_dir():
                continue
            for project in sorted(p for p in root.iterdir() if p.is_dir()):
                name = fold(encode_cwd(project.name))  # also matches versions that replaced fewer characters
                if not _may_hold(name, prefix):
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
        """The session in ``path`` with every subagent file that belongs to it; a subagent's own file
        (``agent-<id>.jsonl``) given alone reads as that subagent's work, traced by its meta file."""
        path = Path(path)
        reader = TranscriptReader()
        alone = _AGENT_FILE.match(path.name)
        if alone:
            agent_id = alone.group(1)
            reader.read_file(path, agent_id)
            metas = {agent_id: _meta_call(path.with_name(f"agent-{agent_id}.meta.json"))}
            session_id = path.stem
        else:
            reader.read_file(path)
            session_id = _session_id(path, reader.envelope.session_ids)
            metas = {}
            for agent_id, agent_path, meta_call in _subagent_files(path, session_id):
                if is_side_fork(agent_id):
                    reader.set_aside(agent_id)
                    continue
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
    """The project directory name Claude Code gives a starting directory: every character but letters, digits
    and ``-`` as ``-`` (``/home/dev/acme.app`` -> ``-home-dev-acme-app``, ``C:\\Users\\dev`` -> ``C--Users-dev``).
    A name longer than :data:`PROJECT_NAME_LIMIT` is cut there and given ``-`` and a hash of the cwd: the
    hash its Node build computes here (a build on another runtime hashes otherwise; discovery does not rely on
    it)."""
    name = re.sub(r"[^A-Za-z0-9-]", "-", cwd)
    if len(name) <= PROJECT_NAME_LIMIT:
        return name
    return f"{name[:PROJECT_NAME_LIMIT]}-{_base36(abs(_string_hash(cwd)))}"


def _string_hash(text: str) -> int:
    """JavaScript's ``h = (h << 5) - h + charCode | 0`` over the UTF-16 code units of ``text``."""
    value = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[i:i + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def _may_hold(name: str, prefix: str) -> bool:
    """Whether project directory ``name`` may hold sessions of the directory encoded as ``prefix`` or one inside
    it (a cut name is compared on what it kept; the cwd the file records decides)."""
    if name == prefix or name.startswith(prefix + "-"):
        return True
    kept = name[:PROJECT_NAME_LIMIT]
    return len(name) > PROJECT_NAME_LIMIT and (kept.startswith(prefix) or prefix.startswith(kept))


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
        if first_prompt is None and record.get("type") == "user" and not is_meta(record):
            first_prompt = one_line(_prompt_text(record.get("message")))
    if cwd is None:
        return None
    return SessionRef(session_id=_session_id(path, session_ids), harness=harness, path=str(path), cwd=cwd,
                      started_at=started, ended_at=ended, first_prompt=first_prompt)


def _prompt_text(message: Any) -> str | None:
    """What the person wrote in a message, without the text the harness inserted."""
    content = message.get("content") if isinstance(message, dict) else None
    texts = [split_inserted(b["text"])[0] for b in blocks(content) if b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    return "\n".join(t for t in texts if t) or None


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
    draft, env = reader.draft, reader.session_envelope()
    calls = with_writes(draft.tool_calls(), WRITE_TOOLS)
    subagents = []
    for agent_id in reader.agents_seen:
        progress = reader.agents_named_by_progress.get(agent_id)  # a forked slash command's names no call
        parent = (metas.get(agent_id) or reader.agents_named_by_results.get(agent_id)
                  or (progress if progress in draft.calls else None))
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
        session_id=session_id, harness=harness, harness_version=env.version,
        model=draft.model() or next(iter(draft.models()), None), models=draft.models(), cwd=env.cwd,
        cwd_changes=tuple(env.cwd_changes), git_branch=env.git_branch, started_at=env.started_at,
        ended_at=env.ended_at, turns=draft.session_turns(), tool_calls=calls,
        files_read=first_seen([str(c.input.get(READ_TOOLS[c.name], "")) for c in ok if c.name in READ_TOOLS]),
        files_written=files_written(calls), commands=commands, tokens=reader.tokens(None), cost_usd=None,
        subagents=tuple(subagents), resumed_from=env.resumed_from if env.resumed_from != session_id else None,
        capture=Capture(
            files=tuple(reader.files), lines=draft.lines, unknown_types=dict(sorted(draft.unknown_types.items())),
            bad_lines=tuple(draft.bad_lines), duplicate_lines=reader.duplicate_lines,
            unmatched_calls=draft.unmatched_calls(), orphan_results=draft.orphan_results(),
            untraced_subagents=tuple(s.agent_id for s in subagents if s.parent_call_id is None),
            side_forks=tuple(reader.side_forks)))
