"""A lake written the way the product writes it, for the lake and re-score benchmarks.

One team, one suite of 50 cases with 10 suite-level assertions, consumer ``nightly_sweep`` with the
criteria below, and ``runs`` finalised runs of 100 case runs each, spread over 20 dates. With ``teams``
> 1 (the fleet benchmarks), each team has that suite, a second consumer (``publish_gate``) reads it too,
and the last key is a vendor's guardrail (``hamming:guardrail``, a ``vendor.evaluation`` measuring the
same behaviour as ``stays_in_role``); runs are dealt to the teams in turn. The catalog
rows (bundle, runs, stamped criteria) go in through the product's loader and in bulk; the lake is
written only through the product's judging write path (:func:`assay.storage.judgments.write_pass`):
one judging pass per ``runs_per_pass`` runs (outcomes, atoms and the re-score state, committed in the
manifest with the pass), then a re-judge pass over 5% of the case runs (a newer judge on the rubric
keys), which rewrites the current state of every run it touches, copy on write. Values are seeded:
most runs clean, some with rare required failures, a few with rare undetermined counted results.
"""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import sqlalchemy as sa
import yaml

CASES = 50
CASE_RUNS_PER_RUN = 100
DATES = 20
REJUDGED = 0.05
KEYS = [  # (key, evaluator)
    ("no_raw_liquid", "assay:structural"), ("every_variable_resolves", "assay:structural"),
    ("answers_question", "assay:judge:gpt-5-mini"), ("stays_in_role", "assay:judge:gpt-5-mini"),
    ("offers_next_step", "assay:judge:gpt-5-mini"), ("no_invented_commitment", "assay:judge:gpt-5-mini"),
    ("uses_tool_correctly", "assay:tool"), ("short_latency", "assay:transcript"),
    ("mentions_business_hours", "assay:transcript"), ("polite_greeting", "assay:judge:gpt-5-mini"),
]
SPEC = {
    "required": ["no_raw_liquid", "every_variable_resolves"],
    "threshold": [
        {"keys": ["answers_question", "stays_in_role", "offers_next_step", "no_invented_commitment"], "min": 0.75},
        {"keys": ["uses_tool_correctly", "short_latency"], "min": 0.8},
    ],
    "ignore": ["mentions_business_hours"],
}
SUITE = "bench/main"


def _random(rng: random.Random, n: int) -> pl.Series:
    """``n`` uniform floats in [0, 1), without a Python loop per value."""
    raw = pa.Array.from_buffers(pa.uint64(), n, [None, pa.py_buffer(rng.randbytes(8 * n))])
    return (pl.from_arrow(raw) // 2048).cast(pl.Float64) / 2.0**53  # type: ignore[operator]


def _ids(rng: random.Random, n: int) -> pl.Series:
    raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(rng.randbytes(16 * n))])
    return pl.from_arrow(raw.cast(pa.binary())).bin.encode("hex")  # type: ignore[union-attr]


VENDOR = ("polite_greeting", "hamming:guardrail", "stays_in_role")
"""With several teams: the key a vendor's guardrail judges, its evaluator, and our key for the same behaviour."""
PUBLISH = {"required": ["no_raw_liquid", "answers_question"]}


def team_ids(teams: int) -> list[str]:
    return ["bench"] if teams == 1 else [f"team-{i:02d}" for i in range(teams)]


def _keys(teams: int) -> list[tuple[str, str]]:
    return KEYS if teams == 1 else [(k, VENDOR[1] if k == VENDOR[0] else e) for k, e in KEYS]


def _assertion(key: str, teams: int) -> dict[str, Any]:
    if teams > 1 and key == VENDOR[0]:
        return {"key": key, "mechanism": "vendor.evaluation", "params": {"name": key, "same_behaviour_as": [VENDOR[2]]}}
    return {"key": key, "mechanism": "transcript.contains", "params": {"text": key}}


