"""Scale-out: a wide re-judge of 10,000,000 assertion results on 1 against 2 Dask worker processes.

The workspace is written the way a team's would be: a suite replaying a call set of 25,000 recorded
calls (6-10 turns each, drawn from :mod:`.judging`'s phrases, 0-3 tool calls with JSON arguments, costs)
with 10 deterministic transcript and tool assertions, run 40 times through the product (create,
ingest, judge, finalise: ``ops.run_to_final``), so 40 runs x 25,000 case runs x 10 assertions. It is
kept under ``bench/.work/scale`` between invocations (delete it to rebuild).

Each measurement copies that workspace afresh (untimed) and times, in full, the command a user types:
``assay rejudge --suite scale/calls --force`` as a process, with ``ASSAY_DASK_WORKERS`` set to 1 or 2,
so the command starts a temporary Dask cluster of that many worker processes of one thread each and
maps the 40 runs over it (cluster start and stop included). Both arms use the workspace's own Prefect
server (started once, untimed). The command gives that cluster's workers one thread for Polars and for
DuckDB (:data:`assay.flows.task_runners.WORKER_ENV`), so the comparison is of processes, not of the
engines' thread pools. The value is the speed-up, the 1-worker
median time over the 2-worker one; the results of the two arms (each case run's latest outcome) must be
equal: the counts of met true / false / null and a hash of the sorted (case run, key, met, value).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .common import WORK, Result
from .judging import ARGUMENTS, ASSERTIONS, OPENERS, TAILS, TOOLS

RUNS = 40
CALLS = 25_000
CASES = [f"case-{i:02d}" for i in range(20)]
SUITE = "scale/calls"
REPEATS = 3
WORKERS = (1, 2)


def write_call_set(path: Path, n: int, seed: int = 5) -> None:
    """``n`` recorded calls, for :data:`CASES` in turn: varied turns, tool calls and costs."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(n):
            t, turns = 0.0, []
            for k in range(rng.randint(6, 10)):
                t += rng.uniform(1, 6)
                turns.append({"role": "agent" if k % 2 == 0 else "caller", "text": rng.choice(OPENERS) + rng.choice(TAILS),
                              "t": round(t, 2)})
            tools = [{"name": rng.choice(TOOLS), "arguments": json.loads(rng.choice(ARGUMENTS)), "result": {"ok": True},
                      "is_error": False, "t": 12.5} for _ in range(rng.randint(0, 3))]
            f.write(json.dumps({
                "call_id": f"call-{i:06d}", "case": CASES[i % len(CASES)], "started_at": "2026-11-20T15:04:05Z",
                "duration_ms": round(t * 1000, 1), "cost_usd": round(rng.uniform(0.05, 0.4), 4) if i % 50 else None,
                "transcript": turns, "tool_calls": tools, "provider": "hamming", "provider_ref": f"tcr_{i}",
            }) + "\n")


