"""The call-set rules walked in both forms: :func:`problems` in Python, :func:`scan_sql` in SQL.

The two walkers apply the same structure to a :class:`~.callset_kinds.Model`: unknown keys refused
when the model forbids them, a missing or null optional field accepted, a required one refused,
every other value judged by its kind (and refused without the field it ``needs``), the model's
rules across fields (:class:`~.callset_kinds.Rule`), and a list field's items each checked against its
sub-model, with a ``unique`` field of the items told apart within the list.
Neither walker knows any field or kind by name (a list field aside, whose items they visit), so a
rule cannot exist in one form and not the other.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from typing import Any

from .callset_kinds import LIST, NUMBER, Field, Model, kind_of, sql_in, sql_list, sql_str

__all__ = ["problems", "scan_sql"]


def problems(model: Model, obj: dict[str, Any], where: str, cases: Collection[str]) -> Iterator[tuple[str, str]]:
    """Every problem of one object, as (field path, message); a list field's items after the rest."""
    if model.extra == "forbid":
        for key in obj:
            if key not in model.names:
                yield f"{where}{key}", f"unknown field; allowed fields are {', '.join(model.names)}"
    bad: set[str] = set()
    for f in sorted(model.fields, key=lambda f: f.model is not None):
        value = obj.get(f.name)
        if value is None and not f.required:
            continue
        problem = f.kind.check(f, value, f.name in obj, cases)
        if not problem and f.needs and obj.get(f.needs) is None:
            problem = f"given without {f.needs}: give both or neither"
        if problem:
            bad.add(f.name)
            yield f"{where}{f.name}", problem
        elif f.model:
            yield from _items(f, value, f"{where}{f.name}", cases)
    for rule in model.rules:
        if not bad & set(rule.reads) and all(obj.get(n) is not None for n in rule.reads):
            problem = rule.check(obj)
            if problem:
                yield f"{where}{rule.field}", problem


def _items(f: Field, items: list[Any], at: str, cases: Collection[str]) -> Iterator[tuple[str, str]]:
    """The problems of a list field's items, then of a ``unique`` field shared by two of them."""
    assert f.model is not None
    for i, item in enumerate(items):
        if isinstance(item, dict):
            yield from problems(f.model, item, f"{at}[{i}].", cases)
        else:
            yield f"{at}[{i}]", f"expected an object, got {kind_of(item)}"
    for u in (g for g in f.model.fields if g.unique):
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            value = item.get(u.name) if isinstance(item, dict) else None
            if value is None or u.kind.check(u, value, True, cases):
                continue
            seen = json.dumps(value, sort_keys=True)
            if seen in first:
                yield (f"{at}[{i}].{u.name}", f"{value!r} is already the {u.name} of {at}[{first[seen]}]; "
                       f"{u.name}s must be unique within a line's {f.name}: rename one or drop the duplicate")
            else:
                first[seen] = i


def _predicate(model: Model, var: str) -> str:
    """True for an object of ``model`` with no problem (NULL counts as a problem).

    ``var`` is the object as a struct of its fields read with their carriers. A value that is not an
    object reads as a struct of NULLs, which a required field refuses; a model without one also
    checks the JSON type. A list field's items, keys and types come from the columns :func:`scan_sql`
    parses them into.
    """
    parts = []
    for f in model.fields:
        v = f"{var}.{_ident(f.name)}"
        if f.model:
            items, keys, types = _item_columns(f)
            checks = [LIST.sql(items, f), _none(items, "NOT coalesce(" + _predicate(f.model, "x") + ", false)")]
            if f.model.extra == "forbid":
                checks.append(_none(keys, _unknown("x", f.model) + " > 0"))
            if _type_checked(f.model):
                checks.append(_none(types, "x <> 'OBJECT'"))
            for u in (g for g in f.model.fields if g.unique):  # list_distinct drops NULLs, as the check skips them
                values = f"list_transform({items}, lambda x: {u.kind.out('x.' + _ident(u.name))})"
                checks.append(f"coalesce(len(list_distinct({values})) = len(list_filter({values}, "
                              "lambda y: y IS NOT NULL)), true)")
            good = " AND ".join(checks)
        else:
            good = f.kind.sql(v, f)
        if f.needs:
            good = f"{good} AND {var}.{_ident(f.needs)} IS NOT NULL"
        parts.append(f"({v} IS NOT NULL AND {good})" if f.required else f"({v} IS NULL OR ({good}))")
    for rule in model.rules:  # NULL (a field missing, or not a number: its own check says so) holds
        parts.append(f"coalesce({rule.sql(lambda name: NUMBER.out(f'{var}.{_ident(name)}'))}, true)")
    return " AND ".join(parts)


