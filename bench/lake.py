"""The lake's benchmarks: reading one run, re-scoring a suite as a CLI process, the re-score's floor, 100 M atoms.

Every lake here is written by :mod:`.lakegen` through the product's judging write path (thousands of
runs, one judging pass per 10 runs, then a re-judge of 5% of the case runs), on the embedded
default (SQLite catalog, local lake). Baselines are measured in the same run over the same files:

- ``lake.read_one_run``: the atoms of one run (``Lake.read``, pruned by the manifest), lakes of 1 k
  and 10 k runs, median over 20 runs picked at random; the 10 k / 1 k time ratio must be <= 1.5.
- ``rescore.cli``: ``assay rescore`` as a CLI process over >= 20 M atoms, before and after
  compaction, against a hand-written DuckDB query in a process of its own over the same manifest's
  files (the coded re-score state: counted / met / null counts and the verdict per run); the verdicts
  must be equal for every run and the time ratio <= 1.5.
- ``rescore.cli_import_floor``: a process that only imports what the command imports, against the
  baseline's whole run: how much of the 1.5x the imports leave for the work.
- ``rescore.peak_memory``: the CLI process's peak RSS, <= 2 GB.
- ``rescore.vs_ideal``: the product's re-score (in-process: ``assay.flows.rescoring.rescore``, reading
  the catalog and the manifest, computing every verdict with its reasons) against the physical floor,
  DuckDB over one compact file of only the current atoms, integer-coded, aggregated in two stages;
  <= 3x.
- ``lake.rescore_100m`` (its own benchmark, ``python -m bench lake_100m``): a re-score over 100 M atoms
  (100 k runs) completes; its time and peak memory.

The 100 M-atom lake is kept under ``bench/.work`` between runs (it takes minutes to write; delete it to
rebuild); the others are written afresh each time.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import WORK, Result, workdir
from .lakegen import SPEC, SUITE, build

REPEATS = 3
BASELINE = r"""
import json, sqlite3, sys, time
import duckdb
home, counted, required, groups = sys.argv[1], *map(json.loads, sys.argv[2:5])
started = time.perf_counter()
db = sqlite3.connect(f"{home}/catalog.db")
paths = [f"{home}/lake/{p}" for (p,) in db.execute(
    "SELECT path FROM lake_files WHERE table_name = 'current_results' AND removed_at IS NULL")]
runs = dict(db.execute("SELECT run_id, run_id FROM runs WHERE finalised_at IS NOT NULL"))
inlist = lambda codes: "(" + ", ".join(map(str, codes)) + ")"
per_key = ", ".join(
    [f"sum(n) FILTER (WHERE key IN {inlist(counted)}) AS counted",
     f"sum(m) FILTER (WHERE key IN {inlist(counted)}) AS met",
     f"sum(z) FILTER (WHERE key IN {inlist(counted)}) AS nulls"]
    + [f"sum(n) FILTER (WHERE key = {c}) AS r{i}_n, sum(f) FILTER (WHERE key = {c}) AS r{i}_f" for i, c in enumerate(required)]
    + [f"sum(n) FILTER (WHERE key IN {inlist(g)}) AS g{i}_n, sum(m) FILTER (WHERE key IN {inlist(g)}) AS g{i}_m"
       for i, (g, _) in enumerate(groups)])
error = " OR ".join(["coalesce(nulls, 0) > 0"] + [f"coalesce(r{i}_n, 0) = 0" for i in range(len(required))]
                    + [f"coalesce(g{i}_n, 0) = 0" for i in range(len(groups))])
fail = " OR ".join([f"r{i}_f > 0" for i in range(len(required))]
                   + [f"g{i}_m::DOUBLE / g{i}_n < {low}::DOUBLE" for i, (_, low) in enumerate(groups)] or ["false"])
sql = f'''
WITH atoms AS (SELECT run, key, met FROM read_parquet({paths!r})),
per_key AS (SELECT run, key, count(*) AS n, count(*) FILTER (WHERE met) AS m, count(*) FILTER (WHERE met IS NULL) AS z,
                   count(*) FILTER (WHERE NOT met) AS f FROM atoms GROUP BY run, key),
per_run AS (SELECT run, {per_key} FROM per_key GROUP BY run)
SELECT run, CASE WHEN {error} THEN 'error' WHEN {fail} THEN 'fail' ELSE 'pass' END AS verdict,
       coalesce(counted, 0), coalesce(met, 0), coalesce(nulls, 0) FROM per_run'''