def bundle(assertions: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The bundle of team ``scale``: suite ``calls`` replays ``calls.jsonl`` (beside it) under ``assertions``
    ((mechanism, params) pairs, keyed ``key_0``, ``key_1``, ...)."""
    return {
        "schema": "assay.bundle/v1",
        "teams": [{
            "id": "scale", "name": "Scale",
            "cases": [{"key": k, "title": k, "situation": {"caller": "a caller", "wants": "help"}} for k in CASES],
            "suites": [{
                "key": "calls", "name": "calls", "target": {"call_set": "calls.jsonl"}, "cases": CASES,
                "assertions": [{"key": f"key_{k}", "mechanism": m, "params": p} for k, (m, p) in enumerate(assertions)],
            }],
        }],
    }


def build(home: Path, runs: int, calls: int) -> dict[str, Any]:
    """The workspace under ``home``: the bundle, the call set, ``runs`` runs to their end."""
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import Workspace

    home.mkdir(parents=True)
    write_call_set(home / "calls.jsonl", calls)
    (home / "bundle.yaml").write_text(yaml.safe_dump(bundle(ASSERTIONS), sort_keys=False))
    started = time.perf_counter()
    ws = Workspace(Settings(home=home / "ws"), upgrade=True)
    try:
        ops.load(ws, str(home / "bundle.yaml"))
        for _ in range(runs):
            run = ops.run_to_final(ws, SUITE)
            assert run.status == "completed", run
    finally:
        ws.close()
    return {"runs": runs, "calls": calls, "seconds": round(time.perf_counter() - started, 1)}


def _base(runs: int, calls: int) -> Path:
    """The kept workspace of this size (built when missing)."""
    folder = WORK / "scale" / f"{runs}x{calls}"
    if not (folder / "built.json").exists():
        if folder.exists():
            shutil.rmtree(folder)
        built = build(folder, runs, calls)
        (folder / "built.json").write_text(json.dumps(built))
        print(f"  built {runs} runs x {calls:,} calls in {built['seconds']}s", flush=True)
    return folder / "ws"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_", "POLARS_"))}
    return {**env, "ASSAY_HOME": str(home), "PREFECT_HOME": str(home / "prefect"), "NO_COLOR": "1", **extra}


def _assay(env: dict[str, str], *args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "assay.flows.cli", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def fingerprint(home: Path) -> dict[str, Any]:
    """Each case run's latest results: counts of met true / false / null, and a hash of the sorted
    (case run, key, met, value)."""

    from assay.core.settings import Settings
    from assay.flows.workspace import Workspace
    from assay.transforms.verdicts import latest

    ws = Workspace(Settings(home=home))
    try:
        cols = ["case_run_id", "assertion_key", "met", "value"]
        atoms = latest(ws.lake.scan("assertion_results")).select(cols).collect().sort(cols, nulls_last=True)
    finally:
        ws.close()
    met = atoms["met"]
    hashes = atoms.hash_rows().to_arrow()  # one hash per row, in the sorted order
    digest = hashlib.sha256(hashes.buffers()[1].to_pybytes()).hexdigest()
    return {"atoms": atoms.height, "met_true": int(met.sum()), "met_false": int((~met).sum()),
            "met_null": met.null_count(), "hash": digest[:16], "case_runs": atoms["case_run_id"].n_unique()}


def _worker_threads(workers: int) -> list[tuple[int, int]]:
    """(Polars, DuckDB) threads in each worker of a cluster started as the command starts its own."""
    from distributed import Client, LocalCluster

    from assay.core.settings import Settings
    from assay.flows.task_runners import task_runner

    with LocalCluster(**task_runner(Settings(dask_workers=workers)).cluster_kwargs) as cluster, Client(cluster) as client:
        return sorted(client.run(_engine_threads).values())


def _engine_threads() -> tuple[int, int]:
    import polars as pl

    from assay.core.engines import duckdb_connect

    con = duckdb_connect()
    try:
        return pl.thread_pool_size(), con.execute("SELECT current_setting('threads')").fetchone()[0]
    finally:
        con.close()


def measure(runs: int = RUNS, calls: int = CALLS, repeats: int = REPEATS) -> Result:
    base = _base(runs, calls)
    server = _assay(_env(base), "server", "start")["server"]["api_url"]
    times: dict[int, list[float]] = {n: [] for n in WORKERS}
    prints: dict[int, dict[str, Any]] = {}
    try:
        for rep in range(repeats):
            for n in WORKERS:  # interleaved, so a busy moment of the machine falls on both arms alike
                home = WORK / "scale" / f"arm-{n}"
                if home.exists():
                    shutil.rmtree(home)
                shutil.copytree(base, home, ignore=shutil.ignore_patterns("prefect"))
                env = _env(home, ASSAY_DASK_WORKERS=str(n), PREFECT_API_URL=server)
                start = time.perf_counter()
                done = _assay(env, "rejudge", "--suite", SUITE, "--force")
                times[n].append(time.perf_counter() - start)
                assert done["runs"] == runs and done["outcomes"] == runs * calls, done
                assert done["evaluated"] == runs * calls * len(ASSERTIONS), done
                print(f"  {n} worker(s), repeat {rep + 1}: {times[n][-1]:.1f}s", flush=True)
                if rep == 0:
                    prints[n] = fingerprint(home)
    finally:
        _assay(_env(base), "server", "stop")
        for n in WORKERS:
            shutil.rmtree(WORK / "scale" / f"arm-{n}", ignore_errors=True)
    threads = {n: _worker_threads(n) for n in WORKERS}
    one, two = (statistics.median(times[n]) for n in WORKERS)
    speedup = one / two
    same = prints[1] == prints[2] and prints[1]["atoms"] == runs * calls * len(ASSERTIONS)
    return Result(
        name="scale.rejudge_dask", value=round(speedup, 2), unit="x (1-worker time / 2-worker time)", baseline=None,
        ratio=None, target=">= 1.6x", met=speedup >= 1.6 and same,
        note=f"assay rejudge --force of {runs} runs x {calls:,} case runs x {len(ASSERTIONS)} transcript/tool assertions "
             f"= {runs * calls * len(ASSERTIONS):,} results, ASSAY_DASK_WORKERS=1 vs 2 (temporary LocalCluster, worker "
             f"processes of 1 thread; Polars, DuckDB threads per worker {threads[1]} / {threads[2]}), timed in full as a process; "
             f"median of {repeats}: {one:.1f}s vs {two:.1f}s (all: {[round(t, 1) for t in times[1]]} vs "
             f"{[round(t, 1) for t in times[2]]}); results equal: {same} ({prints[1]})",
    )


def run() -> list[Result]:
    return [measure()]
