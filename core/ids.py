"""Validated identifiers and stable hashes.

Anything that becomes part of a lake path or a catalog key passes through :func:`identifier`, so a
team id like ``../x`` or ``a/b`` is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any

from .errors import IdentifierError

IDENTIFIER_RULE = "1-64 characters: lower-case letters, digits, '_' and '-', starting with a letter or digit"
_IDENTIFIER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def identifier(value: Any, field: str = "identifier") -> str:
    """Return ``value`` if it is a valid identifier, else raise :class:`IdentifierError`."""
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise IdentifierError(field, value, IDENTIFIER_RULE)
    return value


def is_identifier(value: Any) -> bool:
    return isinstance(value, str) and _IDENTIFIER.fullmatch(value) is not None


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: equal content, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(value: Any) -> str:
    """sha256 hex of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def new_id() -> str:
    """A fresh random id (32 hex characters)."""
    return uuid.uuid4().hex


def id_code(id_: str) -> int:
    """A 32-hex-character id's first 64 bits as a signed integer: the compact key the lake's re-score
    state stores instead of the id's text (distinct ids of one suite are checked to keep distinct codes)."""
    value = int(id_[:16], 16)
    return value - 2**64 if value >= 2**63 else value


def name_code(name: str) -> int:
    """A name's (an assertion key's, an evaluator's) 64-bit code: the first 8 bytes of its sha256, signed."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def stable_id(*parts: str) -> str:
    """A deterministic id from its parts: the same parts always give the same id."""
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
