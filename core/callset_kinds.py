"""The kinds of call-set field, each with its rule in SQL and in Python, side by side.

A :class:`Kind` holds one rule in both of its forms: ``sql``, a DuckDB predicate that the bulk load
runs on every line at once, and ``check``, the Python function that says what is wrong with one
value. A :class:`Field` gives a name, a kind and a documentation to one key of a :class:`Model`; a
:class:`Rule` relates several fields of one object (a score on its scale), again in both forms.
:mod:`.callset_rules` walks a model in both forms alike, and :mod:`.callset` declares the models.

In SQL a field's value ``v`` is read from the line as its kind's ``carrier`` type (``JSON``, whose
JSON null is SQL NULL, or ``VARCHAR``). ``sql`` and ``check`` only ever see a present, non-null
value, except that a required field's check also sees a missing or null one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "AMOUNT", "BOOLEAN", "CASE", "ENUM", "JSON", "KEY", "LIST", "NUMBER", "OBJECT", "TEXT", "TIMESTAMP",
    "TIMESTAMP_PATTERN", "Field", "Kind", "Model", "Rule", "kind_of", "sql_in", "sql_list", "sql_str",
]  # fmt: skip

_YEAR = r"(\d{3}[1-9]|\d\d[1-9]\d|\d[1-9]\d\d|[1-9]\d{3})"  # 0001-9999: Python has no year 0, DuckDB does
_HOUR = r"([01]\d|2[0-3])"  # DuckDB reads 24:00 as the next midnight and takes offsets of 24 hours or more
TIMESTAMP_PATTERN = rf"{_YEAR}-\d\d-\d\d[T ]{_HOUR}:\d\d(:\d\d(\.\d{{1,9}})?)?(Z|[+-]{_HOUR}(:?\d\d)?)"
"""ISO 8601 with a UTC offset (``Z`` or ``+02:00``); a time without an offset is refused. Only times that
both DuckDB's ``TIMESTAMPTZ`` and Python's :meth:`~datetime.datetime.fromisoformat` read alike pass it."""

_TIMESTAMP = re.compile(TIMESTAMP_PATTERN, re.ASCII)  # RE2, which DuckDB uses, reads \d as ASCII only

Check = Callable[["Field", Any, bool, Collection[str]], "str | None"]
"""(field, value, whether the key is present, the run's case keys) -> what is wrong, or None."""


@dataclass(frozen=True)
class Kind:
    """One kind of field value: the same rule as a SQL predicate and as a Python check."""

    name: str
    what: str
    """How a message names a good value (``a non-empty string``)."""
    sql: Callable[[str, "Field"], str]
    """A DuckDB predicate over the SQL expression of a present, non-null value; ``$cases`` is bound."""
    check: Check
    """What is wrong with a value, or None."""
    out: Callable[[str], str] = lambda v: _text(v)
    """The SQL that gives the bulk load's column value (text, DOUBLE, BOOLEAN, TIMESTAMPTZ, JSON text)."""
    carrier: Literal["JSON", "VARCHAR"] = "JSON"
    """The DuckDB type the value is read as from its line."""


def kind_of(value: Any) -> str:
    """A JSON value's type in words: ``a string``, ``a number``, ``null``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}[type(value)]


def _expected(f: Field, value: Any, present: bool) -> str:
    if f.required:
        return f"required: {f.what}, got {kind_of(value) if present else 'missing'}"
    return f"expected {f.what} or null, got {kind_of(value)}"


def _typed(test: Callable[[Any], bool]) -> Check:
    """A check on the value's JSON type alone, with the message every such kind gives."""
    return lambda f, value, present, cases: None if test(value) else _expected(f, value, present)


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _key(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _case(f: Field, value: Any, present: bool, cases: Collection[str]) -> str | None:
    if not _key(value):
        return _expected(f, value, present)
    if value not in cases:
        return f"{value!r} is not a case of this run; the run's cases are: {', '.join(sorted(cases)) or 'none'}"
    return None


def _finite(value: Any) -> bool:
    """A JSON number Python and DuckDB both hold as finite (``1e400`` parses as infinity; NaN is never a value)."""
    return _is_num(value) and (isinstance(value, int) or math.isfinite(value))


def _amount(f: Field, value: Any, present: bool, cases: Collection[str]) -> str | None:
    return None if _finite(value) and value >= 0 else f"expected {f.what} or null, got {value!r}"


def _timestamp(f: Field, value: Any, present: bool, cases: Collection[str]) -> str | None:
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        try:
            datetime.fromisoformat(value)
            return None
        except ValueError:
            pass
    return f"expected {f.what}, got {value!r}"


def _one_of(f: Field, value: Any, present: bool, cases: Collection[str]) -> str | None:
    if value in f.values:
        return None
    return f"{value!r} is not a {f.name}; use one of {', '.join(f.values)}{'' if f.required else ' or null'}"


def sql_in(values: str, v: str) -> str:
    """``v`` is in the SQL list ``values``. Not ``list_contains``: DuckDB plans that on a constant list
    as an IN, and a long IN as a hash join, which loses the file order of the rows."""
    return f"list_position({values}, {v}) IS NOT NULL"


def _sql_typed(*types: str) -> Callable[[str, Field], str]:
    """The SQL rule of a kind that only looks at the JSON type (``json_type`` names a JSON type)."""
    if len(types) == 1:
        return lambda v, f: f"json_type({v}) = '{types[0]}'"
    return lambda v, f: sql_in(sql_list(types), f"json_type({v})")


_sql_string, _sql_number = _sql_typed("VARCHAR"), _sql_typed("BIGINT", "UBIGINT", "HUGEINT", "DOUBLE")


def _sql_key(v: str, f: Field) -> str:
    return f"{_sql_string(v, f)} AND length({_text(v)}) > 0"


def _text(v: str) -> str:
    """The string a JSON string holds (SQL NULL for any other JSON value)."""
    return f"{v} ->> '$'"


def _double(v: str) -> str:
    return f"TRY_CAST({v} AS DOUBLE)"


def _timestamptz(v: str) -> str:
    return f"TRY_CAST({_text(v)} AS TIMESTAMPTZ)"


def _json_text(v: str) -> str:
    return f"CAST({v} AS VARCHAR)"


# The kinds: each rule in SQL and in Python, side by side.
# fmt: off
KEY = Kind("key", "a non-empty string", _sql_key, _typed(_key))
TEXT = Kind("text", "a string", _sql_string, _typed(lambda v: isinstance(v, str)))
CASE = Kind("case", "a non-empty string", lambda v, f: f"{_sql_key(v, f)} AND {sql_in('$cases', _text(v))}", _case)
NUMBER = Kind("number", "a number", lambda v, f: f"{_sql_number(v, f)} AND coalesce(isfinite({_double(v)}), true)",
              _typed(_finite), out=_double)
AMOUNT = Kind("amount", "a number >= 0",
              lambda v, f: f"{_sql_number(v, f)} AND coalesce({_double(v)} >= 0 AND isfinite({_double(v)}), true)",
              _amount, out=_double)
BOOLEAN = Kind("boolean", "a boolean", _sql_typed("BOOLEAN"), _typed(lambda v: isinstance(v, bool)),
               out=lambda v: f"TRY_CAST({v} AS BOOLEAN)")
TIMESTAMP = Kind("timestamp", "an ISO 8601 time with a UTC offset such as 2026-11-20T15:04:05Z",
                 lambda v, f: f"{_sql_string(v, f)} AND regexp_full_match({_text(v)}, {sql_str(TIMESTAMP_PATTERN)}) "
                              f"AND {_timestamptz(v)} IS NOT NULL",
                 _timestamp, out=_timestamptz)
ENUM = Kind("enum", "one of its values", lambda v, f: sql_in(sql_list(f.values), v), _one_of,
            out=lambda v: v, carrier="VARCHAR")  # sound because no value is JSON text (Field checks)
OBJECT = Kind("object", "an object", _sql_typed("OBJECT"), _typed(lambda v: isinstance(v, dict)), out=_json_text)
JSON = Kind("json", "any JSON value", lambda v, f: "true", lambda f, value, present, cases: None, out=_json_text)
LIST = Kind("list", "a list", lambda v, f: f"{v} IS NOT NULL", _typed(lambda v: isinstance(v, list)))
# fmt: on
# LIST's `v` is the line's value parsed as a list of the sub-model (NULL when it is not a list); the
# walkers then check its items, in SQL and in Python alike.


@dataclass(frozen=True)
class Field:
    """One key of a call-set object: its name, kind and documentation."""

    name: str
    kind: Kind
    doc: str
    """What the field means, for a person writing a call set."""
    required: bool = False
    """Missing or null is refused (otherwise either is the same as absent)."""
    values: tuple[str, ...] = ()
    """The allowed values of an ``ENUM`` field."""
    model: Model | None = None
    """The model of each item of a ``LIST`` field."""
    default: Any = None
    """What the bulk load stores for a missing or null value."""
    unique: bool = False
    """No two lines of a file may share the value; in a list item's model, no two items of one list."""
    label: str = ""
    """How messages name a good value, when the kind's words are not precise enough."""
    needs: str = ""
    """Another field of the model that must be present whenever this one is (an amount and its unit)."""

    def __post_init__(self) -> None:
        if (self.kind is ENUM) != bool(self.values) or (self.kind is LIST) != (self.model is not None):
            raise ValueError(f"field {self.name!r}: values go with ENUM, a model with LIST, and nothing else")
        for value in self.values:  # ENUM is read as VARCHAR: a non-string JSON value reads as its JSON text
            try:
                json.loads(value)
            except ValueError:
                continue
            raise ValueError(f"field {self.name!r}: value {value!r} is JSON text; ENUM values must not be")

    @property
    def what(self) -> str:
        """How messages name a good value."""
        return self.label or self.kind.what


@dataclass(frozen=True)
class Rule:
    """A rule across fields of one object, in SQL and in Python, tried once each field it reads is good.

    The two forms see the fields as the kinds give them: ``check`` the parsed JSON values (numbers are
    compared as floats, as DuckDB compares them), ``sql`` the object as a struct of carriers."""

    field: str
    """The field a message names (the one to fix)."""
    reads: tuple[str, ...]
    """The fields the rule compares; it holds when any of them is missing or null."""
    check: Callable[[dict[str, Any]], str | None]
    """What is wrong with an object whose ``reads`` are all present and good, or None."""
    sql: Callable[[Callable[[str], str]], str]
    """A DuckDB predicate, given a function from a field name to the SQL of its value as a DOUBLE."""


@dataclass(frozen=True)
class Model:
    """An object of a call set: its fields, and whether other keys are refused or ignored."""

    name: str
    fields: tuple[Field, ...]
    extra: Literal["forbid", "ignore"] = "forbid"
    rules: tuple[Rule, ...] = ()
    """Rules across fields, checked after each field's own."""
    names: tuple[str, ...] = field(init=False)
    """The field names, in declaration order."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(f.name for f in self.fields))
        for rule in self.rules:
            kinds = {f.name: f.kind for f in self.fields}
            if rule.field not in kinds or any(kinds.get(n) not in (NUMBER, AMOUNT) for n in rule.reads):
                raise ValueError(f"{self.name}: a rule names {rule.field!r} and compares {rule.reads}; "
                                 "it must name a field of the model and compare numbers")
        for f in self.fields:
            if f.needs and (f.needs not in self.names or f.needs == f.name):
                raise ValueError(f"{self.name}.{f.name}: needs {f.needs!r}, which is no other field of the model")
            if f.model and any(g.model for g in f.model.fields):
                raise ValueError(f"{self.name}.{f.name}: a list item's model may not hold a list itself")


def sql_str(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def sql_list(values: Collection[str]) -> str:
    """A SQL list literal of strings."""
    return "[" + ", ".join(sql_str(v) for v in values) + "]"
