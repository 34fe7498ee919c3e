"""Requests and answers checked against a vendor's published OpenAPI document.

A fake that accepts any body proves nothing about what our adapters send, and one that answers in shapes
of its own invention proves nothing about what they read. :class:`OpenApi` loads a vendor's OpenAPI
document (JSON, gzipped or not, once, lazily) and checks against the schemas it declares for a method
and path: the request body (:meth:`OpenApi.problems`), the query parameters
(:meth:`OpenApi.query_problems`) and an answer's body for its status (:meth:`OpenApi.response_problems`),
resolving ``#/components/...`` references with ``referencing``.

An OpenAPI 3.1 document's schemas are JSON Schema 2020-12 and are read as written, but for ``oneOf``
(below). An OpenAPI 3.0 document's schemas are a dialect of draft 4; three readings make a generated
one usable, each on purpose:

- ``nullable: true`` becomes a type that also allows ``null``;
- a ``pattern`` written as a JavaScript literal (``"/^[a-z]+$/i"``) is read as the regex inside it
  (with ``(?i)`` for the ``i`` flag) — taken literally, no value could ever match it;
- ``oneOf`` is read as ``anyOf`` (in both versions): generators emit ``oneOf`` for unions whose
  branches overlap (a VAPI assistant *mock* message also matches an assistant *checkpoint*; an
  ElevenLabs tool result of one type matches another's schema), and the servers check them as any-of.

Every other keyword means what JSON Schema says. :meth:`OpenApi.objects` walks a value along its
schema and yields each object with the properties its schema declares and requires: what the fakes'
wild modes use to drop or null exactly the fields the document calls optional.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

SPECS = Path(__file__).parent / "specs"
_URI = "urn:assay-fake:openapi"
_JS_LITERAL = re.compile(r"^/(?P<body>.*)/(?P<flags>[a-z]*)$", re.DOTALL)


def _openapi_to_jsonschema(node: Any, *, v30: bool = True) -> Any:
    """A copy of a schema tree with the readings of the module docstring applied (3.0's only when ``v30``)."""
    if isinstance(node, list):
        return [_openapi_to_jsonschema(item, v30=v30) for item in node]
    if not isinstance(node, dict):
        return node
    out = {("anyOf" if key == "oneOf" else key): _openapi_to_jsonschema(value, v30=v30) for key, value in node.items()
           if not (v30 and key == "nullable")}
    if not v30:
        return out
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    pattern = out.get("pattern")
    if isinstance(pattern, str) and (m := _JS_LITERAL.match(pattern)):
        out["pattern"] = ("(?i)" if "i" in m["flags"] else "") + m["body"]
    return out


def _readable(raw: dict[str, Any]) -> dict[str, Any]:
    """A whole document with its version's readings applied (3.0's three, or 3.1's one)."""
    return _openapi_to_jsonschema(raw, v30=not str(raw.get("openapi", "3.0")).startswith("3.1"))


class OpenApi:
    """One OpenAPI document: schemas by (method, path template), and validation against them."""

    def __init__(self, path: Path):
        self.path = path
        self._document: dict[str, Any] | None = None
        self._validators: dict[str, Any] = {}
        self._lock = threading.RLock()

    @classmethod
    def of(cls, document: dict[str, Any], name: str = "<in memory>") -> "OpenApi":
        """A document given as a dict rather than a file (for a vendor with no published document: our reading)."""
        api = cls(Path(name))
        api._document = _readable(json.loads(json.dumps(document)))
        return api

    @property
    def document(self) -> dict[str, Any]:
        with self._lock:
            if self._document is None:
                opener = gzip.open if self.path.suffix == ".gz" else open
                with opener(self.path, "rt", encoding="utf-8") as fh:
                    self._document = _readable(json.load(fh))
            return self._document

    @property
    def version(self) -> str:
        """The document's ``openapi`` version (``3.0.x`` or ``3.1.x``)."""
        return str(self.document.get("openapi", "3.0.0"))

    def operation(self, method: str, template: str) -> dict[str, Any]:
        """The document's operation ``METHOD template``; KeyError naming it when there is none."""
        operation = self.document.get("paths", {}).get(template, {}).get(method.lower())
        if operation is None:
            raise KeyError(f"the document has no operation {method.upper()} {template}")
        return operation

    def request_schema(self, method: str, template: str) -> dict[str, Any] | None:
        """The JSON request-body schema the document declares for ``METHOD template``, or None."""
        content = (self.operation(method, template).get("requestBody") or {}).get("content") or {}
        return (content.get("application/json") or {}).get("schema")

    def response_schema(self, method: str, template: str, status: int) -> dict[str, Any] | None:
        """The JSON schema of an answer with ``status`` to ``METHOD template`` (``default`` or ``2XX`` when the
        status is not listed), or None when the document gives that answer no JSON body."""
        responses = self.operation(method, template).get("responses") or {}
        response = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default") or {}
        if "$ref" in response:
            response = self._resolve(response["$ref"])
        return ((response.get("content") or {}).get("application/json") or {}).get("schema")

    def _resolve(self, ref: str) -> Any:
        node: Any = self.document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _validator(self, schema: dict[str, Any]) -> Any:
        from jsonschema import Draft4Validator, Draft202012Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT4, DRAFT202012

        key = json.dumps(schema, sort_keys=True)
        with self._lock:
            if key not in self._validators:
                modern = self.version.startswith("3.1")
                spec, cls = (DRAFT202012, Draft202012Validator) if modern else (DRAFT4, Draft4Validator)
                resource = Resource.from_contents(self.document, default_specification=spec)
                registry = Registry().with_resource(_URI, resource)
                self._validators[key] = cls(_anchored(schema), registry=registry)
            return self._validators[key]

    def _errors(self, schema: dict[str, Any] | None, value: Any) -> list[Any]:
        """jsonschema's errors for ``value``, best explanation first (at most five)."""
        from jsonschema.exceptions import best_match

        if schema is None:
            return []
        errors = list(self._validator(schema).iter_errors(value))
        if not errors:
            return []
        first = _into_union(best_match(errors))
        return [first, *(e for e in errors if e is not first)][:5]

    def _explain(self, schema: dict[str, Any] | None, value: Any, root: str = "body") -> list[str]:
        return [f"{_where(e, root)}: {e.message}" for e in self._errors(schema, value)]

    def request_errors(self, method: str, template: str, body: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """What is wrong with request ``body`` as (location inside the body, message) pairs, best first: for a
        fake that reports refusals in its vendor's own error shape."""
        return [(_location(e), e.message) for e in self._errors(self.request_schema(method, template), body)]

    def problems(self, method: str, template: str, body: Any) -> list[str]:
        """What is wrong with request ``body`` for ``METHOD template`` (empty when valid), best explanation first."""
        return self._explain(self.request_schema(method, template), body)

    def response_problems(self, method: str, template: str, status: int, body: Any) -> list[str]:
        """What is wrong with an answer's ``body`` for its ``status`` (empty when valid or when no schema is given)."""
        return self._explain(self.response_schema(method, template, status), body, root="answer")

    def query_problems(self, method: str, template: str, query: dict[str, list[str]]) -> list[str]:
        """What is wrong with a request's query string: parameters the operation does not declare, and values its
        schemas refuse (each read as the JSON value it spells, else as a string)."""
        return [f"query.{name}: {message}" for name, message in self.query_errors(method, template, query)]

    def query_errors(self, method: str, template: str, query: dict[str, list[str]]) -> list[tuple[str, str]]:
        """:meth:`query_problems` as (parameter name, message) pairs."""
        declared = {p["name"]: p for p in self._parameters(method, template) if p.get("in") == "query"}
        out = [(name, f"not a parameter of {method.upper()} {template} (known: {', '.join(sorted(declared)) or 'none'})")
               for name in sorted(set(query) - set(declared))]
        for name, values in sorted(query.items()):
            schema = declared.get(name, {}).get("schema")
            if schema:  # a query value is text; it may also spell a number or a boolean
                errors = [self._errors(schema, value) for value in (values[-1], _query_value(values[-1]))]
                out += [(name, e.message) for e in min(errors, key=len)]
        return out

    def _parameters(self, method: str, template: str) -> list[dict[str, Any]]:
        item = self.document.get("paths", {}).get(template, {})
        listed = [*(item.get("parameters") or []), *(self.operation(method, template).get("parameters") or [])]
        return [self._resolve(p["$ref"]) if "$ref" in p else p for p in listed]

    def objects(self, schema: dict[str, Any] | None, value: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any], set[str]]]:
        """Each object inside ``value`` with its schema's declared properties and required names, outermost first.

        A union is followed along the branch ``value`` satisfies (the first), else the one it fails least;
        ``additionalProperties`` maps are walked by their schema too."""
        schema = self.deref(schema)
        if not isinstance(schema, dict):
            return
        if "allOf" in schema:
            for branch in schema["allOf"]:
                yield from self.objects(branch, value)
        if schema.get("anyOf"):
            yield from self.objects(min(schema["anyOf"], key=lambda b: len(self._errors(self.deref(b), value))), value)
        if isinstance(value, dict) and ("properties" in schema or "additionalProperties" in schema):
            declared = schema.get("properties") or {}
            yield value, declared, set(schema.get("required") or [])
            extra = schema.get("additionalProperties")
            for key, item in list(value.items()):
                child = declared.get(key, extra if isinstance(extra, dict) else None)
                yield from self.objects(child, item)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for item in value:
                yield from self.objects(schema["items"], item)

    def deref(self, schema: Any) -> Any:
        """``schema`` with its ``$ref`` followed (siblings of the reference kept), until it is not a reference."""
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 50:
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            target = self._resolve(schema["$ref"])
            schema, seen = ({**target, **rest} if rest else target), seen + 1
        return schema


