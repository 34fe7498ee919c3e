"""Request bodies checked against a vendor's published OpenAPI document.

A fake that accepts any body proves nothing about what our adapters send. :class:`OpenApi` loads a
vendor's OpenAPI 3.0 document (gzip JSON, once, lazily) and validates a request body against the schema
the document gives for that method and path, resolving ``#/components/...`` references with
``referencing``. Three readings make the generated document usable as JSON Schema, each on purpose:

- ``nullable: true`` (OpenAPI 3.0) becomes a type that also allows ``null``;
- a ``pattern`` written as a JavaScript literal (``"/^[a-z]+$/i"``) is read as the regex inside it
  (with ``(?i)`` for the ``i`` flag) — taken literally, no value could ever match it;
- ``oneOf`` is read as ``anyOf``: the generator (NestJS) emits ``oneOf`` for unions whose branches
  overlap (an assistant *mock* message also matches an assistant *checkpoint*), and the server checks
  them as any-of. Every other keyword means what JSON Schema says.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

SPECS = Path(__file__).parent / "specs"
_URI = "urn:assay-fake:openapi"
_JS_LITERAL = re.compile(r"^/(?P<body>.*)/(?P<flags>[a-z]*)$", re.DOTALL)


def _openapi_to_jsonschema(node: Any) -> Any:
    """A copy of a schema tree with the three readings of the module docstring applied."""
    if isinstance(node, list):
        return [_openapi_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {("anyOf" if key == "oneOf" else key): _openapi_to_jsonschema(value) for key, value in node.items()
           if key != "nullable"}
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    pattern = out.get("pattern")
    if isinstance(pattern, str) and (m := _JS_LITERAL.match(pattern)):
        out["pattern"] = ("(?i)" if "i" in m["flags"] else "") + m["body"]
    return out


class OpenApi:
    """One OpenAPI document: request schemas by (method, path template), and validation against them."""

    def __init__(self, path: Path):
        self.path = path
        self._document: dict[str, Any] | None = None
        self._validators: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def document(self) -> dict[str, Any]:
        with self._lock:
            if self._document is None:
                opener = gzip.open if self.path.suffix == ".gz" else open
                with opener(self.path, "rt", encoding="utf-8") as fh:
                    self._document = _openapi_to_jsonschema(json.load(fh))
            return self._document

    def request_schema(self, method: str, template: str) -> dict[str, Any] | None:
        """The JSON request-body schema the document declares for ``METHOD template``, or None."""
        operation = self.document.get("paths", {}).get(template, {}).get(method.lower())
        if operation is None:
            raise KeyError(f"the document has no operation {method.upper()} {template}")
        content = (operation.get("requestBody") or {}).get("content") or {}
        return (content.get("application/json") or {}).get("schema")

    def _validator(self, schema: dict[str, Any]) -> Any:
        from jsonschema import Draft4Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT4

        key = json.dumps(schema, sort_keys=True)
        if key not in self._validators:
            resource = Resource.from_contents(self.document, default_specification=DRAFT4)
            registry = Registry().with_resource(_URI, resource)
            anchored = {**schema, "$ref": _URI + schema["$ref"]} if "$ref" in schema else schema
            self._validators[key] = Draft4Validator(anchored, registry=registry)
        return self._validators[key]

    def problems(self, method: str, template: str, body: Any) -> list[str]:
        """What is wrong with ``body`` for ``METHOD template`` (empty when valid), best explanation first."""
        from jsonschema.exceptions import best_match

        schema = self.request_schema(method, template)
        if schema is None:
            return []
        errors = list(self._validator(schema).iter_errors(body))
        if not errors:
            return []
        first = best_match(errors)
        ordered = [first, *(e for e in errors if e is not first)]
        return [f"{_where(e)}: {e.message}" for e in ordered[:5]]


def _where(error: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path]
    return "body" + "".join(parts)


@lru_cache(maxsize=None)
def vapi_document() -> OpenApi:
    """VAPI's published OpenAPI document (``specs/vapi-openapi.json.gz``), loaded on first use."""
    return OpenApi(SPECS / "vapi-openapi.json.gz")


__all__ = ["OpenApi", "vapi_document"]
