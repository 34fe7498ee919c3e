"""Call sets: files of recorded calls, replayed by the ``recorded`` runner as evidence.

A call set is a JSON Lines file (UTF-8), one recorded call per line; blank lines are ignored::

    {"call_id": "call-0001", "case": "no-heat-elderly-caller",
     "started_at": "2026-11-20T15:04:05Z", "duration_ms": 84210, "cost_usd": 0.231,
     "vendor_cost": 0.231, "vendor_cost_unit": "USD",
     "transcript": [{"role": "agent", "text": "Northside Heating, this is Sam.", "t": 0.0, "end_t": 1.8},
                    {"role": "caller", "text": "My furnace stopped overnight.", "t": 2.1, "end_t": 3.9}],
     "tool_calls": [{"name": "check_service_area", "arguments": {"zip": "60614"},
                     "result": {"in_area": false}, "is_error": false, "t": 14.2}],
     "evaluations": [{"name": "handles_out_of_area", "evaluator": "hamming:guardrail",
                      "verdict": "pass", "score": null, "scale_min": null, "scale_max": null,
                      "rationale": "Told the caller plainly and offered a referral."}],
     "provider": "hamming", "provider_ref": "tcr_123", "provider_payload": {"...": "..."}}

The format is defined once, here: :data:`LINE` and its sub-models declare every field with its kind
and documentation. Only the required fields must be present; any other may be omitted or null. Any
other top-level, tool-call or evaluation key is refused (a turn's other keys are ignored). An
evaluation's score must lie on its scale, its scale must run upwards, and its name must be unique
within the call (:data:`EVALUATION`'s rules). The whole file is refused if one line is bad: the error
names the file, each bad line, its call id, the field and what is allowed. The rules run in two forms derived from these declarations: :func:`check_line` says what is
wrong with one line, and :func:`scan_sql` finds the bad lines of a whole file at once.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .callset_kinds import (
    AMOUNT, BOOLEAN, CASE, ENUM, JSON, KEY, LIST, NUMBER, OBJECT, TEXT, TIMESTAMP, Field, Model, Rule,
)  # fmt: skip
from .bundle_input import InputLimits, InputProblem, dotted, hostile_values, iter_lines, utf8
from .callset_kinds import kind_of
from .callset_rules import problems
from .callset_rules import scan_sql as _scan_sql
from .evidence import TURN_ROLES, VERDICTS

__all__ = [
    "EVALUATION", "EVALUATION_FIELDS", "FIELDS", "LINE", "TOOL_CALL", "TOOL_FIELDS", "TURN", "Problem",
    "check_line", "explain", "scan_sql",
]  # fmt: skip

_SECONDS = "a number of seconds"

TURN = Model("turn", extra="ignore", fields=(
    # A turn's other keys (a vendor's confidence, word timings) are ignored, not refused: checking them
    # would cost the bulk load more than the whole rest of the validation.
    Field("role", ENUM, "Who spoke: the caller, the agent under test, or system.", required=True, values=TURN_ROLES),
    Field("text", TEXT, "What was said.", required=True),
    Field("t", NUMBER, "Seconds from the start of the call when the turn began.", label=_SECONDS),
    Field("end_t", NUMBER, "Seconds from the start of the call when the turn ended; without it on the caller's "
          "turns, response latency cannot be measured.", label=_SECONDS),
))  # fmt: skip

TOOL_CALL = Model("tool call", fields=(
    Field("name", KEY, "The tool the agent called.", required=True),
    Field("arguments", OBJECT, "The arguments it passed (``{}`` when omitted).", default={}),
    Field("result", JSON, "The tool's result as returned to the agent, any JSON value."),
    Field("is_error", BOOLEAN, "The tool call failed (false when omitted).", default=False),
    Field("t", NUMBER, "Seconds from the start of the call.", label=_SECONDS),
))  # fmt: skip


def _scale_order(e: dict[str, Any]) -> str | None:
    """A scale runs upwards: a reversed one would read every score as off the scale, or upside down."""
    if float(e["scale_min"]) <= float(e["scale_max"]):
        return None
    return (f"scale_min {e['scale_min']!r} is above scale_max {e['scale_max']!r}; the scale runs from scale_min "
            "up to scale_max: swap them")


def _on_scale(e: dict[str, Any]) -> str | None:
    """A score lies on its scale, which the lake also requires: refused here, it is refused at ``assay load``
    rather than after the run reported its first batches."""
    low, high = float(e["scale_min"]), float(e["scale_max"])
    if low > high or low <= float(e["score"]) <= high:  # a reversed scale is scale_min's problem
        return None
    return (f"{e['score']!r} is outside the scale {e['scale_min']!r}..{e['scale_max']!r}; give the score on the "
            "vendor's scale, or the scale the vendor scored on")


EVALUATION = Model("evaluation", rules=(
    Rule("scale_min", ("scale_min", "scale_max"), _scale_order, lambda v: f"{v('scale_min')} <= {v('scale_max')}"),
    Rule("score", ("score", "scale_min", "scale_max"), _on_scale,
         lambda v: f"{v('scale_min')} > {v('scale_max')} OR {v('score')} BETWEEN {v('scale_min')} AND {v('scale_max')}"),
), fields=(
    Field("name", KEY, "The vendor's name for what it judged (a guardrail, a scorer); unique within the call.",
          required=True, unique=True),
    Field("evaluator", KEY, "Who judged, as ``<vendor>:<what>`` such as ``hamming:guardrail``.", required=True),
    Field("verdict", ENUM, "The vendor's categorical verdict, if it gives one.", values=VERDICTS),
    Field("score", NUMBER, "The vendor's score, if it gives one, on ``scale_min``..``scale_max`` (inclusive) "
          "when both are given."),
    Field("scale_min", NUMBER, "The low end of the vendor's scale, at most ``scale_max``."),
    Field("scale_max", NUMBER, "The high end of the vendor's scale."),
    Field("rationale", TEXT, "Why, in the vendor's words."),
    Field("raw", OBJECT, "The vendor's evaluation object as received; secrets in it are redacted."),
))  # fmt: skip

LINE = Model("call", fields=(
    Field("call_id", KEY, "Unique within the file; becomes the case run's ``source_ref``.", required=True,
          unique=True),
    Field("case", CASE, "The ``case_key`` of one of the run's cases. A case with no line gets one ERROR case "
          "run saying so, so a gap in the recording is never read as a pass.", required=True),
    Field("started_at", TIMESTAMP, "When the call started: ISO 8601 with a UTC offset (``Z`` or ``+02:00``)."),
    Field("duration_ms", AMOUNT, "How long the call took, in milliseconds."),
    Field("cost_usd", AMOUNT, "What the call cost, in US dollars; only a figure the vendor gives in dollars."),
    Field("vendor_cost", AMOUNT, "What the call cost as the vendor reports it, in the vendor's own unit "
          "(``vendor_cost_unit``): never converted, so credits are never read as dollars.", needs="vendor_cost_unit"),
    Field("vendor_cost_unit", KEY, "The unit of ``vendor_cost`` as the vendor bills it, such as ``USD`` or "
          "``credits``.", needs="vendor_cost"),
    Field("transcript", LIST, "The conversation, turn by turn.", model=TURN),
    Field("tool_calls", LIST, "The tools the agent called, with their results.", model=TOOL_CALL),
    Field("evaluations", LIST, "The vendor's own judgments, kept as evidence on the vendor's scale and read as "
          "met (from the verdict) and a 0-1 value (from the score on its scale, else the verdict); never mapped "
          "onto our assertions.", model=EVALUATION),
    Field("provider", TEXT, "Who recorded the call (``hamming``)."),
    Field("provider_ref", TEXT, "The provider's id for the call."),
    Field("provider_payload", OBJECT, "The provider's record of the call; secrets in it are redacted before "
          "anything is stored."),
    Field("error", TEXT, "The call failed on the vendor's side: its case run has status ``error`` with this "
          "message (an ERROR, never a FAIL)."),
))  # fmt: skip
"""One line of a call set: a recorded call."""

FIELDS = LINE.names
TOOL_FIELDS = TOOL_CALL.names
EVALUATION_FIELDS = EVALUATION.names

Problem = tuple[int | None, str, str]
"""(line number or None for the whole file, field path, what is wrong and what is allowed)."""


def check_line(
    obj: Any, case_keys: Collection[str], max_nesting: int = InputLimits.max_nesting
) -> list[tuple[str, str]]:
    """Every problem with one parsed line, as (field path, message); empty when the line is good.

    ``case_keys`` are the run's cases. A rule across lines (a unique field) is :func:`explain`'s.
    Values no catalog can hold alike (NaN, infinities, NUL characters, nesting past ``max_nesting``)
    are refused anywhere in the line, free JSON fields included, before the model's rules.
    """
    if not isinstance(obj, dict):
        return [("", f"expected a JSON object (one call per line), got {kind_of(obj)}")]
    hostile = hostile_values(obj, max_nesting)
    if hostile:
        return [(dotted(loc), what) for loc, what in hostile]
    return list(problems(LINE, obj, "", case_keys))


def scan_sql() -> str:
    """The DuckDB query that checks and converts a whole call set at once (the bulk form of the rules).

    Parameters ``$path`` (the file) and ``$cases`` (the run's case keys, a list); one row per line in
    file order: ``bad``, then one column per field of :data:`LINE` as the bulk load stores it. Lines
    sharing a unique field are not flagged: check those across the rows.
    """
    return _scan_sql(LINE)


def explain(
    path: Path, case_keys: Collection[str], limit: int = 20, limits: InputLimits | None = None
) -> tuple[list[Problem], bool]:
    """Up to ``limit`` problems in the file, in line order, and whether there were more.

    It reads every line with :mod:`json`, so it is slow: ``assay load`` runs it once on every call
    set a bundle names, and the bulk load only once it has found the file bad, to say what, where and
    what is allowed. No line longer than ``limits.max_call_bytes`` is held in memory.
    """
    limits = limits or InputLimits()
    found: list[Problem] = []
    unique = [f for f in LINE.fields if f.unique]
    first_line: dict[tuple[str, str], int] = {}
    cap = limits.max_call_bytes
    with path.open("rb") as handle:
        for number, raw, length in iter_lines(handle, cap):
            call = None
            if raw is None:
                what = f"the line is {length:,} bytes, over the cap of {cap:,}; shorten it or raise "
                what += "ASSAY_MAX_CALL_BYTES"
                found.append((number, "", what))
            elif raw.strip():
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    found.append((1, "", "the file starts with a byte order mark; save it as UTF-8 without one"))
                    raw = raw[len(codecs.BOM_UTF8) :]
                call = _parse(number, raw, found)
            if call is not None:
                named = _call_named(call)
                found.extend((number, field, what + named)
                             for field, what in check_line(call, case_keys, limits.max_nesting))  # fmt: skip
            for f in unique if isinstance(call, dict) else ():
                value = call.get(f.name)
                if value is None or f.kind.check(f, value, True, case_keys):
                    continue
                seen = (f.name, json.dumps(value, sort_keys=True))
                if seen in first_line:
                    what = f"{value!r} is already used on line {first_line[seen]}; "
                    found.append((number, f.name, what + f"{f.name.replace('_', ' ')}s must be unique"))
                else:
                    first_line[seen] = number
            if len(found) > limit:
                return found[:limit], True
    return found, False


def _call_named(call: Any) -> str:
    """`` (call 'c-7')`` when the line names its call, so a problem can be found by the id the vendor shows too."""
    call_id = call.get("call_id") if isinstance(call, dict) else None
    return f" (call {call_id!r})" if isinstance(call_id, str) and call_id else ""


def _parse(number: int, raw: bytes, found: list[Problem]) -> Any:
    """One line as JSON (None, with the problem added to ``found``, when it is not UTF-8 JSON)."""
    try:
        return json.loads(utf8(raw))
    except InputProblem as exc:
        found.append((number, "", str(exc).replace(" (line 1)", "")))
    except RecursionError:
        found.append((number, "", "nested too deeply to parse; flatten it (the cap is ASSAY_MAX_NESTING levels)"))
    except ValueError as exc:
        found.append((number, "", f"not valid JSON ({exc}); each line must be one JSON object"))
    return None
