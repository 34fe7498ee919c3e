"""Deterministic judging: every assignment (case run x assertion version) -> met, value, reason, evaluator.

Vectorised with Polars. Assignments are grouped by distinct assertion (mechanism, params); each
distinct assertion is evaluated by its mechanism's function (:data:`EVALUATORS`) as Polars
expressions over all the case runs it applies to, and the parts are concatenated (row order is not
kept). Nothing loops per row in Python: Python loops run once per distinct assertion and once per
distinct compiled artefact (many case runs share one config). Per-turn and per-call tests run over
the turns / calls flattened once per batch, so a test never spans two turns.

Precedence for every row (:mod:`.reference` implements the same rules one row at a time):

1. the case run is not in ``case_runs`` -> met null (``assay:execution``);
2. the case run's status is ``error`` -> met null, "the case run did not execute: <error>"
   (``assay:execution``): a vendor's failure is an ERROR, never a FAIL;
3. the runner does not support the mechanism -> met **false**, naming both (``assay:unsupported``);
4. the mechanism's own rules, in the functions below.

Matching rules: ``contains`` is a literal substring of one turn; ``regex`` searches each turn on its
own (Rust's regex; :data:`assay.core.mechanisms.REGEX_SYNTAX`); ``case_insensitive`` matches under
Unicode simple case folding (the regex engines' ``(?i)``). Measured numbers that are null or NaN
count as not recorded (met null). Reasons quote parameters in double quotes and never print a
measured float (``value`` carries it), so their text is the same whichever engine computed them.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from assay.core.mechanisms import MECHANISMS, Params, validate_params

RESULT_SCHEMA: dict[str, pl.DataType] = {
    "met": pl.Boolean(), "value": pl.Float64(), "reason": pl.String(), "evaluator": pl.String(),
}
NO_JUDGE = "no judge configured: set ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL"
AWAITING_JUDGE = "awaiting the judge"
NO_TRANSCRIPT = "the case run recorded no transcript"
NO_TOOL_CALLS = "the case run recorded no tool calls"

Evaluator = Callable[["Evidence", pl.Series, Any, "str | None"], pl.DataFrame]
"""(evidence, case-run rows, validated params, judge model) -> met, value, reason, evaluator per row."""


KEY_COLUMNS = ("assertion_id", "assertion_key", "assertion_version", "mechanism", "params")
"""Assignment columns that are the same for every case run of one assertion version."""


@dataclass(frozen=True)
class _Assertion:
    """One assertion version's assignments: its key columns, their positions, and their case runs' rows."""

    keys: dict[str, Any]
    index: pl.Series
    rows: pl.Series


def evaluate(
    case_runs: pl.DataFrame,
    evaluations: pl.DataFrame,
    assignments: pl.DataFrame,
    supported: Mapping[str, frozenset[str]],
    judge: str | None = None,
) -> pl.DataFrame:
    """One row per assignment: its columns plus ``met``, ``value``, ``reason``, ``evaluator`` (in no particular order)."""
    for column in ("case_run_id", "mechanism", "params"):
        if column not in assignments.columns or assignments[column].null_count():
            raise ValueError(f"every assignment needs a {column}")
    evidence = Evidence(case_runs, evaluations)
    distinct: dict[tuple[str, str], list[_Assertion]] = {}
    for assertion in _assertions(assignments, evidence):
        distinct.setdefault((assertion.keys["mechanism"], assertion.keys["params"]), []).append(assertion)
    unknown = sorted({m for m, _ in distinct} - set(EVALUATORS))
    if unknown:
        raise ValueError(f"assignments name unknown mechanisms {unknown}; known: {', '.join(EVALUATORS)}")
    parts = [_empty_result(assignments)]
    for (mechanism, params), assertions in distinct.items():
        owner = pl.concat([pl.repeat(k, a.rows.len(), dtype=pl.UInt32, eager=True) for k, a in enumerate(assertions)])
        index = pl.concat([a.index for a in assertions])
        rows = pl.concat([a.rows for a in assertions])
        blocked = rows.is_null() | evidence.failed.gather(rows) | ~evidence.supports(mechanism, supported).gather(rows)
        blocked = blocked.fill_null(True)
        results = []
        if blocked.any():
            results.append(_blocked(evidence, assignments, index.filter(blocked), rows.filter(blocked), mechanism, supported)
                           .with_columns(_owner=owner.filter(blocked), _i=index.filter(blocked)))
            owner, index, rows = owner.filter(~blocked), index.filter(~blocked), rows.filter(~blocked)
        if rows.len():
            result = EVALUATORS[mechanism](evidence, rows, _params(mechanism, params), judge)
            results.append(result.select(_typed()).with_columns(_owner=owner, _i=index))
        parts.extend(_with_assignment_columns(assignments, pl.concat(results), assertions))
    return pl.concat(parts, how="vertical")


def _empty_result(assignments: pl.DataFrame) -> pl.DataFrame:
    return assignments.clear().with_columns(pl.lit(None, dtype).alias(name) for name, dtype in RESULT_SCHEMA.items())


def _with_assignment_columns(assignments: pl.DataFrame, results: pl.DataFrame, assertions: list[_Assertion]) -> list[pl.DataFrame]:
    """Each assertion's results with its assignment columns: key columns repeated, the rest picked by position."""
    out = []
    for k, assertion in enumerate(assertions):
        mine = results if len(assertions) == 1 else results.filter(pl.col("_owner") == k)
        n = mine.height
        columns = {
            name: (pl.Series(name, [assertion.keys[name]], dtype=dtype).new_from_index(0, n) if name in assertion.keys
                   else assignments[name].gather(mine["_i"]))
            for name, dtype in assignments.schema.items()
        }
        out.append(pl.DataFrame(columns).hstack(mine.select(*RESULT_SCHEMA)))
    return out