con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
rows = con.execute(sql).fetchall()
print(json.dumps({"seconds": time.perf_counter() - started, "rows": rows}))
"""


def _child(args: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Run ``args`` as a process; its wall time, its peak RSS in MiB (via a wrapper), and its stdout."""
    wrapper = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "assert p.returncode == 0, p.stderr[-3000:]\n"
        "print(json.dumps({'wall': w, 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 'out': p.stdout}))\n"
    )
    done = subprocess.run([sys.executable, "-c", wrapper, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)
    if done.returncode:
        raise RuntimeError(f"{args[:4]} failed:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    return report["wall"], report["rss"] // 1024, report["out"]


def _codes() -> tuple[list[int], list[int], list[tuple[list[int], float]]]:
    from assay.core.ids import name_code

    ignored = set(SPEC["ignore"])
    required = [name_code(k) for k in SPEC["required"] if k not in ignored]
    groups = [([name_code(k) for k in g["keys"] if k not in ignored], g["min"]) for g in SPEC["threshold"]]
    counted = sorted(set(required) | {c for g, _ in groups for c in g})
    return counted, required, groups


def _workspace_env(home: Path) -> dict[str, str]:
    """The environment of a command run in the workspace at ``home``."""
    return {"ASSAY_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}


def _baseline(home: Path) -> list[str]:
    """The hand-written DuckDB re-score (:data:`BASELINE`) over ``home``'s files, as a command."""
    counted, required, groups = _codes()
    return [sys.executable, "-c", BASELINE, str(home), json.dumps(counted), json.dumps(required), json.dumps(groups)]


def _rescore_cli(home: Path, label: str) -> tuple[list[Result], dict[str, Any]]:
    """``assay rescore`` as a process vs the hand-written DuckDB process, same files; verdicts compared."""
    from assay.core.ids import id_code

    env = _workspace_env(home)
    cli = [sys.executable, "-m", "assay.flows.cli", "rescore", SUITE, "--consumer", "nightly_sweep", "--json"]
    base = _baseline(home)
    ours, theirs, peaks, doc, rows = [], [], [], None, None
    for _ in range(REPEATS):  # interleaved, so both see the same machine
        wall, rss, out = _child(cli, env)
        ours.append(wall)
        peaks.append(rss)
        doc = json.loads(out)
        wall, _, out = _child(base)
        theirs.append(wall)
        rows = json.loads(out)["rows"]
    assert doc is not None and rows is not None
    by_code = {id_code(r["run_id"]): r["verdict"] for r in doc["runs"]}
    duck = {run: verdict for run, verdict, *_ in rows}
    if by_code != duck:
        differ = [c for c in by_code if by_code[c] != duck.get(c)][:5]
        raise AssertionError(f"rescore {label}: verdicts differ from DuckDB's on {len(differ)}+ runs, e.g. {differ}")
    mine, other = statistics.median(ours), statistics.median(theirs)
    counts = {v: list(by_code.values()).count(v) for v in ("pass", "fail", "error")}
    result = Result(
        f"rescore.cli_{label}", round(mine, 2), "s", round(other, 2), round(mine / other, 2),
        "<= 1.5x hand-written DuckDB over the same manifest's files, verdicts equal", mine / other <= 1.5,
        f"{len(by_code)} runs ({counts}); each side a fresh process, median of {REPEATS}, interleaved",
    )
    return [result], {"peak_mib": max(peaks), "runs": len(by_code)}


IMPORTS = {
    "ours": ("orjson", "assay.flows.cli", "assay.flows.selection", "assay.flows.rescoring"),
    "stack": ("fsspec", "orjson", "polars", "pyarrow", "pydantic", "pydantic_settings", "sqlalchemy", "typer"),
}
"""What ``assay rescore --json`` imports before it does any work, each set imported by a process that
does nothing else (``ours``: the command's modules, which bring the stack; ``stack``: the libraries alone),
its garbage collector set to the ``assay`` program's thresholds (:data:`assay.flows.cli.COLLECT_EVERY`) before
the first import; ``assay`` sets them once its CLI module (Typer and the standard library) is imported,
before the libraries that do the work."""


def _import_floor(home: Path) -> dict[str, float]:
    """Median wall times of a process that only imports (``ours``, ``stack``) and of the baseline's whole
    run, each a fresh process, interleaved."""
    from assay.flows.cli import COLLECT_EVERY

    base, env = _baseline(home), _workspace_env(home)
    times: dict[str, list[float]] = {"ours": [], "stack": [], "baseline": []}
    for _ in range(REPEATS):
        for arm, modules in IMPORTS.items():
            code = f"import gc; gc.set_threshold(*{COLLECT_EVERY!r}); import {', '.join(modules)}"  # as `assay` collects
            times[arm].append(_child([sys.executable, "-c", code], env)[0])
        times["baseline"].append(_child(base)[0])
    return {arm: statistics.median(laps) for arm, laps in times.items()}


def _import_floor_result(floor: dict[str, float], work: float) -> Result:
    """The imports' process against the baseline; with the in-process re-score (``work``) added, the best
    ``rescore.cli`` could reach with these imports."""
    ours, stack, other = floor["ours"], floor["stack"], floor["baseline"]
    best = (ours + work) / other
    return Result(
        "rescore.cli_import_floor", round(ours, 2), "s", round(other, 2), round(ours / other, 2),
        "reported: a process that only imports what `assay rescore --json` imports, against the baseline's "
        "whole run; with the in-process re-score added (rescore.vs_ideal), the best rescore.cli can reach: "
        "its 1.5x is within reach only while that is under it",
        best <= 1.5,
        f"imports of the command's modules {ours:.2f}s, of the libraries alone ({', '.join(IMPORTS['stack'])}) "
        f"{stack:.2f}s, against the hand-written DuckDB process's whole run {other:.2f}s (it imports DuckDB "
        f"alone); each a fresh process, median of {REPEATS}, interleaved. Imports + the in-process re-score "
        f"({work:.2f}s) = {ours + work:.2f}s, {best:.2f}x the baseline (derived: the sum of two measurements)",
    )


def _floor(home: Path) -> float:
    """The physical floor: DuckDB over one compact, integer-coded file of the current atoms, two-stage."""
    import duckdb
    import polars as pl

    from assay.flows.workspace import open_workspace
    from assay.core.settings import Settings

    ws = open_workspace(Settings(home=home))
    compact_file = home / "floor.parquet"
    state = ws.lake.scan("current_results").select(
        pl.col("run").rank("dense").cast(pl.Int32).alias("run"), pl.col("key").rank("dense").cast(pl.Int16).alias("key"),
        "met", pl.col("key").alias("code"))
    state.sort("run").collect().write_parquet(compact_file, compression="zstd", row_group_size=1 << 20)
    counted, required, groups = _codes()
    keys = pl.read_parquet(compact_file, columns=["key", "code"]).unique()
    small = dict(zip(keys["code"].to_list(), keys["key"].to_list(), strict=True))
    inlist = lambda codes: "(" + ", ".join(str(small[c]) for c in codes if c in small) + ")"  # noqa: E731
    sql = f"""
        WITH per_key AS (SELECT run, key, count(*) n, count(*) FILTER (WHERE met) m, count(*) FILTER (WHERE met IS NULL) z,
                                count(*) FILTER (WHERE NOT met) f FROM '{compact_file}' GROUP BY run, key)
        SELECT run, sum(n) FILTER (WHERE key IN {inlist(counted)}), sum(m) FILTER (WHERE key IN {inlist(counted)}),
               sum(z) FILTER (WHERE key IN {inlist(counted)}),
               sum(f) FILTER (WHERE key IN {inlist(required)}),
               {", ".join(f"sum(m) FILTER (WHERE key IN {inlist(g)}) / sum(n) FILTER (WHERE key IN {inlist(g)})" for g, _ in groups)}
        FROM per_key GROUP BY run"""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    ws.close()
    return statistics.median(times)


def _in_process_rescore(home: Path) -> float:
    code = (
        "import sys, time\n"
        "from assay.flows.workspace import open_workspace\n"
        "from assay.flows.rescoring import rescore\n"
        "ws = open_workspace(); ws.engine\n"
        "times = []\n"
        f"for _ in range({REPEATS}):\n"
        "    t = time.perf_counter(); rescore(ws, sys.argv[1], 'nightly_sweep'); times.append(time.perf_counter() - t)\n"
        "print(sorted(times)[len(times) // 2])\n"
    )
    _, _, out = _child([sys.executable, "-c", code, SUITE], {"ASSAY_HOME": str(home)})
    return float(out.strip())


def _compact(home: Path) -> dict[str, int]:
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace
    from assay.storage.lake.compact import compact

    ws = open_workspace(Settings(home=home))
    summary = compact(ws.lake)
    ws.close()
    return summary


def read_one_run() -> list[Result]:
    """Reading one run's atoms from lakes of 1 k and 10 k runs (10 case runs each, so the lakes stay small)."""
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace

    medians = {}
    for runs in (1_000, 10_000):
        home = workdir(f"lake-{runs}")
        build(home, runs, case_runs_per_run=10)
        ws = open_workspace(Settings(home=home))
        with ws.engine.connect() as conn:
            import sqlalchemy as sa

            ids = list(conn.execute(sa.text("SELECT run_id FROM runs")).scalars())
        picks = random.Random(runs).sample(ids, 20)
        times = []
        for run_id in picks:
            start = time.perf_counter()
            got = ws.lake.read("assertion_results", run_id=run_id)
            times.append(time.perf_counter() - start)
            assert got.height >= 100, got.height
        medians[runs] = statistics.median(times)
        ws.close()
    ratio = medians[10_000] / medians[1_000]
    return [Result("lake.read_one_run", round(medians[10_000] * 1000, 1), "ms", round(medians[1_000] * 1000, 1),
                   round(ratio, 2), "10 k-run lake / 1 k-run lake <= 1.5", ratio <= 1.5,
                   "Lake.read('assertion_results', run_id=...) in-process, median of 20 random runs; "
                   "baseline = the same on a 1 k-run lake")]


def rescore_100m() -> list[Result]:
    """100 M atoms (100 k runs; one judging pass per 100 runs), compacted: does a re-score complete, how fast, how big."""
    home = WORK / "rescore-100m"
    if not (home / "built.json").exists():
        workdir("rescore-100m")
        (home / "built.json").write_text(json.dumps(build(home, 100_000, runs_per_pass=100)))
        _compact(home)
    built = json.loads((home / "built.json").read_text())
    wall, rss, out = _child([sys.executable, "-m", "assay.flows.cli", "rescore", SUITE, "--consumer", "nightly_sweep",
                             "--json"], _workspace_env(home))
    runs = len(json.loads(out)["runs"])
    return [Result("lake.rescore_100m", round(wall, 1), "s", None, None, "completes on 2 cores, 24 GiB; time and peak memory reported",
                   runs == built["runs"], f"{built['atoms']:,} atoms ({built['current_atoms']:,} current), {runs} runs "
                   f"re-scored in one assay rescore process; peak RSS {rss} MiB; lake written in {built['seconds']} s")]


def run() -> list[Result]:
    results = read_one_run()
    home = workdir("rescore-20m")  # always fresh: it is measured before and after compaction
    built = build(home, 20_000)
    before, info = _rescore_cli(home, "before_compaction")
    imports = _import_floor(home)
    summary = _compact(home)
    after, info_after = _rescore_cli(home, "after_compaction")
    floor = _floor(home)
    ours = _in_process_rescore(home)
    peak = max(info["peak_mib"], info_after["peak_mib"])
    results += before + after
    results[-1].note += f"; compaction: {summary['files_in']} files -> {summary['files_out']}"
    results.append(_import_floor_result(imports, ours))
    results.append(Result("rescore.peak_memory", peak, "MiB", None, None, "<= 2048 MiB for >= 20 M atoms",
                          peak <= 2048, f"peak RSS of the assay rescore process over {built['atoms']:,} atoms "
                          f"({built['current_atoms']:,} current)"))
    results.append(Result("rescore.vs_ideal", round(ours, 3), "s", round(floor, 3), round(ours / floor, 2),
                          "<= 3x the physical floor", ours / floor <= 3,
                          "ours: assay.flows.rescoring.rescore in-process (catalog, manifest, every verdict with its "
                          "reasons), median of 3; floor: DuckDB over one compact integer-coded file of the current "
                          "atoms, two-stage aggregation, median of 3"))
    return results
