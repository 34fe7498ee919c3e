"""The call-set rules, line by line, in words a person can act on.

:mod:`.callset` loads a call set in bulk and only *detects* that something is wrong; this module says
what, where and what is allowed. It reads every line with :mod:`json`, so it is slow, and it only runs
when the bulk load has already refused the file.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Collection, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from assay.core.evidence import TURN_ROLES, VERDICTS
from assay.core.errors import RunnerError

FIELDS = (
    "call_id", "case", "started_at", "duration_ms", "cost_usd", "transcript", "tool_calls",
    "evaluations", "provider", "provider_ref", "provider_payload", "error",
)  # fmt: skip
TOOL_FIELDS = ("name", "arguments", "result", "is_error", "t")
EVALUATION_FIELDS = ("name", "evaluator", "verdict", "score", "scale_min", "scale_max", "rationale", "raw")
TIMESTAMP_PATTERN = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d{1,9})?)?(Z|z|[+-]\d\d(:?\d\d)?)"
"""``started_at``: ISO 8601 with a UTC offset (``Z`` or ``+02:00``); a time without an offset is refused."""

Problem = tuple[int | None, str, str]
"""(line number or None for the whole file, field path, what is wrong and what is allowed)."""


class CallSetError(RunnerError):
    """A call set that cannot be replayed. Nothing from it was reported."""

    def __init__(self, file: str, problems: list[Problem], more: bool = False):
        self.file, self.problems = file, problems
        lines = []
        for line, field, what in problems:
            where = ", ".join(part for part in (f"line {line}" if line else "", field) if part)
            lines.append(f"  {where}: {what}" if where else f"  {what}")
        tail = ["  ... and more; fix these first"] if more else []
        super().__init__("\n".join([f"call set {file} cannot be replayed (nothing was reported):", *lines, *tail]))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}[type(value)]


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unknown(obj: dict[str, Any], allowed: tuple[str, ...], where: str) -> Iterator[tuple[str, str]]:
    for key in obj:
        if key not in allowed:
            yield f"{where}{key}", f"unknown field; allowed fields are {', '.join(allowed)}"


def _typed(obj: dict[str, Any], key: str, where: str, what: str, ok: bool) -> Iterator[tuple[str, str]]:
    if key in obj and obj[key] is not None and not ok:
        yield f"{where}{key}", f"expected {what} or null, got {_kind(obj[key])}"


def check_call(call: Any, case_keys: Collection[str]) -> Iterator[tuple[str, str]]:
    """Every problem with one parsed line, as (field path, message)."""
    if not isinstance(call, dict):
        yield "", f"expected a JSON object (one call per line), got {_kind(call)}"
        return
    yield from _unknown(call, FIELDS, "")
    for key in ("call_id", "case"):
        if not isinstance(call.get(key), str) or not call[key]:
            got = "missing" if key not in call else _kind(call[key])
            yield key, f"required: a non-empty string, got {got}"
    if isinstance(call.get("case"), str) and call["case"] and call["case"] not in case_keys:
        keys = ", ".join(sorted(case_keys)) or "none"
        yield "case", f"{call['case']!r} is not a case of this run; the run's cases are: {keys}"
    started = call.get("started_at")
    if started is not None and not (isinstance(started, str) and _valid_timestamp(started)):
        yield "started_at", f"expected an ISO 8601 time with a UTC offset such as 2026-11-20T15:04:05Z, got {started!r}"
    for key in ("duration_ms", "cost_usd"):
        value = call.get(key)
        if value is not None and (not _is_num(value) or value < 0):
            yield key, f"expected a number >= 0 or null, got {value!r}"
    for key in ("provider", "provider_ref", "error"):
        yield from _typed(call, key, "", "a string", isinstance(call.get(key), str))
    yield from _typed(call, "provider_payload", "", "an object", isinstance(call.get("provider_payload"), dict))
    yield from _each(call, "transcript", _check_turn)
    yield from _each(call, "tool_calls", _check_tool)
    yield from _each(call, "evaluations", _check_evaluation)


def _valid_timestamp(text: str) -> bool:
    if not re.fullmatch(TIMESTAMP_PATTERN, text):
        return False
    try:
        datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return False
    return True


def _each(call: dict[str, Any], key: str, check: Any) -> Iterator[tuple[str, str]]:
    items = call.get(key)
    if items is None:
        return
    if not isinstance(items, list):
        yield key, f"expected a list or null, got {_kind(items)}"
        return
    for i, item in enumerate(items):
        where = f"{key}[{i}]"
        if not isinstance(item, dict):
            yield where, f"expected an object, got {_kind(item)}"
        else:
            yield from check(item, where + ".")


def _check_turn(turn: dict[str, Any], where: str) -> Iterator[tuple[str, str]]:
    # A turn's other keys (a vendor's confidence, word timings) are ignored, not refused: checking them
    # would cost the bulk load more than the whole rest of the validation.
    if turn.get("role") not in TURN_ROLES:
        yield f"{where}role", f"{turn.get('role')!r} is not a role; use one of {', '.join(TURN_ROLES)}"
    if not isinstance(turn.get("text"), str):
        yield f"{where}text", f"required: a string, got {'missing' if 'text' not in turn else _kind(turn['text'])}"
    yield from _typed(turn, "t", where, "a number of seconds", _is_num(turn.get("t")))


def _check_tool(tool: dict[str, Any], where: str) -> Iterator[tuple[str, str]]:
    yield from _unknown(tool, TOOL_FIELDS, where)
    if not isinstance(tool.get("name"), str) or not tool["name"]:
        got = "missing" if "name" not in tool else _kind(tool["name"])
        yield f"{where}name", f"required: a non-empty string, got {got}"
    yield from _typed(tool, "arguments", where, "an object", isinstance(tool.get("arguments"), dict))
    yield from _typed(tool, "is_error", where, "a boolean", isinstance(tool.get("is_error"), bool))
    yield from _typed(tool, "t", where, "a number of seconds", _is_num(tool.get("t")))


def _check_evaluation(ev: dict[str, Any], where: str) -> Iterator[tuple[str, str]]:
    yield from _unknown(ev, EVALUATION_FIELDS, where)
    for key in ("name", "evaluator"):
        if not isinstance(ev.get(key), str) or not ev[key]:
            yield f"{where}{key}", f"required: a non-empty string, got {'missing' if key not in ev else _kind(ev[key])}"
    if ev.get("verdict") is not None and ev["verdict"] not in VERDICTS:
        yield f"{where}verdict", f"{ev['verdict']!r} is not a verdict; use one of {', '.join(VERDICTS)} or null"
    for key in ("score", "scale_min", "scale_max"):
        yield from _typed(ev, key, where, "a number", _is_num(ev.get(key)))
    yield from _typed(ev, "rationale", where, "a string", isinstance(ev.get("rationale"), str))
    yield from _typed(ev, "raw", where, "an object", isinstance(ev.get("raw"), dict))


def explain(path: Path, case_keys: Collection[str], limit: int = 20) -> tuple[list[Problem], bool]:
    """Up to ``limit`` problems in the file, in line order, and whether there were more."""
    problems: list[Problem] = []
    first_line: dict[str, int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                problems.append((1, "", "the file starts with a byte order mark; save it as UTF-8 without one"))
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                call = json.loads(raw)
            except ValueError as exc:
                problems.append((number, "", f"not valid JSON ({exc}); each line must be one JSON object"))
                call = None
            else:
                problems.extend((number, field, what) for field, what in check_call(call, case_keys))
            call_id = call.get("call_id") if isinstance(call, dict) else None
            if isinstance(call_id, str) and call_id:
                if call_id in first_line:
                    used = f"{call_id!r} is already used on line {first_line[call_id]}; call ids must be unique"
                    problems.append((number, "call_id", used))
                else:
                    first_line[call_id] = number
            if len(problems) > limit:
                return problems[:limit], True
    return problems, False