def _typed() -> list[pl.Expr]:
    return [pl.col(name).cast(dtype) for name, dtype in RESULT_SCHEMA.items()]


def _assertions(assignments: pl.DataFrame, evidence: Evidence) -> list[_Assertion]:
    """The assignments grouped by assertion version, each with its case runs' rows (null: not in the batch).

    Grouped by a hash of the key columns, then checked against the values themselves: a hash
    collision falls back to grouping by the values (slower, same answer).
    """
    keys = [name for name in KEY_COLUMNS if name in assignments.columns]
    located = assignments.select("case_run_id", _i=pl.int_range(pl.len(), dtype=pl.UInt32), _g=_group_hash(keys))
    located = located.join(evidence.ids, on="case_run_id", how="left")  # order is not needed: _i keeps it
    groups = located.group_by("_g").agg("_i", "_row")
    out = []
    for index, rows in zip(groups["_i"], groups["_row"], strict=True):
        values = {name: assignments[name][index[0]] for name in keys}
        if not all(assignments[name].gather(index).eq_missing(values[name]).all() for name in keys):
            return _assertions_exactly(assignments, evidence, keys)
        out.append(_Assertion(values, index, rows))
    return out


def _group_hash(keys: list[str]) -> pl.Expr:
    """Equal key values, equal hash (unequal ones may collide: :func:`_assertions` checks)."""
    return functools.reduce(operator.xor, [pl.col(name).hash(seed) for seed, name in enumerate(keys, start=1)])


def _assertions_exactly(assignments: pl.DataFrame, evidence: Evidence, keys: list[str]) -> list[_Assertion]:
    located = assignments.select("case_run_id", *keys, _i=pl.int_range(pl.len(), dtype=pl.UInt32))
    groups = located.join(evidence.ids, on="case_run_id", how="left").group_by(keys).agg("_i", "_row")
    return [_Assertion({name: groups[name][k] for name in keys}, groups["_i"][k], groups["_row"][k])
            for k in range(groups.height)]


def _params(mechanism: str, params: str) -> Params:
    try:
        return validate_params(mechanism, json.loads(params))
    except ValueError as exc:  # json.JSONDecodeError and pydantic's ValidationError are both ValueErrors
        raise ValueError(f"assignment params {params!r} are not valid for mechanism {mechanism!r}: {exc}") from None


