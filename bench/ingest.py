"""Ingest: 100,000 recorded calls (~2 KB of transcript each) through the ``recorded`` runner into the lake.

Measured end to end as a user's run does it: claim, parse and validate the call set, assemble the
rows, check them with pandera, redact, write Parquet, commit each report with its files in the
manifest, release. The baseline is what an expert would write to land the same file in Parquet:
DuckDB reading the JSON Lines straight into a zstd Parquet file (no validation, no redaction, no
commit), timed in full on the same file in the same process, median of 3.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import yaml

from .common import Result, median_seconds, workdir

CALLS = 100_000
CASES = [f"case-{i:02d}" for i in range(20)]
BASELINE_SAMPLE = 1_000

WORDS = ("water heater leaking service area zip code technician appointment tomorrow morning "
         "address outside referral licensed plumber emergency line fee estimate thank you").split()


def write_call_set(path: Path, n: int, seed: int = 7, cases: Sequence[str] = CASES) -> None:
    """``n`` recorded calls of about 2 KB of transcript each, for ``cases`` in turn."""
    rng = random.Random(seed)
    with path.open("w") as f:
        for i in range(n):
            turns = []
            t = 0.0
            for k in range(10):
                t += rng.uniform(1, 6)
                text = " ".join(rng.choice(WORDS) for _ in range(30))
                turns.append({"role": "agent" if k % 2 == 0 else "caller", "text": text, "t": round(t, 2)})
            call = {
                "call_id": f"call-{i:06d}",
                "case": cases[i % len(cases)],
                "started_at": "2026-11-20T15:04:05Z",
                "duration_ms": round(t * 1000, 1),
                "cost_usd": round(rng.uniform(0.05, 0.4), 4),
                "transcript": turns,
                "tool_calls": [{"name": "check_service_area", "arguments": {"zip": "60614"},
                                "result": {"in_area": i % 3 != 0}, "is_error": False, "t": 12.5}],
                "evaluations": [{"name": "handles_out_of_area", "evaluator": "hamming:guardrail",
                                 "verdict": "pass" if i % 5 else "fail", "rationale": "ok"}],
                "provider": "hamming",
                "provider_ref": f"tcr_{i}",
            }
            f.write(json.dumps(call) + "\n")


def run() -> list[Result]:
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import Workspace

    work = workdir("ingest")
    calls = work / "calls.jsonl"
    write_call_set(calls, CALLS)
    bundle = {
        "schema": "assay.bundle/v1",
        "teams": [{
            "id": "bench-team", "name": "Bench",
            "cases": [{"key": k, "title": k, "situation": {"caller": "a caller", "wants": "help"}} for k in CASES],
            "suites": [{"key": "calls", "name": "calls", "target": {"call_set": "calls.jsonl"}, "cases": CASES}],
        }],
    }
    (work / "bundle.yaml").write_text(yaml.safe_dump(bundle))
    ws = Workspace(Settings(home=work / "home"), upgrade=True)
    ops.load(ws, str(work / "bundle.yaml"))
    avg_bytes = calls.stat().st_size / CALLS

    def ingest() -> None:
        run_id = ops.start_run(ws, "bench-team/calls").run_id
        result = ops.execute_run(ws, run_id)
        assert result.case_runs == CALLS and result.error is None, result

    seconds = median_seconds(ingest, repeats=3)
    rate = CALLS / seconds

    # Baseline: DuckDB, the same JSON Lines straight into Parquet.
    import duckdb

    out = work / "duckdb.parquet"

    def duckdb_copy() -> None:
        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        con.execute("SET enable_progress_bar = false")
        con.execute(f"COPY (SELECT * FROM read_ndjson('{calls}')) TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
        con.close()

    baseline_seconds = median_seconds(duckdb_copy, repeats=3)
    baseline = CALLS / baseline_seconds
    ratio = rate / baseline
    return [
        Result(
            name="ingest.vs_duckdb", value=round(rate), unit="case runs/s", baseline=round(baseline),
            ratio=round(ratio, 2), target=">= 10000 case runs/s and >= 0.5x DuckDB's JSON Lines -> Parquet",
            met=rate >= 10_000 and ratio >= 0.5,
            note=f"{CALLS} calls, {avg_bytes / 1024:.1f} KiB each on disk; assay run median of 3 runs of {seconds:.2f}s; "
                 f"DuckDB COPY median of 3 runs of {baseline_seconds:.2f}s",
        )
    ]
