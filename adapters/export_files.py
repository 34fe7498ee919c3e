"""A vendor's export file read as its top-level JSON values, each with the line it starts on.

An export is one JSON document (an object or a list) or JSON Lines (one value per line; blank lines are
skipped). Which one is decided by the text, not by the file's name: a file that is not one JSON document but
whose first line is a JSON value of its own is JSON Lines. A file that reads as neither is refused with the
line and column where it breaks, what the parser expected there and, when the text ends first, that the file
looks cut short. A byte order mark at the start is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.core.errors import CallExportError

__all__ = ["read_values"]


def read_values(path: Path, expected: str) -> list[tuple[int | None, Any]]:
    """``[(None, document)]`` for a JSON document, ``[(line number, value), ...]`` for JSON Lines.

    Raises :class:`CallExportError` naming ``path``, where the text breaks and ``expected`` (what the file
    should hold, in words).
    """
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise CallExportError(str(path), [f"line {line}: not UTF-8 text (byte {exc.start}); expected {expected}"]) \
            from None
    if not text.strip():
        raise CallExportError(str(path), [f"the file is empty; expected {expected}"])
    try:
        return [(None, json.loads(text))]
    except json.JSONDecodeError as whole:
        lines = text.splitlines()
        first = next(i for i, ln in enumerate(lines) if ln.strip())
        if whole.lineno > first + 1 and _value(lines[first]):
            return _json_lines(path, lines, expected)
        short = "the file looks cut short; export it again"
        raise CallExportError(str(path), [_broken(whole, whole.lineno, text, expected, short)]) from None
    except RecursionError:
        raise CallExportError(str(path), [f"nested too deeply to parse; expected {expected}"]) from None


def _value(line: str) -> bool:
    try:
        json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _json_lines(path: Path, lines: list[str], expected: str) -> list[tuple[int | None, Any]]:
    values: list[tuple[int | None, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            values.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            last = not any(ln.strip() for ln in lines[number:])
            short = "the file looks cut short; export it again" if last else "the line ends before its value does"
            said = _broken(exc, number, line, f"{expected}, one per line (JSON Lines)", short)
            raise CallExportError(str(path), [said]) from None
        except RecursionError:
            raise CallExportError(str(path), [f"line {number}: nested too deeply to parse"]) from None
    return values


def _broken(exc: json.JSONDecodeError, line: int, text: str, expected: str, short: str) -> str:
    """Where ``text`` breaks and what was expected there, saying ``short`` when the text ends first (an
    unterminated string is one that runs to the end)."""
    where = f"line {line}, column {exc.colno}: {exc.msg}"
    if not text[exc.pos :].strip() or exc.msg.startswith("Unterminated string"):
        where += f" (the text ends there: {short})"
    return f"{where}; expected {expected}"