def _blocked(evidence: Evidence, assignments: pl.DataFrame, index: pl.Series, rows: pl.Series, mechanism: str,
             supported: Mapping[str, frozenset[str]]) -> pl.DataFrame:
    """Results for rows decided before the mechanism runs: missing evidence, errors, unsupported."""
    supports = {runner: (f"it supports: {', '.join(sorted(m))}" if m else "it supports no mechanisms")
                for runner, m in supported.items()}
    frame = pl.DataFrame({
        "case_run_id": assignments["case_run_id"].gather(index),
        "missing": rows.is_null(), "failed": evidence.failed.gather(rows).fill_null(False),
        "runner": evidence.case_runs["runner"].gather(rows), "error": evidence.case_runs["error"].gather(rows),
    })
    missing, failed = pl.col("missing"), pl.col("failed")
    runner = pl.col("runner").fill_null("")
    return frame.select(
        met=pl.when(missing | failed).then(None).otherwise(False),
        value=pl.lit(None, pl.Float64),
        reason=pl.when(missing).then(words("case run ", pl.col("case_run_id"), " is not in this batch of evidence"))
        .when(failed).then(words("the case run did not execute: ", _or(pl.col("error"), "no reason given")))
        .otherwise(words(
            f'mechanism "{mechanism}" is not supported by runner "', runner, '"; ',
            runner.replace_strict(supports, default="it supports no mechanisms", return_dtype=pl.String),
        )),
        evaluator=pl.when(missing | failed).then(pl.lit("assay:execution")).otherwise(pl.lit("assay:unsupported")),
    )


# ----------------------------------------------------------------------------------------- helpers

def words(*parts: str | pl.Expr) -> pl.Expr:
    """Concatenate literal text and columns (cast to text) into one reason."""
    return pl.concat_str([pl.lit(x) if isinstance(x, str) else x.cast(pl.String) for x in parts])


def _or(text: pl.Expr, default: str) -> pl.Expr:
    """``text``, or ``default`` when it is null or empty."""
    return pl.when(text.is_null() | (text == "")).then(pl.lit(default)).otherwise(text)


