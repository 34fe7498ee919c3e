"""Answers as real vendors give them on a bad day: the shape their document allows, or a little beyond it.

A fake that always answers the documented happy shape trains adapters to expect exactly that. Steered
by ``faults.wild`` (mode -> the ``"METHOD /path"`` answers it applies to, ``*`` matching any run of
characters), :func:`deviate` rewrites a fake's successful answer. The modes read the vendor's document
(the fake's ``document`` and the answer's response schema), so "optional" means what the vendor wrote:

- ``extra_keys``: every object the document describes gains an undocumented key (vendors add fields
  before they document them);
- ``drop_optional``: every field the document does not require is left out;
- ``null_optional``: every field the document does not require, present in the answer, is ``null``;
- ``unknown_enum``: every value the document lists an ``enum`` for is one it does not list (a status
  added after the document was published);
- ``error_200``: the answer is the vendor's error shape with status 200 (a proxy, or a vendor that
  reports a failure in the body of a success).

An adapter facing any of these either reads the answer or fails with a clear error (an ERROR case
run), never a crash and never a FAIL; the adapters' tests prove it mode by mode.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

MODES = ("extra_keys", "drop_optional", "null_optional", "unknown_enum", "error_200")
UNDOCUMENTED_KEY = "x_undocumented"
"""The key ``extra_keys`` adds to every object."""
UNLISTED = "unlisted_value"
"""The value ``unknown_enum`` gives every enumerated field (upper case when the document's values are)."""


def deviate(fake: Any, req: Any, status: int, payload: Any) -> tuple[int, Any]:
    """``(status, payload)`` rewritten by each wild mode whose pattern matches ``METHOD path``."""
    key = f"{req.method} {req.path}"
    modes = [m for m, pattern in dict(fake.faults.wild).items() if fnmatch.fnmatchcase(key, str(pattern))]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        return 500, fake.error_body(500, f"fake misconfigured: unknown wild modes {unknown}; known: {list(MODES)}")
    if "error_200" in modes:
        return 200, fake.error_body(500, "An internal error occurred while processing the request")
    document = fake.document
    schema = document.response_schema(req.method, req.template, status) if document is not None and req.template else None
    if schema is None or not modes:
        return status, payload
    payload = json.loads(json.dumps(payload))  # never the fake's own stored objects
    for obj, declared, required in list(document.objects(schema, payload)):
        for name, prop in declared.items():
            if "unknown_enum" in modes and name in obj:
                listed = _enum(document, prop)
                if listed and obj[name] in listed:
                    obj[name] = UNLISTED.upper() if all(str(v).isupper() for v in listed) else UNLISTED
            if name in required:
                continue
            if "drop_optional" in modes:
                obj.pop(name, None)
            elif "null_optional" in modes and name in obj:
                obj[name] = None
        if "extra_keys" in modes and declared:
            obj[UNDOCUMENTED_KEY] = {"added": "after the document was published"}
    return status, payload


def _enum(document: Any, prop: Any) -> list[Any]:
    """The values a property's schema enumerates (through references and nullable unions), or []."""
    prop = document.deref(prop)
    if not isinstance(prop, dict):
        return []
    if "enum" in prop:
        return [v for v in prop["enum"] if v is not None]
    for branch in prop.get("anyOf") or []:
        if listed := _enum(document, branch):
            return listed
    return []


__all__ = ["MODES", "UNDOCUMENTED_KEY", "UNLISTED", "deviate"]
