"""Re-score: verdicts for every run in a 21-million-atom lake under one criteria, Polars vs hand-written DuckDB.

The lake: 20 teams x 5 dates of ``assertion_results`` Parquet files (zstd) -- 20,000 runs of 100 case
runs each, 10 assertion keys per outcome, 5% of case runs re-judged (a later, complete second
outcome, written into the next day's partition; a few share the first one's ``judged_at`` so the
``outcome_id`` tie-break matters), nulls concentrated on advisory keys and a few runs.

Measured, each repetition in a fresh interpreter (peak RSS is per method), interleaved, median of 3:
(a) ``run_verdicts(pl.scan_parquet(...), spec).collect()``; (b) one hand-written DuckDB SQL query over
the same files (latest outcome by ``arg_max`` over outcomes -- faster here than a ``row_number()``
window, measured -- then a semi-join and counted/required/group aggregates with FILTER). Both must
give the same verdict, counted, met and null counts and evaluator list for every run, or the
benchmark raises. The Polars side also builds the reasons, group structs and failed keys; DuckDB
does not.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from .common import WORK, Result

if TYPE_CHECKING:
    import polars as pl

TEAMS = 20
DATES = 5
RUNS_PER_PARTITION = 200
CASE_RUNS_PER_RUN = 100
CASES_PER_SUITE = 50
REJUDGED = 0.05
TIED = 0.02  # of the re-judged: same judged_at as the first outcome
REPEATS = 3

KEYS = [  # (key, mechanism, evaluator)
    ("no_raw_liquid", "structural", "assay:config"),
    ("every_variable_resolves", "structural", "assay:config"),
    ("answers_question", "rubric", "assay:judge:gpt-5-mini"),
    ("stays_in_role", "rubric", "assay:judge:gpt-5-mini"),
    ("offers_next_step", "rubric", "assay:judge:gpt-5-mini"),
    ("no_invented_commitment", "rubric", "assay:judge:gpt-5-mini"),
    ("uses_tool_correctly", "tool", "assay:transcript"),
    ("short_latency", "transcript", "assay:transcript"),
    ("mentions_business_hours", "transcript", "assay:transcript"),
    ("polite_greeting", "rubric", "assay:judge:gpt-5-mini"),
]
SPEC = {
    "required": ["no_raw_liquid", "every_variable_resolves"],
    "threshold": [
        {"keys": ["answers_question", "stays_in_role", "offers_next_step", "no_invented_commitment"], "min": 0.75},
        {"keys": ["uses_tool_correctly", "short_latency"], "min": 0.8},
    ],
    "ignore": ["mentions_business_hours"],
}

DUCKDB_SQL = """
WITH atoms AS (
    SELECT run_id, case_run_id, outcome_id, judged_at, assertion_key, met, evaluator
    FROM read_parquet('{glob}', hive_partitioning = true)
),
outcomes AS (
    SELECT case_run_id, outcome_id, max(judged_at) AS judged_at FROM atoms GROUP BY case_run_id, outcome_id
),
newest AS (  -- latest outcome per case run: greatest judged_at, then greatest outcome_id
    SELECT case_run_id, arg_max(outcome_id, (judged_at, outcome_id)) AS outcome_id FROM outcomes GROUP BY case_run_id
),
current AS (
    SELECT a.* FROM atoms a SEMI JOIN newest n ON a.case_run_id = n.case_run_id AND a.outcome_id = n.outcome_id
),
per_run AS (
    SELECT run_id,
        count(*) FILTER (WHERE assertion_key IN ('no_raw_liquid', 'every_variable_resolves', 'answers_question',
            'stays_in_role', 'offers_next_step', 'no_invented_commitment', 'uses_tool_correctly',
            'short_latency')) AS counted,
        count(*) FILTER (WHERE met AND assertion_key IN ('no_raw_liquid', 'every_variable_resolves',
            'answers_question', 'stays_in_role', 'offers_next_step', 'no_invented_commitment',
            'uses_tool_correctly', 'short_latency')) AS met,
        count(*) FILTER (WHERE met IS NULL AND assertion_key IN ('no_raw_liquid', 'every_variable_resolves',
            'answers_question', 'stays_in_role', 'offers_next_step', 'no_invented_commitment',
            'uses_tool_correctly', 'short_latency')) AS nulls,
        coalesce(list_sort(list(DISTINCT evaluator) FILTER (WHERE assertion_key IN ('no_raw_liquid',
            'every_variable_resolves', 'answers_question', 'stays_in_role', 'offers_next_step',
            'no_invented_commitment', 'uses_tool_correctly', 'short_latency'))), []) AS evaluators,
        count(*) FILTER (WHERE assertion_key = 'no_raw_liquid') AS r0_n,
        count(*) FILTER (WHERE assertion_key = 'no_raw_liquid' AND NOT met) AS r0_failed,
        count(*) FILTER (WHERE assertion_key = 'every_variable_resolves') AS r1_n,
        count(*) FILTER (WHERE assertion_key = 'every_variable_resolves' AND NOT met) AS r1_failed,
        count(*) FILTER (WHERE assertion_key IN ('answers_question', 'stays_in_role', 'offers_next_step',
            'no_invented_commitment')) AS g0_n,
        count(*) FILTER (WHERE met AND assertion_key IN ('answers_question', 'stays_in_role',
            'offers_next_step', 'no_invented_commitment')) AS g0_met,
        count(*) FILTER (WHERE assertion_key IN ('uses_tool_correctly', 'short_latency')) AS g1_n,
        count(*) FILTER (WHERE met AND assertion_key IN ('uses_tool_correctly', 'short_latency')) AS g1_met
    FROM current GROUP BY run_id
)
SELECT run_id,
    CASE
        WHEN nulls > 0 OR r0_n = 0 OR r1_n = 0 OR g0_n = 0 OR g1_n = 0 THEN 'error'
        WHEN r0_failed > 0 OR r1_failed > 0
            OR g0_met::DOUBLE / g0_n < 0.75::DOUBLE OR g1_met::DOUBLE / g1_n < 0.8::DOUBLE THEN 'fail'
        ELSE 'pass'
    END AS verdict,
    counted, met, nulls, evaluators
