"""Secrets out of evidence: :func:`redact` copies a JSON value with every secret replaced.

Provider payloads, vendor evaluation objects and compiled configs are kept as evidence, and evidence
lives forever in the lake, so anything that looks like a credential is replaced by ``"[redacted]"``
before it is reported. The rules are deliberately broad: losing a harmless value costs less than
keeping a key.

- A mapping key is secret when, compared case-insensitively, it is one of :data:`SECRET_KEYS` or ends
  in one of :data:`SECRET_SUFFIXES` (``openai_key``, ``refresh_token``, ``x-api-key``, ...). Its whole value is
  replaced, whatever it is (a nested object included); ``null`` stays ``null``.
- A string that carries a bearer token (``"Bearer eyJhbGci..."``, also inside a longer string such as a
  logged header line) is replaced as a whole.

Bulk callers that hold payloads as JSON text can skip the parse for most rows: :data:`SUSPECT_PATTERN`
matches (case-insensitively) the JSON text of every value :func:`redact` would change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"

SECRET_KEYS: frozenset[str] = frozenset(
    {
        "authorization",
        "api_key",
        "apikey",
        "api-key",
        "token",
        "secret",
        "password",
        "x-vapi-secret",
        "xi-api-key",
    }
)
"""Keys whose values are always secret (compared in lower case)."""

SECRET_SUFFIXES: tuple[str, ...] = ("_key", "_token", "-key", "-token", "_secret", "-secret", "_password")
"""A key ending in one of these (in lower case) is secret too: ``openai_key``, ``x-api-key``, ..."""

_BEARER = re.compile(r"\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE)

SUSPECT_PATTERN = r"authorization|apikey|[-_]key|token|secret|password|bearer|\\u"
"""A regular expression (use it case-insensitively) that matches the JSON text of every value that
:func:`redact` would change. ``\\u`` is there because a key may be written with unicode escapes."""


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret."""
    lowered = key.lower()
    return lowered in SECRET_KEYS or lowered.endswith(SECRET_SUFFIXES)


def redact(value: Any) -> Any:
    """A deep copy of a JSON value with secrets replaced by ``"[redacted]"``.

    Mappings become dicts and tuples become lists, so the result is plain JSON whatever came in.
    """
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if value[key] is not None else None)
            if isinstance(key, str) and is_secret_key(key)
            else redact(value[key])
            for key in value
        }
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    if isinstance(value, str) and _BEARER.search(value):
        return REDACTED
    return value


__all__ = ["REDACTED", "SECRET_KEYS", "SECRET_SUFFIXES", "SUSPECT_PATTERN", "is_secret_key", "redact"]
