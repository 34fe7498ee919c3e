""""Latest outcome" and "verdict now" are defined once per language: the SQL views agree with Polars.

Seeded histories stand in for a property-testing library: several judging passes per case run, ties on
``judged_at`` (broken by the greatest ``outcome_id``, whatever order the files list them in), case runs
with a single outcome, one case run whose only outcome has no atoms, and runs nobody judged.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec, UndeterminedAllowance
from assay.storage import views
from assay.storage.fleet_views import FLEET, MACROS
from assay.storage.voice_views import VOICE
from assay.storage.lake import TABLES, Lake, lake_table
from assay.storage.query import connect
from assay.transforms.verdicts import latest, latest_outcomes, run_verdicts

T0 = datetime(2024, 5, 6, 12, tzinfo=UTC)
KEYS = ["greets", "books", "quotes", "declines", "short"]
SEEDS = range(6)


def _history(seed: int, runs: int = 5) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(outcomes, atoms) of ``runs`` runs; the last run has a case run whose only outcome holds no atom."""
    rng = random.Random(seed)
    outcomes: list[dict[str, Any]] = []
    atoms: list[dict[str, Any]] = []
    for r in range(runs):
        run_id = f"run-{seed}-{r}"
        for c in range(rng.randint(1, 4)):
            case_run_id = f"{run_id}-cr{c}"
            for _ in range(rng.choice([1, 1, 2, 3, 4])):
                outcome_id = f"{rng.getrandbits(64):016x}"
                judged_at = T0 + timedelta(seconds=rng.choice([0, 60, 60, 120, 120]))  # ties are frequent
                outcomes.append({
                    "outcome_id": outcome_id, "run_id": run_id, "case_run_id": case_run_id, "pass_id": outcome_id,
                    "trigger": "rejudge", "judged_at": judged_at, "evaluated": 1, "carried": 0, "judge": None,
                })
                for key in rng.sample(KEYS, rng.randint(1, len(KEYS))):
                    met = None if rng.random() < 0.04 else rng.random() < 0.7
                    atoms.append({
                        "result_id": f"{outcome_id}-{key}", "outcome_id": outcome_id, "run_id": run_id,
                        "case_run_id": case_run_id, "case_key": f"case-{c}", "assertion_id": key, "assertion_key": key,
                        "assertion_version": 1, "mechanism": "transcript", "met": met, "value": None, "reason": None,
                        "evaluator": rng.choice(["assay:transcript", "hamming:guardrail"]), "judged_at": judged_at,
                        "evaluator_version": 1, "judge_tokens_in": None, "judge_tokens_out": None,
                        "judge_cost_usd": None,
                    })
    lonely = f"run-{seed}-{runs - 1}-lonely"
    outcomes.append({**outcomes[-1], "outcome_id": f"{lonely}-o", "case_run_id": lonely, "pass_id": "p"})
    return (
        pl.DataFrame(outcomes, schema_overrides={"judge": pl.String}),
        pl.DataFrame(atoms, schema_overrides={"met": pl.Boolean, "value": pl.Float64, "reason": pl.String,
                                              "assertion_version": pl.Int32, "evaluator_version": pl.Int32,
                                              "judge_tokens_in": pl.Int32, "judge_tokens_out": pl.Int32,
                                              "judge_cost_usd": pl.Float64}),
    )


def _expected_latest(outcomes: pl.DataFrame) -> set[tuple[str, str]]:
    """The rule, written plainly: per case run, the greatest (judged_at, outcome_id)."""
    best: dict[str, tuple[datetime, str]] = {}
    for o in outcomes.iter_rows(named=True):
        mine = (o["judged_at"], o["outcome_id"])
        best[o["case_run_id"]] = max(best.get(o["case_run_id"], mine), mine)
    return {(case_run, outcome) for case_run, (_, outcome) in best.items()}


def _write_shuffled(lake: Lake, table: str, frame: pl.DataFrame, seed: int) -> None:
    """``frame`` as several files in several partitions, rows shuffled so file order decides nothing."""
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed).with_row_index("_i")
    for (part,), rows in shuffled.group_by(pl.col("_i") % 3, maintain_order=True):
        team = f"team-{part % 2}"
        lake.write(table, rows.drop("_i"), team_id=team, date=f"2024-05-0{part + 1}", origin="judging", ref=f"p{part}")


@pytest.mark.parametrize("seed", SEEDS)
def test_latest_outcomes_and_current_results_agree_with_polars(lake: Lake, seed: int) -> None:
    outcomes, atoms = _history(seed, runs=10)
    _write_shuffled(lake, "outcomes", outcomes, seed)
    _write_shuffled(lake, "assertion_results", atoms, seed)
    expected = _expected_latest(outcomes)
    assert any(  # the data holds a tie on the greatest judged_at, else the tie rule is untested
        n > 1 for n in outcomes.filter(pl.col("judged_at") == pl.col("judged_at").max().over("case_run_id"))
        .group_by("case_run_id").len()["len"]
    )
    con = connect(lake, catalog=True)

    in_sql = set(con.sql("SELECT case_run_id, outcome_id FROM latest_outcomes").fetchall())
    in_polars = set(latest_outcomes(lake.scan("outcomes")).select("case_run_id", "outcome_id").collect().rows())
    assert in_sql == in_polars == expected

    current_sql = views.DERIVED["current_results"][0]  # the view's rule (the lake may keep a table by that name)
    got = sorted(r[0] for r in con.sql(f"SELECT result_id FROM ({current_sql})").fetchall())
    want = latest(lake.scan("assertion_results")).select("result_id").collect()["result_id"].sort().to_list()
    assert got == want
    assert want == sorted(atoms.filter(pl.col("outcome_id").is_in([o for _, o in expected]))["result_id"])