FROM per_run
"""


# --- the lake -------------------------------------------------------------------------------------------


class _Random:
    """Seeded random columns without a Python loop per row (``random.randbytes`` viewed through Arrow)."""

    def __init__(self, seed: int) -> None:
        import random

        self._rng = random.Random(seed)

    def _u64(self, n: int) -> "pl.Series":
        import polars as pl
        import pyarrow as pa

        return pl.from_arrow(pa.Array.from_buffers(pa.uint64(), n, [None, pa.py_buffer(self._rng.randbytes(8 * n))]))

    def uniform(self, n: int, name: str) -> "pl.Series":
        """``n`` floats in [0, 1)."""
        return ((self._u64(n) // 2048).cast(float) / 2.0**53).alias(name)

    def integers(self, n: int, low: int, high: int, name: str) -> "pl.Series":
        return (self._u64(n) % (high - low)).cast(int).alias(name) + low

    def ids(self, n: int, name: str) -> "pl.Series":
        """``n`` random 32-hex-character ids, like :func:`assay.core.ids.new_id`."""
        import polars as pl
        import pyarrow as pa

        raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(self._rng.randbytes(16 * n))])
        return pl.from_arrow(raw.cast(pa.binary())).bin.encode("hex").alias(name)


def _partition(rand: _Random, day: int) -> list["pl.DataFrame"]:
    """One (team, date) partition's atoms: the first outcomes, and the re-judged ones (written a day later)."""
    import polars as pl

    runs, per_run, n_keys = RUNS_PER_PARTITION, CASE_RUNS_PER_RUN, len(KEYS)
    n_cr = runs * per_run
    # Per-run behaviour: most runs clean; some with rare required failures, a few with rare counted nulls.
    run_frame = pl.DataFrame([
        pl.int_range(runs, eager=True).alias("run"),
        rand.ids(runs, "run_id"),
        pl.Series("req_fail", rand.uniform(runs, "x") < 0.3).cast(float) * (rand.uniform(runs, "y") * 0.018 + 0.002),
        rand.uniform(runs, "group_met") * 0.26 + 0.72,
        pl.Series("counted_null", rand.uniform(runs, "x") < 0.1).cast(float) * 0.002,
        pl.Series("other_judge", rand.uniform(runs, "x") < 0.2),  # these runs' rubrics judged by another model
    ])
    base = datetime(2026, 11, 1 + day, 6, 0, tzinfo=UTC)
    case_runs = pl.DataFrame([
        pl.int_range(n_cr, eager=True).alias("cr"),
        rand.ids(n_cr, "case_run_id"),
        rand.integers(n_cr, 0, 16 * 3600, "offset"),
        rand.uniform(n_cr, "u_rejudge"),
        rand.integers(n_cr, 3600, 48 * 3600, "later"),
        rand.uniform(n_cr, "u_tie"),
    ]).with_columns(
        run=pl.col("cr") // per_run,
        case_key=pl.format("case-{}", (pl.col("cr") % per_run % CASES_PER_SUITE).cast(pl.String).str.zfill(2)),
        judged_at=pl.lit(base) + pl.duration(seconds=pl.col("offset")),
    )
    rejudged = case_runs.filter(pl.col("u_rejudge") < REJUDGED).with_columns(
        judged_at=pl.col("judged_at") + pl.when(pl.col("u_tie") >= TIED).then(pl.duration(seconds=pl.col("later")))
        .otherwise(pl.duration(seconds=0))
    )
    keys = pl.DataFrame({
        "key": list(range(n_keys)),
        "assertion_id": [f"asrt-{k}" for k, _, _ in KEYS],
        "assertion_key": [k for k, _, _ in KEYS],
        "assertion_version": pl.Series([1 + (i % 3 == 0) for i in range(n_keys)], dtype=pl.Int32),
        "mechanism": [m for _, m, _ in KEYS],
        "evaluator": [e for _, _, e in KEYS],
    })
    frames = []
    for outcomes, judge in ((case_runs, None), (rejudged, "assay:judge:gpt-5")):
        n_out = outcomes.height
        n = n_out * n_keys
        atoms = (
            outcomes.select("run", "case_run_id", "case_key", "judged_at")
            .with_columns(rand.ids(n_out, "outcome_id"))
            .join(keys, how="cross")
            .join(run_frame, on="run", how="left")
            .with_columns(rand.uniform(n, "u"), rand.uniform(n, "u_null"), rand.ids(n, "result_id"),
                          rand.integers(n, 0, 3, "why"))
        )
        key = pl.col("key")
        p_met = pl.when(key < 2).then(1.0 - pl.col("req_fail")).when(key < 8).then(pl.col("group_met")).otherwise(0.9)
        p_null = pl.when(key < 8).then(pl.col("counted_null")).otherwise(0.08)
        frames.append(atoms.select(
            "result_id", "outcome_id", "run_id", "case_run_id", "case_key", "assertion_id", "assertion_key",
            "assertion_version", "mechanism",
            pl.when(pl.col("u_null") >= p_null).then(pl.col("u") < p_met).alias("met"),
            pl.col("u").round(3).alias("value"),
            pl.col("why").replace_strict([0, 1, 2], ["", "said the hours", "no tool call"], return_dtype=pl.String)
            .alias("reason"),
            pl.when(pl.col("mechanism") != "rubric").then("evaluator")
            .when(pl.lit(judge is not None)).then(pl.lit(judge))  # a re-judge uses a newer judge model
            .when("other_judge").then(pl.lit("assay:judge:claude-haiku"))
            .otherwise("evaluator").alias("evaluator"),
            "judged_at",
        ))
    return frames


