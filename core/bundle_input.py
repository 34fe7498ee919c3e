"""Reading untrusted files safely: size caps, regular files only, strict UTF-8, and values a catalog can hold.

A bundle, the config it names and the call sets it names come from people and scripts we do not
control. Before anything is parsed, a file must be a regular file (a FIFO would block for ever, a
device such as ``/dev/zero`` never ends) and is read up to its cap plus one byte, so an endless file
costs at most the cap. Text must be UTF-8 without a byte order mark. After parsing, every value is
walked once, without recursion: nesting deeper than the cap, a number that is not finite (NaN,
``1e400``) and a NUL character are refused with the path inside the file, because SQLite and
PostgreSQL would each store them differently (or not at all). Every cap is a setting, and each
refusal names it.
"""

from __future__ import annotations

import codecs
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "InputLimits", "InputProblem", "dotted", "hostile_values", "iter_lines", "read_capped", "refuse_special",
    "resolved", "utf8",
]  # fmt: skip

Location = tuple[str | int, ...]


class InputProblem(ValueError):
    """One reason a file cannot be read; the caller wraps it in its own error with the file named."""


@dataclass(frozen=True)
class InputLimits:
    """The caps on untrusted input, from :class:`~.settings.Settings` (each names its variable)."""

    max_bundle_bytes: int = 32 * 2**20
    max_config_bytes: int = 8 * 2**20
    max_call_bytes: int = 4 * 2**20
    max_nesting: int = 64

    @classmethod
    def from_settings(cls, settings: Any = None) -> InputLimits:
        """The caps of ``settings`` (default: read from the environment, ``ASSAY_MAX_*``)."""
        if settings is None:
            from .settings import Settings

            settings = Settings()
        return cls(settings.max_bundle_bytes, settings.max_config_bytes, settings.max_call_bytes, settings.max_nesting)


def _size(n: int) -> str:
    return f"{n:,} bytes"


def refuse_special(path: Path) -> os.stat_result:
    """The file's status (following links); raise :class:`InputProblem` unless it is a regular file.

    Checked before opening: opening a FIFO for reading blocks until a writer comes.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputProblem(f"no such file (tried {path})") from None
    except OSError as exc:
        raise InputProblem(f"cannot read the file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device"
        kind = "a socket" if stat.S_ISSOCK(st.st_mode) else kind
        raise InputProblem(f"{path} is {kind}, not a regular file; name a regular file")
    return st


def resolved(path: Path) -> Path:
    """``path`` made absolute with its links followed; a link loop is an :class:`InputProblem` naming the path
    (Python's own error for it is a bare ``RuntimeError``)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:
        why = "a symbolic link that leads back to itself" if isinstance(exc, RuntimeError) else str(exc)
        raise InputProblem(f"{path} cannot be followed ({why}); point the link at a file, or name the file "
                           "itself") from None


def read_capped(path: Path, cap: int, setting: str) -> bytes:
    """The bytes of the regular file ``path``, refused past ``cap`` bytes (reading at most ``cap + 1``)."""
    refuse_special(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        raise InputProblem(f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise InputProblem(f"the file is larger than the cap of {_size(cap)}; shrink it or raise {setting}")
    return data


def utf8(data: bytes) -> str:
    """``data`` as text: UTF-8 without a byte order mark, else :class:`InputProblem` saying where."""
    if data.startswith(codecs.BOM_UTF8):
        raise InputProblem("the file starts with a byte order mark; save it as UTF-8 without one")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputProblem(
            f"not valid UTF-8: byte {exc.start} (line {line}) is {data[exc.start:exc.start + 1]!r}; save it as UTF-8"
        ) from None


def iter_lines(handle: BinaryIO, cap: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, the line, its length without the line break), never holding more than ``cap + 1`` bytes.

    A line longer than ``cap`` bytes (its line break not counted) comes back as ``None``; the rest of
    it is read and dropped in pieces.
    """
    number = 0
    while True:
        line = handle.readline(cap + 1)
        if not line:
            return
        number += 1
        if len(line) <= cap or line.endswith(b"\n"):
            yield number, line, len(line) - line.endswith(b"\n")
            continue
        length = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(2**20)
            length += len(line)
            if not line:
                break
        yield number, None, length - line.endswith(b"\n")


def hostile_values(obj: Any, max_nesting: int, setting: str = "ASSAY_MAX_NESTING") -> list[tuple[Location, str]]:
    """Values no catalog can hold alike: nesting past the cap, non-finite numbers, NUL characters.

    Walked with an explicit stack, so a deep document cannot exhaust Python's; each problem is
    (location in the document, what is wrong and the fix). Too-deep input is reported once.
    """
    found: list[tuple[Location, str]] = []
    stack: list[tuple[Any, Location]] = [(obj, ())]
    deep = False
    while stack and len(found) < 50:
        value, loc = stack.pop()
        if isinstance(value, (dict, list)):
            depth = len(loc) + 1
            if depth > max_nesting:
                if not deep:
                    found.append((loc, f"nested deeper than the cap of {max_nesting} levels; flatten it or "
                                       f"raise {setting}"))  # fmt: skip
                    deep = True
                continue
            if isinstance(value, dict):
                for key, item in reversed(list(value.items())):
                    if isinstance(key, str) and "\x00" in key:
                        found.append(((*loc, key.replace("\x00", "\\0")), "the key holds a NUL character; remove it"))
                    stack.append((item, (*loc, key)))
            else:
                stack.extend(((item, (*loc, i)) for i, item in reversed(list(enumerate(value)))))
        elif isinstance(value, float) and not math.isfinite(value):
            what = "NaN" if math.isnan(value) else "infinite (or too large for a number)"
            found.append((loc, f"the number is {what}; write a finite number"))
        elif isinstance(value, str) and "\x00" in value:
            found.append((loc, "the text holds a NUL character (\\u0000); remove it"))
    return found


def dotted(loc: Location) -> str:
    """A location as a path: ``teams[0].cases[2].title`` (``$`` for the whole document)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "$"
