"""Writing TOML: the small subset Assay's own files use, read back by the standard library's ``tomllib``.

Supported: strings, integers, finite floats, booleans, arrays of these (nested arrays too), tables
and arrays of tables. ``None`` means "absent": the key is left out. Keys keep their order; a key that
is not bare (letters, digits, ``_``, ``-``) is quoted. Strings are basic strings with every control
character escaped, so any text (quotes, backslashes, newlines, emoji, ``\"\"\"``) reads back equal.
Anything else — a datetime, NaN, a lone surrogate, an array mixing tables with values — is refused with
:class:`ValueError` naming where it is, rather than written in a form that would read back different.

Why not the ``toml`` package Prefect brings: at 0.10.2 it fails on control characters (``\x00``, ``\x1b``,
``\x7f`` raise ``IndexError``), which instructions and patches may hold, and it is not ours to pin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["toml_dumps"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_dumps(document: Mapping[str, Any]) -> str:
    """``document`` as TOML text: its plain values first, then its tables, then its arrays of tables."""
    lines: list[str] = []
    _table(document, (), lines)
    return "\n".join(lines).strip("\n") + "\n"


def _table(table: Mapping[str, Any], path: tuple[str, ...], lines: list[str]) -> None:
    values, tables, arrays = _split(table, path)
    lines.extend(f"{_key(k)} = {_value(v, (*path, k))}" for k, v in values)
    for key, sub in tables:
        lines += ["", f"[{_dotted((*path, key))}]"]
        _table(sub, (*path, key), lines)
    for key, items in arrays:
        for item in items:
            lines += ["", f"[[{_dotted((*path, key))}]]"]
            _table(item, (*path, key), lines)


def _split(table: Mapping[str, Any], path: tuple[str, ...]) -> tuple[list, list, list]:
    """The table's entries sorted into plain values, sub-tables and arrays of tables (``None`` dropped)."""
    values, tables, arrays = [], [], []
    for key, value in table.items():
        if not isinstance(key, str):
            raise ValueError(f"{_where((*path, str(key)))}: a TOML key must be a string, not {type(key).__name__}")
        if value is None:
            continue
        if isinstance(value, Mapping):
            tables.append((key, value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
            arrays.append((key, value))
        else:
            values.append((key, value))
    return values, tables, arrays


def _value(value: Any, path: tuple[str, ...]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{_where(path)}: {value!r} is not a finite number; TOML files here hold finite ones")
        return repr(value)
    if isinstance(value, str):
        return _string(value, path)
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, Mapping) for v in value):
            raise ValueError(f"{_where(path)}: an array mixes tables with other values; keep them apart")
        if any(v is None for v in value):
            raise ValueError(f"{_where(path)}: an array holds None, which TOML cannot write; drop it")
        return "[" + ", ".join(_value(v, (*path, str(i))) for i, v in enumerate(value)) + "]"
    raise ValueError(f"{_where(path)}: cannot write a {type(value).__name__} to TOML; use a string, number, "
                     "boolean, array or table")  # fmt: skip


def _string(text: str, path: tuple[str, ...]) -> str:
    out = []
    for char in text:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"{_where(path)}: the text holds a lone surrogate (U+{code:04X}); it is not valid "
                             "Unicode text")  # fmt: skip
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key, (key,))


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(_key(k) for k in path)


def _where(path: tuple[str, ...]) -> str:
    return ".".join(path) or "the document"
