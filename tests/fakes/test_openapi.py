"""The vendors' documents the fakes follow: a cut keeps what it names and everything that reaches, unchanged, and
the stored documents are closed (every reference resolves) and answer the questions the fakes ask of them."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from assay.fakes.openapi import SPECS, OpenApi, document, elevenlabs_document


def _cut_module() -> Any:
    spec = importlib.util.spec_from_file_location("cut_openapi", SPECS / "cut_openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = {
    "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
    "paths": {
        "/a": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}},
                        "responses": {"200": {"description": "", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/B"}}}}}},
               "get": {"responses": {"200": {"description": ""}}}},
        "/unused": {"get": {"responses": {"200": {"$ref": "#/components/responses/Unused"}}}},
    },
    "components": {
        "schemas": {"A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
                    "B": {"type": "object", "properties": {"c": {"items": {"$ref": "#/components/schemas/C"}}}},
                    "C": {"type": "string", "enum": ["x"]}, "Unused": {"type": "integer"}},
        "responses": {"Unused": {"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Unused"}}}}},
    },
}


def test_a_cut_keeps_the_named_operations_and_what_they_reach_unchanged() -> None:
    cut = _cut_module().cut(SOURCE, [("POST", "/a")])
    assert list(cut["paths"]) == ["/a"] and list(cut["paths"]["/a"]) == ["post"]
    assert cut["paths"]["/a"]["post"] == SOURCE["paths"]["/a"]["post"]
    assert cut["components"] == {"schemas": {k: SOURCE["components"]["schemas"][k] for k in ("A", "B", "C")}}
    with pytest.raises(KeyError, match="no operation DELETE /a"):
        _cut_module().cut(SOURCE, [("DELETE", "/a")])


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        return ({node["$ref"]} if isinstance(node.get("$ref"), str) else set()).union(*map(_refs, node.values()))
    return set().union(*map(_refs, node)) if isinstance(node, list) else set()


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("*.json.gz")))
def test_every_stored_document_is_closed(name: str) -> None:
    doc = document(name)
    for ref in _refs(doc.document):
        node: Any = doc.document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]


def test_the_elevenlabs_cut_holds_exactly_the_operations_the_adapter_and_fake_use() -> None:
    paths = elevenlabs_document().document["paths"]
    assert {(m.upper(), p) for p, item in paths.items() for m in item if m in ("get", "post", "patch", "delete")} == {
        ("POST", "/v1/convai/agents/create"), ("GET", "/v1/convai/agents"), ("GET", "/v1/convai/agents/{agent_id}"),
        ("PATCH", "/v1/convai/agents/{agent_id}"), ("DELETE", "/v1/convai/agents/{agent_id}"),
        ("POST", "/v1/convai/agents/{agent_id}/simulate-conversation")}


def test_objects_walks_a_value_along_its_schema_through_unions_and_maps() -> None:
    api = OpenApi.of({"openapi": "3.1.0", "paths": {}, "components": {"schemas": {
        "Item": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "note": {"type": "string"}}},
        "Map": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Item"}}}}})
    schema = {"anyOf": [{"type": "null"}, {"$ref": "#/components/schemas/Map"}]}
    value = {"k": {"id": "1", "note": "n"}}
    walked = [(obj, set(declared), required) for obj, declared, required in api.objects(schema, value)]
    assert walked == [(value, set(), set()), (value["k"], {"id", "note"}, {"id"})]


def test_query_values_are_read_as_text_or_as_the_json_they_spell() -> None:
    doc = elevenlabs_document()
    assert doc.query_problems("GET", "/v1/convai/agents", {"page_size": ["30"], "cursor": ["30"], "search": ["x"]}) == []
    [problem] = doc.query_problems("GET", "/v1/convai/agents", {"page_size": ["lots"]})
    assert problem.startswith("query.page_size:")
    assert json.dumps(doc.query_problems("GET", "/v1/convai/agents", {"size": ["1"]})).count("not a parameter") == 1
