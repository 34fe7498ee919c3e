"""Capture adapters: a coding agent's own transcript files read into a harness-neutral Session.

Each adapter (:class:`CaptureAdapter`) knows one harness; :data:`CAPTURE_ADAPTERS` registers them by name.
Everything after capture reads only :class:`~assay.core.session.Session`, so only this package names a
harness.

- :func:`find_sessions` — the sessions on this machine that started in a repository, newest first;
- :func:`find_session` — one of them by id (a unique prefix is enough);
- :func:`read_session` — a transcript file read whole (the harness guessed from the file when not named);
- :func:`capture_adapter` — an adapter class by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from assay.core.errors import AmbiguousError, NotFoundError, UsageError
from assay.core.names import listed
from assay.core.session import Session, SessionRef

from .base import CaptureAdapter
from .claude_code import ClaudeCodeAdapter
from .codex import CodexAdapter

CAPTURE_ADAPTERS: dict[str, type[CaptureAdapter]] = {a.name: a for a in (ClaudeCodeAdapter, CodexAdapter)}
"""Every capture adapter, by the harness name it declares."""

__all__ = ["CAPTURE_ADAPTERS", "CaptureAdapter", "capture_adapter", "find_session", "find_sessions",
           "read_session"]

_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


def capture_adapter(name: str) -> type[CaptureAdapter]:
    """The capture adapter for harness ``name``; the error names the nearest and the valid names."""
    try:
        return CAPTURE_ADAPTERS[name]
    except KeyError:
        raise NotFoundError("harness", name, "name one of these",
                            known=sorted(CAPTURE_ADAPTERS), known_as="harnesses with a capture adapter") from None


def find_sessions(repo: Path, environ: Mapping[str, str] = os.environ) -> list[SessionRef]:
    """Every harness's sessions that started in ``repo`` or inside it, newest first."""
    repo = Path(os.path.abspath(repo))
    found = [ref for adapter in CAPTURE_ADAPTERS.values() for ref in adapter().discover(repo, environ)]
    return sorted(found, key=lambda r: (r.started_at or _OLDEST, r.path), reverse=True)


def find_session(repo: Path, session_id: str, environ: Mapping[str, str] = os.environ) -> SessionRef:
    """The session of ``repo`` whose id is ``session_id`` or starts with it (the prefix must be unique)."""
    sessions = find_sessions(repo, environ)
    exact = [r for r in sessions if r.session_id == session_id]
    matches = exact or [r for r in sessions if session_id and r.session_id.startswith(session_id)]
    if not matches:
        raise NotFoundError("session", session_id, f"`assay sessions` lists the sessions that started in {repo}",
                            known=[r.session_id for r in sessions], known_as=f"sessions of {repo}")
    distinct = list(dict.fromkeys(r.session_id for r in matches))
    if len(distinct) > 1:
        raise AmbiguousError(f"session id {session_id!r} matches {len(distinct)} sessions: {listed(distinct)}; "
                             "give more of the id")
    return matches[0]


def read_session(path: Path, harness: str | None = None) -> Session:
    """The session in transcript file ``path``, read by ``harness``'s adapter, or by the first adapter whose
    :meth:`~CaptureAdapter.sniff` recognises the file."""
    path = Path(path)
    if not path.is_file():
        raise NotFoundError("transcript file", str(path), "give the path of a session's .jsonl file")
    if harness is not None:
        return capture_adapter(harness)().read(path)
    for adapter in CAPTURE_ADAPTERS.values():
        if adapter().sniff(path):
            return adapter().read(path)
    raise UsageError(f"{path}: no capture adapter recognises this file as its transcript "
                     f"(harnesses: {listed(sorted(CAPTURE_ADAPTERS))}); name its harness")