def _spec(rng: random.Random) -> CriteriaSpec:
    keys = [*KEYS, "never_reported"] if rng.random() < 0.15 else KEYS
    ignore = rng.sample(keys, rng.randint(0, 1))
    required = [k for k in rng.sample(keys, rng.randint(0, 2)) if k not in ignore]
    groups = [{"keys": rng.sample(keys, rng.randint(1, 3)), "min": rng.choice([0.0, 0.5, 2 / 3, 0.75, 0.8, 1.0])}
              for _ in range(rng.randint(0, 2))]
    allowance = rng.choice([None, None, {"count": 0}, {"count": 1}, {"count": 3}, {"ratio": 0.1}, {"ratio": 0.5}])
    return CriteriaSpec.model_validate({"required": required, "threshold": groups, "ignore": ignore,
                                        **({"allow_undetermined": allowance} if allowance else {})})


@pytest.mark.parametrize("seed", SEEDS)
def test_verdicts_now_agree_with_run_verdicts(seed: int) -> None:
    rng = random.Random(1000 + seed)
    outcomes, atoms = _history(seed, runs=12)
    specs = {f"crit-{i}": _spec(rng) for i in range(8)}
    runs = [*outcomes["run_id"].unique().sort(), f"run-{seed}-unjudged"]
    stamped = [(run, f"consumer-{i}", criteria_id)
               for run in runs for i, criteria_id in enumerate(specs) if rng.random() < 0.6]
    con = duckdb.connect()
    con.register("outcomes", outcomes.with_columns(team_id=pl.lit("t"), date=pl.lit("2024-05-06")).to_arrow())
    con.register("assertion_results", atoms.with_columns(team_id=pl.lit("t"), date=pl.lit("2024-05-06")).to_arrow())
    con.register("runs", pl.DataFrame({"run_id": runs, "suite_id": "s", "team_id": "t"}).to_arrow())
    criteria = pl.DataFrame({"criteria_id": list(specs), "spec": [json.dumps(s.model_dump()) for s in specs.values()]})
    con.register("criteria", criteria.to_arrow())
    con.register("run_criteria", pl.DataFrame(
        stamped, schema=["run_id", "consumer_key", "criteria_id"], orient="row"
    ).with_columns(version=pl.lit(1), verdict=pl.lit("pass"), verdict_reason=pl.lit("stamped")).to_arrow())
    views.install(con, views.criteria_terms(criteria.to_arrow()),
                  provided=[*FLEET, *MACROS, *VOICE])  # no projected tables or case runs here

    got = {(r, c): rest for r, c, *rest in con.sql(
        "SELECT run_id, consumer_key, verdict, counted, met, nulls, changed FROM verdicts_now").fetchall()}
    assert set(got) == {(r, c) for r, c, _ in stamped}
    for criteria_id, spec in specs.items():
        polars = {v["run_id"]: v for v in run_verdicts(atoms.lazy(), spec).collect().to_dicts()}
        for run, consumer, _ in (s for s in stamped if s[2] == criteria_id):
            v = polars.get(run)
            want = [None] * 4 if v is None else [v["verdict"], v["counted"], v["met"], v["nulls"]]
            assert got[run, consumer][:4] == want, (run, spec, v and v["reason"])
            assert got[run, consumer][4] == (want[0] is not None and want[0] != "pass")
    seen = {v[0] for v in got.values()}
    assert {"pass", "fail", "error", None} <= seen  # every branch of the rules was exercised


def test_criteria_terms_count_each_key_once_per_term_and_never_an_ignored_key() -> None:
    spec = CriteriaSpec.model_validate({
        "required": ["a", "a", "b"], "ignore": ["c"],
        "threshold": [{"keys": ["b", "c", "b", "d"], "min": 0.5}, {"keys": ["c"], "min": 1.0}],
    })
    criteria = pl.DataFrame({"criteria_id": ["k"], "spec": [json.dumps(spec.model_dump())]}).to_arrow()
    rows = pl.from_arrow(views.criteria_terms(criteria)).rows()
    assert rows == [("k", "required", 0, "a", None, None, None), ("k", "required", 1, "b", None, None, None),
                    ("k", "threshold", 0, "b", 0.5, None, None), ("k", "threshold", 0, "d", 0.5, None, None)]
    allowing = spec.model_copy(update={"allow_undetermined": UndeterminedAllowance(ratio=0.25)})
    criteria = pl.DataFrame({"criteria_id": ["k"], "spec": [json.dumps(allowing.model_dump())]}).to_arrow()
    assert {r[-2:] for r in pl.from_arrow(views.criteria_terms(criteria)).rows()} == {(None, 0.25)}


def test_a_lake_table_keeps_its_name_over_a_derived_view(tmp_path: Path, engine: sa.Engine) -> None:
    fields = [pa.field("x", pa.string(), nullable=False),
              pa.field("reported_at", pa.timestamp("us", tz="UTC"), nullable=False)]
    shadow = lake_table("verdicts_now", 1, pa.schema(fields), natural_key=["x"])
    lake = Lake(str(tmp_path / "lake"), engine, tables={**TABLES, "verdicts_now": shadow})
    con = connect(lake, catalog=True)
    assert [r[0] for r in con.sql("DESCRIBE verdicts_now").fetchall()] == ["x", "reported_at", "team_id", "date"]
    assert con.sql("SELECT count(*) FROM latest_outcomes").fetchall() == [(0,)]  # the other views are there