def _bundle(folder: Path, teams: int = 1) -> Path:
    (folder / "config.json").write_text('{"name": "bench", "prompt": "You answer calls.", "tools": []}')
    consumers = {"nightly_sweep": SPEC} if teams == 1 else {"nightly_sweep": SPEC, "publish_gate": PUBLISH}
    doc: dict[str, Any] = {
        "schema": "assay.bundle/v1",
        "consumers": [{"key": key, "description": key} for key in consumers],
        "teams": [{
            "id": team, "name": team,
            "cases": [{"key": f"case-{k:02d}", "title": f"Case {k}", "situation": {"caller": "A caller", "wants": "Help"}}
                      for k in range(CASES)],
            "suites": [{
                "key": "main", "name": "Main", "target": {"config": "config.json"},
                "cases": [f"case-{k:02d}" for k in range(CASES)],
                "assertions": [_assertion(key, teams) for key, _ in KEYS],
                "criteria": copy.deepcopy(consumers),  # no YAML aliases: a bundle refuses them
            }],
        } for team in team_ids(teams)],
    }
    path = folder / "bundle.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _runs(ws: Any, runs: int, case_runs_per_run: int, teams: int = 1, *, date: str | None = None,
          seed: int | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Insert ``runs`` finalised runs, dealt to the teams' suites, with their stamped criteria: one row per run
    (run_id, n, date, suite_id), and each suite's assertion ids (suite_id, k, assertion_id)."""
    from assay.storage.catalog import tables as t
    from assay.storage.catalog.runs import find_suite

    rng = random.Random(runs if seed is None else seed)
    now = datetime.now(UTC)
    with ws.engine.begin() as conn:
        suites = [find_suite(conn, f"{team}/main") for team in team_ids(teams)]
        criteria = {s.suite_id: conn.execute(sa.select(t.criteria).where(t.criteria.c.suite_id == s.suite_id)).all()
                    for s in suites}
        ids = {(row.suite_id, row.assertion_key): row.assertion_id
               for row in conn.execute(sa.select(t.assertions).where(t.assertions.c.suite_id.in_([s.suite_id for s in suites])))}
        frame = pl.DataFrame({"run_id": _ids(rng, runs), "n": pl.int_range(runs, eager=True)}).with_columns(
            date=pl.format("2026-10-{}", (pl.col("n") % DATES + 1).cast(pl.String).str.zfill(2)) if date is None
            else pl.lit(date),
            suite_id=pl.Series([s.suite_id for s in suites]).gather(pl.int_range(runs, eager=True) % len(suites)),
            team_id=pl.Series([s.team_id for s in suites]).gather(pl.int_range(runs, eager=True) % len(suites)),
        )
        rows = [{"run_id": r, "suite_id": suite, "team_id": team, "runner": "recorded", "status": "completed",
                 "finalised_at": now, "outcome": "pass", "case_count": case_runs_per_run, "case_runs": case_runs_per_run,
                 "lake_date": d, "created_at": datetime.fromisoformat(f"{d}T12:00:00+00:00")}
                for r, d, suite, team in frame.select("run_id", "date", "suite_id", "team_id").iter_rows()]
        conn.execute(t.runs.insert(), rows)
        conn.execute(t.run_criteria.insert(), [
            {"run_id": r["run_id"], "consumer_key": c.consumer_key, "criteria_id": c.criteria_id, "version": 1}
            for r in rows for c in criteria[r["suite_id"]]])
    assertions = pl.DataFrame([(suite, k, ids[suite, key]) for suite in criteria for k, (key, _) in enumerate(KEYS)],
                              schema={"suite_id": pl.String, "k": pl.Int64, "assertion_id": pl.String}, orient="row")
    return frame, assertions


def _results(rng: random.Random, outcomes: pl.DataFrame, behaviour: pl.DataFrame, judge: str | None,
             assertions: pl.DataFrame, teams: int = 1) -> pl.DataFrame:
    """One result per (case run of ``outcomes``, key), as a judging pass hands them to storage."""
    keys = pl.DataFrame({"k": list(range(len(KEYS))), "assertion_key": [k for k, _ in KEYS],
                         "evaluator": [e for _, e in _keys(teams)]})
    rows = (outcomes.select("case_run_id", "run_id").join(behaviour, on="run_id").join(keys, how="cross")
            .join(assertions, on=["suite_id", "k"]))
    n = rows.height
    u, u_null = _random(rng, n), _random(rng, n)
    k = pl.col("k")
    p_met = pl.when(k < 2).then(1.0 - pl.col("req_fail")).when(k < 8).then(pl.col("group_met")).otherwise(0.9)
    p_null = pl.when(k < 8).then(pl.col("counted_null")).otherwise(0.08)
    rubric = pl.col("evaluator").str.starts_with("assay:judge")
    return rows.with_columns(u=u, u_null=u_null).select(
        "case_run_id", "assertion_id", "assertion_key",
        pl.lit(1, pl.Int32).alias("assertion_version"), pl.lit("transcript.contains").alias("mechanism"),
        pl.format('{{"text": "{}"}}', pl.col("assertion_key")).alias("params"),
        pl.when(pl.col("u_null") >= p_null).then(pl.col("u") < p_met).alias("met"),
        pl.col("u").round(3).alias("value"), pl.lit(None, pl.String).alias("reason"),
        (pl.when(rubric).then(pl.lit(judge)).otherwise("evaluator") if judge else pl.col("evaluator")).alias("evaluator"),
        pl.lit(1, pl.Int32).alias("evaluator_version"),
    )