def number(x: float) -> str:
    """A parameter as text: ``5000`` rather than ``5000.0``."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _verdict(frame: pl.DataFrame, met: pl.Expr, value: pl.Expr, if_null: pl.Expr | str, if_false: pl.Expr | str,
             evaluator: str) -> pl.DataFrame:
    """met, value, and a reason when met is null or false, evaluated over ``frame``."""
    as_expr = (lambda r: pl.lit(r) if isinstance(r, str) else r)
    m = pl.col("met")
    return frame.with_columns(met=met, value=value).select(
        "met", "value",
        reason=pl.when(m.is_null()).then(as_expr(if_null)).when(~m).then(as_expr(if_false)),
        evaluator=pl.lit(evaluator),
    )


def _found_by(case_insensitive: bool, text: str, pattern: bool) -> Callable[[pl.Expr], pl.Expr]:
    """A test on a text column: contains ``text`` literally, or matches it as a pattern."""
    if not pattern and not case_insensitive:
        return lambda column: column.str.contains(text, literal=True)
    regex = text if pattern else pl.escape_regex(text)
    return lambda column: column.str.contains(("(?i)" if case_insensitive else "") + regex)


def _ignoring_case(case_insensitive: bool) -> str:
    return " (ignoring case)" if case_insensitive else ""


# ----------------------------------------------------------------------------------------- evidence

class Evidence:
    """The case runs, with what judging derives from them computed once, on first use, and cached.

    Per-turn and per-call tests run over flattened turns / calls (one row each, ``_pos`` = the case
    run's position), so every turn is tested on its own and nothing is matched across turns. When
    an assertion covers most case runs, the whole batch is tested once and the answers picked;
    otherwise only its case runs are flattened.
    """

    def __init__(self, case_runs: pl.DataFrame, evaluations: pl.DataFrame):
        ids = case_runs["case_run_id"]
        if ids.is_duplicated().any():
            dupes = ids.filter(ids.is_duplicated()).unique().sort().head(5).to_list()
            raise ValueError(f"case_runs has duplicate case_run_id values, e.g. {dupes}: one row per case run")
        self.case_runs = case_runs
        self.height = case_runs.height
        self.ids = case_runs.select("case_run_id", _row=pl.int_range(pl.len(), dtype=pl.UInt32))
        self.failed = (case_runs["status"] == "error").fill_null(False)
        self.evaluations = evaluations.join(self.ids, on="case_run_id")
        self._supports: dict[str, pl.Series] = {}
        self._turns: dict[str | None, pl.DataFrame] = {}
        self._calls: pl.DataFrame | None = None
        self._turn_counts: pl.Series | None = None
        self._artefacts: tuple[pl.DataFrame, pl.Series] | None = None

    def column(self, name: str) -> pl.Series:
        if name == "_artefact":
            return self._parsed_artefacts()[1]
        return self.case_runs[name]

    def turn_counts(self) -> pl.Series:
        if self._turn_counts is None:
            self._turn_counts = self.case_runs["transcript"].list.len()
        return self._turn_counts

    def supports(self, mechanism: str, supported: Mapping[str, frozenset[str]]) -> pl.Series:
        """Per case run: does its runner support ``mechanism``?"""
        if mechanism not in self._supports:
            runners = [runner for runner, mechanisms in supported.items() if mechanism in mechanisms]
            self._supports[mechanism] = self.case_runs["runner"].is_in(runners).fill_null(False)
        return self._supports[mechanism]

    def _covers(self, rows: pl.Series) -> bool:
        return rows.len() * 2 >= self.height

    def any_turn(self, rows: pl.Series, role: str | None, test: Callable[[pl.Expr], pl.Expr]) -> pl.Series:
        """Per row: does any turn (said by ``role``) pass ``test`` on its text? Null without a transcript."""
        if self._covers(rows):
            if role not in self._turns:
                self._turns[role] = _flat_turns(self.case_runs["transcript"], role)
            return _any(self._turns[role], test, self.case_runs["transcript"]).gather(rows)
        transcript = self.case_runs["transcript"].gather(rows)
        return _any(_flat_turns(transcript, role), test, transcript)

    def count_calls(self, rows: pl.Series, matching: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.Series:
        """Per row: how many tool calls ``matching`` keeps. Null without tool-call evidence."""
        if self._covers(rows):
            if self._calls is None:
                self._calls = _flat_calls(self.case_runs["tool_calls"])
            return _count(matching(self._calls), self.case_runs["tool_calls"]).gather(rows)
        calls = self.case_runs["tool_calls"].gather(rows)
        return _count(matching(_flat_calls(calls)), calls)

    def artefacts(self) -> pl.DataFrame:
        """One row per distinct artefact (null included), parsed: see :func:`_parse_artefact`."""
        return self._parsed_artefacts()[0]

    def _parsed_artefacts(self) -> tuple[pl.DataFrame, pl.Series]:
        if self._artefacts is None:
            distinct = self.case_runs["artefact"].unique(maintain_order=True)
            table = pl.DataFrame([{"artefact": text, **_parse_artefact(text)} for text in distinct.to_list()],
                                 schema={"artefact": pl.String, **ARTEFACT_SCHEMA})
            table = table.with_row_index("_a")
            index = self.case_runs.select("artefact").join(
                table.select("artefact", "_a"), on="artefact", how="left", nulls_equal=True, maintain_order="left",
            )["_a"]
            self._artefacts = table, index
        return self._artefacts


def _flat_turns(transcript: pl.Series, role: str | None) -> pl.DataFrame:
    turns = transcript.to_frame("turn").with_row_index("_pos").explode("turn", keep_nulls=False)
    turns = turns.filter(pl.col("turn").is_not_null()).unnest("turn")
    if role is not None:
        turns = turns.filter(pl.col("role") == role)
    return turns.select("_pos", pl.col("text").fill_null(""))


def _flat_calls(tool_calls: pl.Series) -> pl.DataFrame:
    calls = tool_calls.to_frame("call").with_row_index("_pos").explode("call", keep_nulls=False)
    return calls.filter(pl.col("call").is_not_null()).unnest("call").select("_pos", "name", "arguments")


def _any(turns: pl.DataFrame, test: Callable[[pl.Expr], pl.Expr], lists: pl.Series) -> pl.Series:
    hits = turns.lazy().filter(test(pl.col("text"))).select("_pos").collect()["_pos"]  # lazy: runs on every core
    found = pl.repeat(False, lists.len(), dtype=pl.Boolean, eager=True).scatter(hits, True)
    return _null_where_missing(found, lists)


def _count(calls: pl.DataFrame, lists: pl.Series) -> pl.Series:
    per_row = calls.group_by("_pos").len()  # calls: already narrowed to the matching ones
    counts = pl.repeat(0, lists.len(), dtype=pl.UInt32, eager=True).scatter(per_row["_pos"], per_row["len"])
    return _null_where_missing(counts, lists)


def _null_where_missing(values: pl.Series, lists: pl.Series) -> pl.Series:
    frame = pl.DataFrame({"v": values, "recorded": lists.is_not_null()})
    return frame.select(pl.when("recorded").then("v")).to_series()


PLACEHOLDER = r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}"
"""A ``{{ variable }}`` placeholder in a compiled prompt."""

ARTEFACT_SCHEMA: dict[str, pl.DataType] = {
    "prompt": pl.String(), "prompt_problem": pl.String(), "variables_problem": pl.String(),
    "unresolved_n": pl.Int64(), "unresolved": pl.String(),
    "tools_problem": pl.String(), "tools": pl.List(pl.String()), "tools_text": pl.String(),
}


def _parse_artefact(text: str | None) -> dict[str, Any]:
    """What the structural mechanisms need from one compiled config (``*_problem`` says why it is unusable)."""
    import re

    out: dict[str, Any] = dict.fromkeys(ARTEFACT_SCHEMA)
    try:
        config = None if text is None else json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        config = None
    if not isinstance(config, dict):
        problem = "the case run has no compiled artefact" if text is None else "the compiled artefact is not a JSON object"
        return {**out, "prompt_problem": problem, "variables_problem": problem, "tools_problem": problem}
    prompt = config.get("prompt")
    variables = {} if config.get("variables") is None else config["variables"]
    if not isinstance(prompt, str):
        out["prompt_problem"] = out["variables_problem"] = "the compiled artefact has no prompt"
    elif not isinstance(variables, dict):
        out["prompt"], out["variables_problem"] = prompt, "the compiled artefact's variables are not an object"
    else:
        names = list(dict.fromkeys(re.findall(PLACEHOLDER, prompt)))
        unresolved = [name for name in names if _is_empty(variables.get(name))]
        out.update(prompt=prompt, unresolved_n=len(unresolved), unresolved=", ".join(unresolved))
    tools = [] if config.get("tools") is None else config["tools"]
    if not isinstance(tools, list):
        out["tools_problem"] = "the compiled artefact's tools are not a list"
    else:
        names = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
        out.update(tools=names, tools_text=", ".join(names) or "none")
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and len(value) == 0)


# ----------------------------------------------------------------------------------------- structural

def _structural(evidence: Evidence, rows: pl.Series, compute: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
    """Compute once per distinct artefact, then pick each case run's result."""
    artefacts = evidence.artefacts()
    return compute(artefacts)[evidence.column("_artefact").gather(rows)]


def clause_present(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    found = _found_by(p.case_insensitive, p.clause, pattern=False)
    failure = f'the compiled prompt does not contain the clause "{p.clause}"{_ignoring_case(p.case_insensitive)}'
    return _structural(evidence, rows, lambda a: _verdict(
        a, pl.when(pl.col("prompt_problem").is_null()).then(found(pl.col("prompt"))), pl.lit(None, pl.Float64),
        pl.col("prompt_problem"), failure, "assay:structural"))


def variables_resolve(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    ok = pl.col("variables_problem").is_null()
    return _structural(evidence, rows, lambda a: _verdict(
        a, pl.when(ok).then(pl.col("unresolved_n") == 0), pl.when(ok).then(pl.col("unresolved_n").cast(pl.Float64)),
        pl.col("variables_problem"), words("unresolved variables: ", pl.col("unresolved")), "assay:structural"))


def tool_attached(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    ok = pl.col("tools_problem").is_null()
    return _structural(evidence, rows, lambda a: _verdict(
        a, pl.when(ok).then(pl.col("tools").list.contains(pl.lit(p.tool))), pl.lit(None, pl.Float64),
        pl.col("tools_problem"), words(f'no tool named "{p.tool}" is attached; attached: ', pl.col("tools_text")),
        "assay:structural"))


# ----------------------------------------------------------------------------------------- transcript

def _text_check(evidence: Evidence, rows: pl.Series, p: Any, negate: bool, pattern: bool) -> pl.DataFrame:
    found = evidence.any_turn(rows, p.role, _found_by(p.case_insensitive, p.text, pattern))
    what = f'matches the pattern "{p.text}"' if pattern else f'contains "{p.text}"'
    by, case = (f" by the {p.role}" if p.role else ""), _ignoring_case(p.case_insensitive)
    failure = f"a turn{by} {what}{case}" if negate else f"no turn{by} {what}{case}"
    met = ~pl.col("found") if negate else pl.col("found")
    return _verdict(found.to_frame("found"), met, pl.lit(None, pl.Float64), NO_TRANSCRIPT, failure, "assay:transcript")


def contains(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _text_check(evidence, rows, p, negate=False, pattern=False)


def not_contains(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _text_check(evidence, rows, p, negate=True, pattern=False)


def regex(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _text_check(evidence, rows, p, negate=False, pattern=True)


def max_turns(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    turns = pl.col("turns")
    frame = evidence.turn_counts().gather(rows).to_frame("turns")
    return _verdict(frame, turns <= p.max, turns.cast(pl.Float64), NO_TRANSCRIPT,
                    words("the conversation took ", turns, f" turns; at most {p.max} allowed"), "assay:transcript")


def _cap(evidence: Evidence, rows: pl.Series, column: str, cap: float, missing: str, over_cap: str) -> pl.DataFrame:
    measured = pl.col(column).fill_nan(None)
    frame = evidence.column(column).gather(rows).to_frame(column)
    return _verdict(frame, measured <= cap, measured, missing, over_cap, "assay:transcript")


def max_latency(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _cap(evidence, rows, "duration_ms", p.max_ms, "the case run recorded no duration",
                f"the case run took longer than {number(p.max_ms)} ms")


def max_cost(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _cap(evidence, rows, "cost_usd", p.max_usd, "the case run recorded no cost",
                f"the case run cost more than {number(p.max_usd)} USD")


# ----------------------------------------------------------------------------------------- tool calls

def _argument_matches(key: str, expected: str | int | float | bool) -> pl.Expr:
    """A JSON-typed test on one call's arguments: top-level ``key`` holds a value equal to ``expected``.

    JSONPath filters compare typed (``"1"`` is not ``1``; ``1`` is ``1.0``); strings are compared by
    extraction instead, because JSONPath string literals cannot carry every character.
    """
    arguments = pl.col("arguments")
    as_list = pl.concat_str(pl.lit("["), arguments, pl.lit("]"))
    if isinstance(expected, bool):
        return as_list.str.json_path_match(f"$[?(@.{key} == {str(expected).lower()})]").is_not_null()
    if isinstance(expected, int | float):
        return as_list.str.json_path_match(f"$[?(@.{key} == {float(expected)!r})]").is_not_null()
    is_string = as_list.str.json_path_match(f"$[?(@.{key} >= '')]").is_not_null()
    return is_string & (arguments.str.json_path_match(f"$.{key}") == expected)


def _tool_check(evidence: Evidence, rows: pl.Series, p: Any, negate: bool) -> pl.DataFrame:
    def matching(calls: pl.DataFrame) -> pl.DataFrame:
        calls = calls.filter(pl.col("name") == p.tool)
        for key, expected in (p.arguments or {}).items():  # eager, one filter at a time: JSON is parsed only
            # for calls that passed the earlier filters (a lazy plan would fuse them into one predicate)
            calls = calls.filter(_argument_matches(key, expected).fill_null(False))
        return calls

    counts = evidence.count_calls(rows, matching).to_frame("calls")
    with_args = f" with arguments {json.dumps(p.arguments, sort_keys=True)}" if p.arguments else ""
    n = pl.col("calls")
    if negate:
        return _verdict(counts, n == 0, n.cast(pl.Float64), NO_TOOL_CALLS,
                        words(f'"{p.tool}" was called{with_args} ', n, " time(s)"), "assay:tool")
    return _verdict(counts, n > 0, n.cast(pl.Float64), NO_TOOL_CALLS, f'"{p.tool}" was not called{with_args}', "assay:tool")


def called(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _tool_check(evidence, rows, p, negate=False)


def not_called(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    return _tool_check(evidence, rows, p, negate=True)


# ----------------------------------------------------------------------------------------- vendor

def vendor_evaluation(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    """Map the runner's own evaluation named ``p.name`` onto met + value; its evaluator is the vendor's."""
    named = (
        evidence.evaluations.filter(pl.col("name") == p.name)
        .group_by("_row")
        .agg(pl.len().alias("n"), pl.col("verdict", "score", "evaluator", "rationale").first())
    )
    found = rows.to_frame("_row").join(named, on="_row", how="left", maintain_order="left")
    n, verdict, score = pl.col("n"), pl.col("verdict"), pl.col("score").fill_nan(None)
    rationale = _or(pl.col("rationale"), "no rationale given")
    single = (n == 1).fill_null(False)
    undecided = verdict.is_not_null() & ~verdict.is_in(["pass", "fail"])  # error, unknown or unrecognised
    met = pl.when(~single | undecided).then(None)
    if p.pass_score is not None:
        met = met.when(score.is_not_null()).then(score >= p.pass_score)
    met = met.when(verdict == "pass").then(True).when(verdict == "fail").then(False).otherwise(None)
    below = f"the vendor's score is below pass_score {number(p.pass_score)}" if p.pass_score is not None else ""
    reason = (
        pl.when(n.is_null()).then(pl.lit(f'the runner reported no evaluation named "{p.name}"'))
        .when(n > 1).then(words("the runner reported ", n, f' evaluations named "{p.name}"; expected one'))
        .when(verdict == "error").then(words("the vendor reported an error: ", rationale))
        .when(verdict == "unknown").then(pl.lit("the vendor could not reach a verdict (unknown)"))
        .when(undecided).then(words('the vendor reported an unrecognised verdict "', verdict, '"'))
        .when(met.is_null() & score.is_not_null())
        .then(pl.lit("the vendor gave a score but no verdict: set pass_score on the assertion to map the score onto met"))
        .when(met.is_null()).then(pl.lit("the vendor reported neither a verdict nor a score"))
        .when(~met & score.is_not_null() & pl.lit(p.pass_score is not None)).then(pl.lit(below))
        .when(~met).then(words("the vendor judged it failed: ", rationale))
    )
    value = (
        pl.when(~single).then(None).when(score.is_not_null()).then(score)
        .when(verdict == "pass").then(1.0).when(verdict == "fail").then(0.0)
    )
    return found.select(
        met=met, value=value, reason=reason,
        evaluator=pl.when(single).then(pl.col("evaluator")).otherwise(pl.lit("assay:vendor")),
    )


# ----------------------------------------------------------------------------------------- rubric

def rubric(evidence: Evidence, rows: pl.Series, p: Any, judge: str | None) -> pl.DataFrame:
    """Judged by our judge model later: here only marked as waiting (or as impossible without a judge)."""
    reason, evaluator = (NO_JUDGE, "assay:judge") if judge is None else (AWAITING_JUDGE, f"assay:judge:{judge}")
    n = rows.len()
    return pl.DataFrame({
        "met": pl.repeat(None, n, dtype=pl.Boolean, eager=True), "value": pl.repeat(None, n, dtype=pl.Float64, eager=True),
        "reason": pl.repeat(reason, n, dtype=pl.String, eager=True),
        "evaluator": pl.repeat(evaluator, n, dtype=pl.String, eager=True),
    })


EVALUATORS: dict[str, Evaluator] = {
    "structural.clause_present": clause_present,
    "structural.variables_resolve": variables_resolve,
    "structural.tool_attached": tool_attached,
    "transcript.contains": contains,
    "transcript.not_contains": not_contains,
    "transcript.regex": regex,
    "transcript.max_turns": max_turns,
    "transcript.max_latency": max_latency,
    "transcript.max_cost": max_cost,
    "tool.called": called,
    "tool.not_called": not_called,
    "vendor.evaluation": vendor_evaluation,
    "rubric": rubric,
}
"""One evaluator per mechanism; every mechanism in :data:`assay.core.mechanisms.MECHANISMS` has one."""

if set(EVALUATORS) != set(MECHANISMS):  # pragma: no cover - a new mechanism needs an evaluator here
    raise ImportError(f"judge.EVALUATORS and MECHANISMS differ: {sorted(set(EVALUATORS) ^ set(MECHANISMS))}")

__all__ = ["AWAITING_JUDGE", "EVALUATORS", "NO_JUDGE", "RESULT_SCHEMA", "Evidence", "evaluate"]
