"""Cut a faithful subset out of a vendor's published OpenAPI document: the named operations and every
schema they reach, unchanged.

A fake validates what our adapters send (and what it answers) against the vendor's own document. A
vendor's whole document can be megabytes of endpoints we never call; this keeps only the operations
asked for, with their parameters, request bodies and responses exactly as published, and the
``#/components/...`` entries they reference, transitively. Nothing is rewritten: a schema in the cut
is byte-for-byte the vendor's (after JSON re-serialisation).

    python fakes/specs/cut_openapi.py SOURCE.json OUT.json.gz "POST /v1/convai/agents/create" ...

Each ``specs/*.json.gz`` file cut this way is listed, with its source and commit, in ``specs/README.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any


def _refs(node: Any) -> set[str]:
    """Every ``$ref`` inside a JSON tree."""
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for k, v in node.items() if k != "$ref"))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _pointer(document: dict[str, Any], ref: str) -> tuple[str, ...]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local references can be cut, not {ref!r}")
    parts = tuple(p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/"))
    node: Any = document
    for part in parts:
        node = node[part]
    return parts


def cut(document: dict[str, Any], operations: list[tuple[str, str]]) -> dict[str, Any]:
    """The subset of ``document`` holding ``operations`` ((METHOD, path template) pairs) and what they reference."""
    paths: dict[str, dict[str, Any]] = {}
    for method, template in operations:
        item = document["paths"].get(template) or {}
        if method.lower() not in item:
            raise KeyError(f"the document has no operation {method.upper()} {template}")
        kept = paths.setdefault(template, {k: v for k, v in item.items() if k in ("parameters", "summary")})
        kept[method.lower()] = item[method.lower()]
    out: dict[str, Any] = {k: document[k] for k in ("openapi", "info", "servers", "jsonSchemaDialect") if k in document}
    out["paths"] = paths
    seen: set[str] = set()
    todo = _refs(paths)
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        parts = _pointer(document, ref)
        source: Any = document
        target: Any = out
        for part in parts[:-1]:
            source, target = source[part], target.setdefault(part, {})
        target[parts[-1]] = source[parts[-1]]
        todo |= _refs(source[parts[-1]]) - seen
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="the vendor's whole OpenAPI document (JSON)")
    parser.add_argument("out", type=Path, help="where the gzipped subset goes")
    parser.add_argument("operations", nargs="+", help='operations to keep, each as "METHOD /path/{template}"')
    args = parser.parse_args(argv)
    document = json.loads(args.source.read_text(encoding="utf-8"))
    wanted = [tuple(op.split(None, 1)) for op in args.operations]
    subset = cut(document, [(m, p) for m, p in wanted])
    data = json.dumps(subset, indent=1, sort_keys=True, ensure_ascii=False).encode()
    with gzip.GzipFile(args.out, "wb", mtime=0) as fh:  # mtime 0: the same cut gives the same bytes
        fh.write(data)
    print(f"{args.out}: {len(subset['paths'])} paths, "
          f"{sum(len(v) for v in subset.get('components', {}).values())} components, {len(data)} bytes of JSON")


if __name__ == "__main__":
    main()
