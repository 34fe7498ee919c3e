"""The fault campaign's figures: crash points, hostile inputs, planted secrets — each must come out 0.

- ``faults.*``: every lake failpoint between writing evidence and committing it (``report.*``,
  ``judge.*``, ``rescore.staged``) is hit by a real process killed with SIGKILL, then recovery runs
  (reap, vacuum), then the catalog and the lake are compared: atoms (and case runs) lost, rows visible
  twice, rows visible that the catalog never accepted, runs not final. The same steps run as tests in
  ``tests/faults/test_lake_crash_points.py``; this counts instead of asserting.
- ``inputs.*``: the generated hostile-input corpus (``tests/faults/hostile.py``) loaded the way
  ``assay load`` does: how many were tried, got a clear error, and wrote anything anyway.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .common import Result

FAULTS_DIR = Path(__file__).resolve().parents[1] / "tests" / "faults"


def _crash_figures() -> dict[str, int]:
    import os

    import polars as pl
    import sqlalchemy as sa

    sys.path.insert(0, str(FAULTS_DIR.parent))
    sys.path.insert(0, str(FAULTS_DIR))
    import test_lake_crash_points as crashes  # the same steps and recovery the tests use

    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.demo import DEMO, SUITES
    from assay.flows.workspace import open_workspace
    from assay.storage.catalog import tables as t

    figures = {"points": 0, "atoms_lost": 0, "case_runs_lost": 0, "duplicated": 0, "phantom": 0, "stuck_runs": 0}
    for step, (action, needs_a_run) in sorted(crashes.CASES.items()):
        with tempfile.TemporaryDirectory(prefix="assay-faults-") as tmp:
            for key in [k for k in os.environ if k.startswith("ASSAY_") and k != "ASSAY_FAILPOINTS"]:
                os.environ.pop(key)
            os.environ["ASSAY_HOME"] = str(Path(tmp) / "home")
            ws = open_workspace(Settings(), create=True)
            ops.load(ws, str(DEMO / "bundle.yaml"))
            suite = SUITES[1]
            if needs_a_run:
                ops.run_to_final(ws, suite)
            before_atoms = ws.lake.read("assertion_results").height
            crashes.crash(ws, step, action, suite)
            crashes.recover(ws)
            figures["points"] += 1
            with ws.engine.connect() as conn:
                runs = conn.execute(sa.select(t.runs.c.run_id, t.runs.c.case_runs, t.runs.c.finalised_at)).all()
            case_runs, atoms = ws.lake.read("case_runs"), ws.lake.read("assertion_results")
            visible = dict(case_runs.group_by("run_id").len().iter_rows())
            figures["stuck_runs"] += sum(r.finalised_at is None for r in runs)
            figures["case_runs_lost"] += sum(max(0, r.case_runs - visible.get(r.run_id, 0)) for r in runs)
            figures["phantom"] += sum(max(0, visible.get(r.run_id, 0) - r.case_runs) for r in runs)
            figures["duplicated"] += (case_runs.height - case_runs["case_run_id"].n_unique()
                                      + atoms.height - atoms["result_id"].n_unique())
            outcomes = ws.lake.read("outcomes")
            per_outcome = atoms.group_by("outcome_id").len()
            short = (outcomes.join(per_outcome, on="outcome_id", how="left")
                     .with_columns(pl.col("len").fill_null(0))
                     .select((pl.col("evaluated") + pl.col("carried") - pl.col("len")).clip(0).sum()).item())
            figures["atoms_lost"] += int(short) + max(0, before_atoms - atoms.height)
            ws.close()
    return figures


def _input_figures() -> dict[str, int]:
    sys.path.insert(0, str(FAULTS_DIR))
    import hostile

    return hostile.campaign()


def run() -> list[Result]:
    crash = _crash_figures()
    inputs = _input_figures()
    note = f"{crash['points']} failpoints (kill -9, then reap and vacuum), demo workspace, SQLite + local lake"
    results = [Result("faults.points_tried", crash["points"], "points", None, None, ">= 5 (every lake failpoint)",
                      crash["points"] >= 5, note)]
    for name in ("atoms_lost", "case_runs_lost", "duplicated", "phantom", "stuck_runs"):
        results.append(Result(f"faults.{name}", crash[name], "rows" if name != "stuck_runs" else "runs", None, None,
                              "0", crash[name] == 0, note))
    corpus = f"{inputs['tried']} hostile bundles and call sets (tests/faults/hostile.py), loaded as assay load does"
    results += [
        Result("inputs.tried", inputs["tried"], "inputs", None, None, ">= 80", inputs["tried"] >= 80, corpus),
        Result("inputs.clear_errors", inputs["clear_errors"], "inputs", None, None, "= tried",
               inputs["clear_errors"] == inputs["tried"], corpus + (f"; unclear: {inputs['unclear']}" if inputs["unclear"] else "")),
        Result("inputs.written_anyway", inputs["written_anyway"], "inputs", None, None, "0",
               inputs["written_anyway"] == 0, corpus),
    ]
    return results