def _projection(model: Model, var: str) -> list[tuple[str, str]]:
    """(field name, SQL of the value the bulk load stores); a list field gives a list of structs."""
    columns = []
    for f in model.fields:
        if f.model:
            inner = ", ".join(f"{sql_str(n)}: {e}" for n, e in _projection(f.model, "x"))
            expr = f"coalesce(list_transform({_item_columns(f)[0]}, lambda x: {{{inner}}}), [])"
        else:
            expr = f.kind.out(f"{var}.{_ident(f.name)}")
            if f.default is not None:
                expr = f"coalesce({expr}, {_literal(f.default)})"
        columns.append((f.name, expr))
    return columns


def scan_sql(model: Model) -> str:
    """The DuckDB query that reads a JSON Lines file ``$path`` of ``model`` objects, in file order.

    One row per line: ``bad`` (the line has a problem; ``$cases`` is the run's list of case keys),
    then one column per field holding what the bulk load stores. Each line is parsed once into its
    top-level values, and each list once more into its items: every JSON function re-parses its
    argument, so the rules run on the small pieces.
    """
    pieces = []
    for f in model.fields:
        if f.model:
            raw, (items, keys, types) = f"r.{_ident(f.name)}", _item_columns(f)
            pieces.append(f"from_json({raw}, {sql_str(json.dumps([_carriers(f.model)]))}) AS {items}")
            if f.model.extra == "forbid":
                pieces.append(f"json_keys({raw}, '$[*]') AS {keys}")
            if _type_checked(f.model):
                pieces.append(f"json_type({raw}, '$[*]') AS {types}")
    good = _predicate(model, "r")
    if model.extra == "forbid":
        good += f" AND {_unknown('json_keys(json)', model)} = 0"
    if _type_checked(model):
        good += " AND json_type(json) = 'OBJECT'"
    columns = "".join(f",\n  {e} AS {_ident(n)}" for n, e in _projection(model, "r"))
    return (
        f"WITH p AS (\n  SELECT json, from_json(json, {sql_str(json.dumps(_carriers(model)))}) AS r\n"
        "  FROM read_ndjson_objects($path)\n"
        f"), q AS (\n  SELECT {', '.join(['*', *pieces])}\n  FROM p\n)\n"
        f"SELECT NOT coalesce({good}, false) AS bad{columns}\nFROM q"
    )


def _carriers(model: Model) -> dict[str, str]:
    return {f.name: f.kind.carrier for f in model.fields}


def _item_columns(f: Field) -> tuple[str, str, str]:
    """The columns holding a list field's items (structs), their key lists and their JSON types."""
    return _ident(f"{f.name}[]"), _ident(f"{f.name}[].keys"), _ident(f"{f.name}[].types")


def _type_checked(model: Model) -> bool:
    return not any(f.required for f in model.fields)


def _none(items: str, bad: str) -> str:
    """No item of the list ``items`` (each called ``x``) is ``bad``."""
    return f"coalesce(len(list_filter({items}, lambda x: {bad})), 0) = 0"


def _unknown(keys: str, model: Model) -> str:
    return f"len(list_filter({keys}, lambda k: NOT {sql_in(sql_list(model.names), 'k')}))"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return sql_str(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