def generate(root: Path, seed: int = 11) -> int:
    """Write the lake under ``root/assertion_results``; return the number of atoms."""
    rand = _Random(seed)
    total = 0
    for team in range(TEAMS):
        for day in range(DATES):
            first, rejudged = _partition(rand, day)
            half = first.height // 2
            parts = [(day, 0, first.head(half)), (day, 1, first.tail(-half))]
            parts.append((min(day + 1, DATES - 1), 9, rejudged))
            for d, i, frame in parts:
                date = (datetime(2026, 11, 1) + timedelta(days=d)).strftime("%Y-%m-%d")
                where = root / "assertion_results" / f"team_id=team-{team:02d}" / f"date={date}"
                where.mkdir(parents=True, exist_ok=True)
                frame.write_parquet(where / f"part-{day:02d}{i:02d}{team:028d}.parquet", compression="zstd")
                total += frame.height
    return total


# --- the two methods, each run in a fresh interpreter ----------------------------------------------


def _glob(root: Path) -> str:
    return str(root / "assertion_results" / "**" / "*.parquet")


def _polars(root: Path) -> tuple[float, "pl.DataFrame"]:
    import polars as pl

    from assay.core.criteria import CriteriaSpec
    from assay.transforms.verdicts import run_verdicts

    spec = CriteriaSpec.model_validate(SPEC)
    start = time.perf_counter()
    out = run_verdicts(pl.scan_parquet(_glob(root), hive_partitioning=True), spec).collect()
    return time.perf_counter() - start, out.select("run_id", "verdict", "counted", "met", "nulls", "evaluators")