def _behaviour(rng: random.Random, frame: pl.DataFrame) -> pl.DataFrame:
    """Each run's seeded tendencies: rare required failures, a group met rate, rare undetermined results."""
    runs = frame.height
    return pl.DataFrame({
        "run_id": frame["run_id"], "suite_id": frame["suite_id"],
        "req_fail": (_random(rng, runs) < 0.3).cast(pl.Float64) * (_random(rng, runs) * 0.018 + 0.002),
        "group_met": _random(rng, runs) * 0.26 + 0.72,
        "counted_null": (_random(rng, runs) < 0.1).cast(pl.Float64) * 0.002,
    })


def _judge(ws: Any, rng: random.Random, frame: pl.DataFrame, assertions: pl.DataFrame, teams: int,
           runs_per_pass: int, case_runs_per_run: int) -> tuple[pl.DataFrame, int, int]:
    """Write the runs' judging passes (then a re-judge of 5% of their case runs); (case runs, passes, atoms)."""
    from assay.storage.judgments import write_pass
    from assay.transforms.rescore import key_counts

    behaviour = _behaviour(rng, frame)
    passes, atoms, all_case_runs = 0, 0, []
    for date, chunk in frame.group_by("date", maintain_order=True):
        chunk = chunk.sort("team_id", "n")  # a pass judges one team's runs (two at a team boundary)
        for start in range(0, chunk.height, runs_per_pass):
            these = chunk.slice(start, runs_per_pass)
            n = these.height * case_runs_per_run
            outcomes = these.select("run_id", "team_id").join(
                pl.DataFrame({"i": pl.int_range(case_runs_per_run, eager=True)}), how="cross").with_columns(
                case_run_id=_ids(rng, n),
                case_key=pl.format("case-{}", (pl.col("i") % CASES).cast(pl.String).str.zfill(2)),
                date=pl.lit(date[0]),
                evaluated=pl.lit(len(KEYS), pl.Int64), carried=pl.lit(0, pl.Int64),
            ).drop("i")
            results = _results(rng, outcomes, behaviour, None, assertions, teams)
            write_pass(ws.lake, outcomes, results, trigger="run", judge=None, summarise=key_counts)
            all_case_runs.append(outcomes)
            passes, atoms = passes + 1, atoms + results.height
    case_runs = pl.concat(all_case_runs)
    again = case_runs.filter(_random(rng, case_runs.height) < REJUDGED)
    for _, part in again.group_by("date", maintain_order=True):  # a re-judge of the suite, one pass per date
        results = _results(rng, part, behaviour, "assay:judge:gpt-5", assertions, teams)
        write_pass(ws.lake, part, results, trigger="rejudge", judge="gpt-5", summarise=key_counts)
        passes, atoms = passes + 1, atoms + results.height
    return case_runs, passes, atoms


def build(home: Path, runs: int, runs_per_pass: int = 10, seed: int = 7,
          case_runs_per_run: int = CASE_RUNS_PER_RUN, teams: int = 1) -> dict[str, Any]:
    """Write the workspace under ``home``; returns counts (runs, case runs, atoms, passes, seconds)."""
    import os
    import time

    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace
    from assay.storage.catalog.load import load_bundle

    home.mkdir(parents=True, exist_ok=True)
    os.environ["ASSAY_HOME"] = str(home)
    ws = open_workspace(Settings(home=home), create=True)
    load_bundle(ws.engine, _bundle(home, teams))
    started = time.perf_counter()
    frame, assertions = _runs(ws, runs, case_runs_per_run, teams)
    case_runs, passes, atoms = _judge(ws, random.Random(seed), frame, assertions, teams, runs_per_pass, case_runs_per_run)
    ws.close()
    return {"runs": runs, "case_runs": case_runs.height, "atoms": atoms, "current_atoms": case_runs.height * len(KEYS),
            "passes": passes, "seconds": round(time.perf_counter() - started, 1)}


def extend(home: Path, runs: int, teams: int, date: str, runs_per_pass: int = 10, seed: int = 11,
           case_runs_per_run: int = CASE_RUNS_PER_RUN) -> dict[str, Any]:
    """Add ``runs`` new finalised runs on ``date`` to a workspace :func:`build` wrote, judged the same way:
    the new evidence of a day; returns their counts."""
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace

    ws = open_workspace(Settings(home=home))
    frame, assertions = _runs(ws, runs, case_runs_per_run, teams, date=date, seed=seed)
    case_runs, passes, atoms = _judge(ws, random.Random(seed), frame, assertions, teams, runs_per_pass, case_runs_per_run)
    ws.close()
    return {"runs": runs, "case_runs": case_runs.height, "atoms": atoms, "passes": passes}
