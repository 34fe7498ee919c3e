"""The contract every capture adapter keeps, and the small readers they share.

A capture adapter knows one harness's transcript files: where they live (:meth:`CaptureAdapter.discover`),
how to tell one from another harness's (:meth:`CaptureAdapter.sniff`) and how to read one into a
harness-neutral :class:`~assay.core.session.Session` (:meth:`CaptureAdapter.read`). What it promises about
that Session is data (:attr:`CaptureAdapter.guarantees`), so the conformance kit and the documentation read
the same lines.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, ClassVar

from assay.core.session import Session, SessionRef

_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\])")

FIRST_PROMPT_CHARS = 120
"""A session's first prompt is cut to this many characters (one line) in a :class:`SessionRef`."""


class CaptureAdapter(ABC):
    """Reads one harness's transcripts into :class:`Session` objects."""

    name: ClassVar[str]
    """The harness's name, as :attr:`Session.harness` carries it."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other words that name the harness (kept out of the harness-neutral packages by a test)."""
    guarantees: ClassVar[tuple[str, ...]] = ()
    """One line each: what this adapter guarantees about a Session it returns."""

    @abstractmethod
    def discover(self, repo: Path, environ: Mapping[str, str]) -> list[SessionRef]:
        """Sessions on this machine whose starting directory is ``repo`` or inside it."""

    @abstractmethod
    def read(self, path: Path) -> Session:
        """The session in one transcript file (with the files it points to, such as subagents')."""

    @abstractmethod
    def sniff(self, path: Path) -> bool:
        """Whether ``path`` looks like this harness's transcript (reads only its first lines)."""


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """Each line of a JSON Lines file with its number (from 1): the object, or None when it is not one.

    Blank lines are skipped; a file that is not UTF-8 reads with replacement characters rather than failing.
    """
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                yield number, None
                continue
            yield number, record if isinstance(record, dict) else None


def first_records(path: Path, count: int = 20) -> list[dict[str, Any]]:
    """The first ``count`` JSON objects of a file (none when it cannot be read)."""
    found: list[dict[str, Any]] = []
    try:
        for _, record in json_lines(path):
            if record is not None:
                found.append(record)
            if len(found) >= count:
                break
    except OSError:
        return []
    return found


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as an aware UTC datetime; None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def one_line(text: str | None) -> str | None:
    """Text cut to one line of at most :data:`FIRST_PROMPT_CHARS` characters; None when empty."""
    if not text:
        return None
    flat = " ".join(text.split())
    if not flat:
        return None
    return flat if len(flat) <= FIRST_PROMPT_CHARS else flat[: FIRST_PROMPT_CHARS - 1] + "…"


def within(cwd: str | None, repo: Path) -> bool:
    """Whether a session's starting directory is ``repo`` or inside it (compared as absolute paths; a Windows
    path, ``C:\\...`` or ``\\\\server\\share``, as Windows compares it, whatever the machine reading it)."""
    if not cwd:
        return False
    flavour = PureWindowsPath if is_windows_path(cwd) else PurePosixPath
    start, root = flavour(cwd), flavour(str(repo))
    return start == root or root in start.parents


def is_windows_path(path: str) -> bool:
    """Whether a path is written the Windows way: a drive letter (``C:\\`` or ``C:/``) or a UNC share."""
    return bool(_WINDOWS_PATH.match(path))
