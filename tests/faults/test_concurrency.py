"""Concurrency probes, each with real processes released together, on SQLite and PostgreSQL: two runs of
one suite at once, a load during a run, two re-judges of the same runs at once. Afterwards the catalog and
the lake must agree (the crash tests' invariants): nothing lost, nothing twice, nothing phantom, every
run final. A writer that loses a race is refused with a transient error, never half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_lake_crash_points import check_invariants, recover

from assay.flows import operations as ops
from assay.flows.demo import SUITES, write_revised_bundle

CHILD = r"""
import json, sys, time
from pathlib import Path
from assay.core.errors import AssayError
from assay.flows import judging, operations as ops
from assay.flows.workspace import open_workspace

go, action, arg = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
ws = open_workspace()
while not go.exists():
    time.sleep(0.01)
try:
    if action == "run":
        result = ops.run_to_final(ws, arg).status
    elif action == "load":
        result = sorted(ops.load(ws, arg)["counts"])
    else:
        result = judging.judge_runs(ws, json.loads(arg), trigger="rejudge", force=True)["outcomes"]
    print(json.dumps({"ok": True, "result": result}))
except AssayError as exc:
    print(json.dumps({"ok": False, "transient": exc.transient, "error": str(exc)}))
"""



def together(ws, tmp_path: Path, *jobs: tuple[str, str]) -> list[dict]:
    """Start one process per (action, argument), let them all import and connect, then release them at once."""
    go = tmp_path / f"go-{time.monotonic_ns()}"
    env = {**os.environ, "ASSAY_HOME": str(ws.settings.home), "PREFECT_HOME": str(ws.settings.prefect_home)}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(go), action, arg], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for action, arg in jobs]
    time.sleep(2.0)
    go.touch()
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def test_two_runs_of_one_suite_at_once(ws, tmp_path: Path) -> None:
    results = together(ws, tmp_path, ("run", SUITES[1]), ("run", SUITES[1]))
    assert [r["result"] for r in results] == ["completed", "completed"], results
    recover(ws)  # the loser's staged files are nobody's: vacuum takes them past the grace period
    check_invariants(ws)


def test_a_load_during_a_run(ws, tmp_path: Path) -> None:
    revised = write_revised_bundle(tmp_path / "revised" / "bundle.yaml")
    run, load = together(ws, tmp_path, ("run", SUITES[1]), ("load", str(revised)))
    assert run["result"] == "completed" and load["ok"], (run, load)
    recover(ws)  # the loser's staged files are nobody's: vacuum takes them past the grace period
    check_invariants(ws)


def test_two_rejudges_at_once(ws, tmp_path: Path) -> None:
    run_ids = [ops.run_to_final(ws, suite).run_id for suite in SUITES]
    results = together(ws, tmp_path, ("rejudge", json.dumps(run_ids)), ("rejudge", json.dumps(run_ids)))
    assert any(r["ok"] for r in results), results
    for r in results:  # a loser is refused whole, with a transient error a retry can fix
        assert r["ok"] or r["transient"], r
    recover(ws)  # the loser's staged files are nobody's: vacuum takes them past the grace period
    check_invariants(ws)
