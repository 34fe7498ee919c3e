"""Deterministic judging: every assignment (case run x assertion version) -> met, value, reason, evaluator.

This is the engine; it knows no mechanism by name. Assignments are grouped by distinct assertion
(mechanism, params); each distinct assertion is evaluated by its mechanism's registered evaluator
(:func:`assay.transforms.mechanisms.registered`) as Polars expressions over all the case runs it
applies to, and the parts are concatenated (row order is not kept). Nothing loops per row in Python:
Python loops run once per distinct assertion (and, inside evaluators, once per distinct artefact).

Precedence for every row (``tests/transforms/reference.py`` implements the same rules one row at a time):

1. the case run is not in ``case_runs`` -> met null (``assay:execution``);
2. the case run's status is ``error`` -> met null, "the case run did not execute: <error>"
   (``assay:execution``): a runner's failure to execute is an ERROR, never a FAIL;
3. the runner reported its own verdict on this assertion (an evaluation named ``assertion:<key>``) ->
   that verdict, whatever the mechanism (:mod:`.native`);
4. the runner does not support the mechanism -> met **false**, naming both (``assay:unsupported``);
5. the mechanism's own rules, in its evaluator (:mod:`assay.transforms.mechanisms`).
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from assay.core.mechanisms import Params

from .mechanisms import registered
from .mechanisms.evidence import Evidence
from .mechanisms.helpers import either, words
from .native import split_native

RESULT_SCHEMA: dict[str, pl.DataType] = {
    "met": pl.Boolean(), "value": pl.Float64(), "reason": pl.String(), "evaluator": pl.String(),
}
"""The columns judging adds to each assignment."""

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
    native, assignments = split_native(assignments, case_runs, evaluations)
    evidence = Evidence(case_runs, evaluations)
    distinct: dict[tuple[str, str], list[_Assertion]] = {}
    for assertion in _assertions(assignments, evidence):
        distinct.setdefault((assertion.keys["mechanism"], assertion.keys["params"]), []).append(assertion)
    mechanisms = registered()
    unknown = sorted({m for m, _ in distinct} - set(mechanisms))
    if unknown:
        raise ValueError(f"assignments name unknown mechanisms {unknown}; known: {', '.join(mechanisms)}")
    empty = _empty_result(assignments)
    parts = [empty, native.select(empty.columns).cast(empty.schema)]
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
            chosen = mechanisms[mechanism]
            result = chosen.evaluate(evidence, rows, _params(chosen.params, mechanism, params), judge)
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


def _params(model: type[Params], mechanism: str, params: str) -> Params:
    try:
        return model.model_validate(json.loads(params))
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
        .when(failed).then(words("the case run did not execute: ", either(pl.col("error"), "no reason given")))
        .otherwise(words(
            f'mechanism "{mechanism}" is not supported by runner "', runner, '"; ',
            runner.replace_strict(supports, default="it supports no mechanisms", return_dtype=pl.String),
        )),
        evaluator=pl.when(missing | failed).then(pl.lit("assay:execution")).otherwise(pl.lit("assay:unsupported")),
    )


__all__ = ["RESULT_SCHEMA", "evaluate"]
