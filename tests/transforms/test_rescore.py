"""Re-scoring from per-(run, key) counts gives exactly :func:`run_verdicts`' verdicts (differential), with
and without an allowance of undetermined results."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assay.core.criteria import CriteriaSpec, ThresholdGroup, UndeterminedAllowance
from assay.core.ids import id_code, name_code
from assay.transforms.rescore import counted_run_verdicts, key_counts
from assay.transforms.verdicts import latest, run_verdicts

KEYS = ["a", "b", "c", "d", "e", "f"]
EVALUATORS = ["assay:transcript", "assay:judge:m1", "assay:judge:m2", "hamming:guardrail"]
T0 = datetime(2026, 11, 20, tzinfo=UTC)
REASONS = ["the case run did not execute: telephony: caller hung up", "vendor error: 503", "", "looks fine"]


def hexid(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def atoms(seed: int) -> pl.DataFrame:
    """Random history: runs of case runs, some re-judged (ties on judged_at too), keys missing here and there."""
    rng = random.Random(seed)
    rows = []
    for _ in range(rng.randint(1, 6)):
        run = hexid(rng)
        for _ in range(rng.randint(1, 8)):
            case_run = hexid(rng)
            keys = [k for k in KEYS if rng.random() < 0.8]
            for n in range(rng.choice([1, 1, 2, 3])):
                outcome, at = hexid(rng), T0 + timedelta(minutes=rng.choice([n, n, 0]))
                for k in keys + [k for k in ("a", "b", "f") if rng.random() < 0.25]:  # now and then a key twice
                    rows.append({
                        "result_id": hexid(rng), "outcome_id": outcome, "run_id": run, "case_run_id": case_run,
                        "case_key": "case", "assertion_key": k, "judged_at": at,
                        "met": rng.choice([True, True, True, False, None]), "evaluator": rng.choice(EVALUATORS),
                        "reason": rng.choice([*REASONS, None]),
                    })
    return pl.DataFrame(rows, schema_overrides={"met": pl.Boolean, "judged_at": pl.Datetime("us", "UTC")})


def specs() -> list[CriteriaSpec]:
    plain = [
        CriteriaSpec(required=["a", "b"], threshold=[ThresholdGroup(keys=["c", "d"], min=0.75)], ignore=["e"]),
        CriteriaSpec(required=["f"]),
        CriteriaSpec(threshold=[ThresholdGroup(keys=["a", "e", "f"], min=0.5), ThresholdGroup(keys=["b"], min=1.0)]),
        CriteriaSpec(required=["a"], threshold=[ThresholdGroup(keys=["a", "c"], min=0.6)], ignore=["c"]),
        CriteriaSpec(),
    ]
    allowances = [{"count": 0}, {"count": 1}, {"count": 4}, {"ratio": 0.2}, {"ratio": 1.0}]
    return plain + [s.model_copy(update={"allow_undetermined": UndeterminedAllowance.model_validate(a)})
                    for s in plain for a in allowances]


def coded(history: pl.DataFrame) -> pl.LazyFrame:
    current = latest(history.lazy()).collect()
    return current.with_columns(
        run=pl.col("run_id").map_elements(id_code, return_dtype=pl.Int64),
        case_run=pl.col("case_run_id").map_elements(id_code, return_dtype=pl.Int64),
        key=pl.col("assertion_key").map_elements(name_code, return_dtype=pl.Int64),
        evaluator_code=pl.col("evaluator").map_elements(name_code, return_dtype=pl.Int64),
    ).lazy()


@pytest.mark.parametrize("seed", range(40))
def test_verdicts_from_counts_agree_with_run_verdicts(seed: int) -> None:
    history = atoms(seed)
    names = {name_code(e): e for e in EVALUATORS}
    for spec in specs():
        expected = run_verdicts(history.lazy(), spec).collect()
        counts = key_counts(coded(history))
        got = counted_run_verdicts(counts, spec, {k: name_code(k) for k in KEYS}, names).collect()
        runs = pl.DataFrame({"run_id": history["run_id"].unique()}).with_columns(
            run=pl.col("run_id").map_elements(id_code, return_dtype=pl.Int64))
        got = got.join(runs, on="run").drop("run").select(expected.columns).sort("run_id")
        assert got.equals(expected), f"seed {seed}, spec {spec}:\n{got}\n{expected}"