def _location(error: Any) -> tuple[str | int, ...]:
    """Where an error is, down to the missing property when one is (as FastAPI-style servers report it)."""
    where = tuple(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        return (*where, missing[0]) if missing else where
    return where


def _into_union(error: Any) -> Any:
    """For a value no branch of a union accepts, the error inside the branch it was meant for: branches whose
    discriminator (a ``const`` or ``enum`` on a property of the value) it misses are set aside, and of the
    rest the one with the fewest errors explains it. The union's own error when no branch is left."""
    from jsonschema.exceptions import best_match

    if not error.context:
        return error
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    depth = len(error.absolute_path) + 1
    meant = [errs for errs in branches.values()
             if not any(e.validator in ("const", "enum") and len(e.absolute_path) == depth for e in errs)]
    if not meant:
        return error
    return _into_union(best_match(min(meant, key=len)))


def _anchored(node: Any) -> Any:
    """A schema whose local references (``#/components/...``) point into the registered document."""
    if isinstance(node, list):
        return [_anchored(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {k: (_URI + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else _anchored(v))
            for k, v in node.items()}


def _query_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _where(error: Any, root: str = "body") -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path]
    return root + "".join(parts)


@lru_cache(maxsize=None)
def document(filename: str) -> OpenApi:
    """The OpenAPI document ``specs/<filename>`` (one instance per file, loaded on first use)."""
    return OpenApi(SPECS / filename)


def vapi_document() -> OpenApi:
    """VAPI's published OpenAPI document (``specs/vapi-openapi.json.gz``), loaded on first use."""
    return document("vapi-openapi.json.gz")


def elevenlabs_document() -> OpenApi:
    """The part of ElevenLabs' published OpenAPI document the adapter uses (``specs/elevenlabs-openapi.json.gz``)."""
    return document("elevenlabs-openapi.json.gz")


__all__ = ["OpenApi", "document", "elevenlabs_document", "vapi_document"]
