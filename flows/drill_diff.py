"""``assay diff``: what changed between two runs of one suite, by consumer, by case and by assertion key.

Each run is read under its own stamped criteria (:func:`.judging.verdicts_for`), as ``assay verdicts``
reads it. A case run of one run is matched with the case run of the other that has the same case and
the same ``source_ref`` (a recorded call's id; empty when a case runs once), in order when several
share both. Reads the lake and the catalog; writes nothing.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from assay.core.criteria import UNSUPPORTED
from assay.core.errors import IncomparableError
from assay.storage.catalog.runs import get_run

from .drill import case_labels, current_results
from .judging import verdicts_for
from .workspace import Workspace

__all__ = ["diff"]

_MATCH = ["case_key", "source_ref", "_nth"]


def _matched(labels: pl.DataFrame) -> pl.DataFrame:
    """``labels`` with ``_nth``: the case run's place among its run's case runs of the same case and source_ref."""
    return labels.sort("run_id", "case_key", "source_ref", "case_run_id").with_columns(
        _nth=pl.int_range(pl.len()).over("run_id", "case_key", "source_ref"))


def _sides(frame: pl.DataFrame, a: str, b: str, on: list[str], value: str) -> pl.DataFrame:
    """One row per ``on`` with ``{value}_a`` and ``{value}_b`` (null on the side that lacks it)."""
    left = frame.filter(pl.col("run_id") == a).select(*on, pl.col(value).alias(f"{value}_a"))
    right = frame.filter(pl.col("run_id") == b).select(*on, pl.col(value).alias(f"{value}_b"))
    return left.join(right, on=on, how="full", coalesce=True, nulls_equal=True)


def _by_case(verdicts: list[dict[str, Any]], labels: pl.DataFrame, a: str, b: str) -> list[dict[str, Any]]:
    rows = [{"run_id": v["run_id"], "consumer": v["consumer"], "case_run_id": c["case_run_id"], "verdict": c["verdict"]}
            for v in verdicts for c in v.get("cases", [])]
    schema = {"run_id": pl.String, "consumer": pl.String, "case_run_id": pl.String, "verdict": pl.String}
    frame = pl.DataFrame(rows, schema=schema).join(labels.select("case_run_id", *_MATCH), on="case_run_id")
    sides = _sides(frame, a, b, ["consumer", *_MATCH], "verdict")
    return (sides.with_columns(changed=pl.col("verdict_a").ne_missing(pl.col("verdict_b")))
            .sort("case_key", "source_ref", "_nth", "consumer")
            .select("case_key", "source_ref", "consumer", a="verdict_a", b="verdict_b", changed="changed").to_dicts())


def _by_key(results: pl.DataFrame, labels: pl.DataFrame, a: str, b: str) -> list[dict[str, Any]]:
    atoms = results.select("run_id", "case_run_id", "assertion_key", "met", "reason", "evaluator").join(
        labels.select("case_run_id", *_MATCH), on="case_run_id")
    rates = atoms.group_by("run_id", "assertion_key").agg(
        results=pl.len().cast(pl.Int64), met=pl.col("met").sum().cast(pl.Int64),
        nulls=pl.col("met").is_null().sum().cast(pl.Int64),
        not_applicable=(pl.col("evaluator") == UNSUPPORTED).sum().cast(pl.Int64))
    on = [*_MATCH, "assertion_key"]
    both = _sides(atoms, a, b, on, "met").join(_sides(atoms, a, b, on, "reason"), on=on, nulls_equal=True)
    changed = both.filter(pl.col("met_a").ne_missing(pl.col("met_b"))).sort("case_key", "source_ref", "_nth")
    out = []
    for key in sorted(atoms["assertion_key"].unique().to_list()):
        side = {}
        for name, run in (("a", a), ("b", b)):
            found = rates.filter((pl.col("run_id") == run) & (pl.col("assertion_key") == key))
            side[name] = found.select("results", "met", "nulls", "not_applicable").row(0, named=True) if found.height else {
                "results": 0, "met": 0, "nulls": 0, "not_applicable": 0}
        flips = changed.filter(pl.col("assertion_key") == key).select(
            "case_key", "source_ref", "met_a", "met_b", "reason_a", "reason_b").to_dicts()
        out.append({"assertion_key": key, **side, "changed": flips})
    return out


def diff(ws: Workspace, run_a: str, run_b: str) -> dict[str, Any]:
    """What changed from run ``run_a`` to run ``run_b`` (ids or unique prefixes); both of one suite.

    ``consumers``: per consumer, its verdict (and criteria version, reason) in a and in b; ``cases``: per
    matched case run and consumer, its verdict in a and in b; ``keys``: per assertion key, how many
    results, met, undetermined and not applicable (its runner cannot evaluate it: never a failure) in a
    and in b, and the matched results whose ``met`` changed (with
    both reasons) as ``changed``. Consumer and case rows say whether they ``changed``.
    """
    ra, rb = get_run(ws.engine, run_a), get_run(ws.engine, run_b)
    if ra.suite_id != rb.suite_id:
        raise IncomparableError(
            f"runs of different suites cannot be compared: {ra.run_id} is of {ra.team_id}/{ra.suite_key}, "
            f"{rb.run_id} of {rb.team_id}/{rb.suite_key}; pick two runs of one suite "
            f"(`assay runs list --suite {ra.team_id}/{ra.suite_key}`)")
    a, b = ra.run_id, rb.run_id
    verdicts = verdicts_for(ws, [a, b] if a != b else [a], cases=True)
    labels = _matched(case_labels(ws, [a, b]))
    by_consumer: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        row = by_consumer.setdefault(v["consumer"], {"consumer": v["consumer"], "a": None, "b": None,
                                                     "criteria_a": None, "criteria_b": None,
                                                     "reason_a": None, "reason_b": None})
        for side, run in (("a", a), ("b", b)):
            if v["run_id"] == run:
                row[side], row[f"criteria_{side}"], row[f"reason_{side}"] = v["verdict"], v["criteria_version"], v["reason"]
    consumers = [{**c, "changed": c["a"] != c["b"]} for _, c in sorted(by_consumer.items())]
    return {
        "suite": f"{ra.team_id}/{ra.suite_key}", "run_a": a, "run_b": b,
        "consumers": consumers,
        "cases": _by_case(verdicts, labels, a, b),
        "keys": _by_key(current_results(ws, [a, b]), labels, a, b),
    }