def _duckdb(root: Path) -> tuple[float, "pl.DataFrame"]:
    import duckdb
    import polars as pl

    start = time.perf_counter()
    out = duckdb.connect().sql(DUCKDB_SQL.format(glob=_glob(root))).pl()
    seconds = time.perf_counter() - start
    return seconds, out.with_columns(pl.col("counted", "met", "nulls").cast(pl.Int64))


def _worker(method: str, root: str, out: str) -> None:
    seconds, frame = {"polars": _polars, "duckdb": _duckdb}[method](Path(root))
    frame.sort("run_id").write_parquet(out)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_mib": peak_kib / 1024}))


def _measure(method: str, root: Path, out: Path) -> dict:
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "bench.rescore", method, str(root), str(out)],
                          cwd=repo, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"rescore {method} worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _compare(polars: "pl.DataFrame", duckdb: "pl.DataFrame") -> bool:
    """True when both give the same row for every run; raises AssertionError naming the runs otherwise."""
    import polars as pl

    if polars.equals(duckdb):
        return True
    columns = [c for c in polars.columns if c != "run_id"]
    diff = polars.join(duckdb, on="run_id", how="full", suffix="_duckdb", coalesce=True).filter(
        pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"{c}_duckdb")) for c in columns)
    )
    raise AssertionError(f"rescore: Polars and DuckDB verdicts differ on {diff.height} run(s):\n{diff.head(10)}")


def run() -> list[Result]:
    import polars as pl

    root = WORK / "rescore"
    marker = root / "atoms.json"
    if marker.exists() and json.loads(marker.read_text()).get("shape") == _shape():
        atoms = json.loads(marker.read_text())["atoms"]
        generated = "reused"
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        atoms = generate(root)
        generated = f"generated in {time.perf_counter() - start:.0f}s"
        marker.write_text(json.dumps({"shape": _shape(), "atoms": atoms}))
    files = len(list((root / "assertion_results").rglob("*.parquet")))
    size = sum(p.stat().st_size for p in (root / "assertion_results").rglob("*.parquet"))

    samples: dict[str, list[dict]] = {"polars": [], "duckdb": []}
    for _ in range(REPEATS):  # interleaved, so both meet the same machine; every repetition compared
        for method in samples:
            samples[method].append(_measure(method, root, root / f"{method}.parquet"))
        got = {m: pl.read_parquet(root / f"{m}.parquet") for m in samples}
        same = _compare(got["polars"], got["duckdb"])

    t = {m: statistics.median(s["seconds"] for s in samples[m]) for m in samples}
    peak = {m: max(s["peak_mib"] for s in samples[m]) for m in samples}
    rate = {m: atoms / t[m] for m in samples}
    ratio = t["polars"] / t["duckdb"]
    counts = dict(got["polars"].group_by("verdict").len().sort("verdict").iter_rows())
    context = (f"{atoms:,} atoms in {files} zstd files ({size / 2**20:.0f} MiB, {generated}), "
               f"{got['polars'].height:,} runs; verdicts {counts}; fresh interpreter per repetition, "
               f"median of {REPEATS}")
    return [
        Result(
            name="rescore.polars", value=round(rate["polars"]), unit="atoms/s", baseline=round(rate["duckdb"]),
            ratio=round(ratio, 2), target="<= 1.5x the hand-written DuckDB query's time, same verdicts",
            met=ratio <= 1.5 and same,
            note=f"polars {t['polars']:.2f}s vs duckdb {t['duckdb']:.2f}s (query only: scan to collected frame, "
                 f"not interpreter start); {context}",
        ),
        Result(
            name="rescore.peak_memory", value=round(peak["polars"]), unit="MiB", baseline=round(peak["duckdb"]),
            ratio=round(peak["polars"] / peak["duckdb"], 2), target="reported", met=True,
            note=f"peak RSS (ru_maxrss) of the fresh interpreter running each query, max of {REPEATS} repetitions: "
                 f"polars {peak['polars']:.0f} MiB, duckdb {peak['duckdb']:.0f} MiB",
        ),
    ]


def _shape() -> list:
    return [TEAMS, DATES, RUNS_PER_PARTITION, CASE_RUNS_PER_RUN, len(KEYS), REJUDGED, TIED, 2]


if __name__ == "__main__":
    _worker(*sys.argv[1:])
