"""kill -9 at the catalog's own steps, then recovery, then a check: a load is all or nothing, and a run
killed between judging and finalising is still brought to a final state, with its verdicts, by the reaper.

Each case runs the real operation in a child process with ``ASSAY_FAILPOINTS`` naming one step; the child
dies by SIGKILL exactly there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.ledger import CatalogLedger
from assay.storage.catalog.runs import get_run

CHILD = r"""
import sys
from assay.flows import operations as ops
from assay.flows.workspace import open_workspace

ws = open_workspace()
if sys.argv[1] == "load":
    ops.load(ws, sys.argv[2])
else:
    ops.finish_run(ws, sys.argv[2])
print("finished without reaching the failpoint")
"""


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    workspace = open_workspace(create=True)
    yield workspace
    workspace.close()


def crash(ws, step: str, *args: str) -> None:
    env = {**os.environ, "ASSAY_FAILPOINTS": step, "ASSAY_HOME": str(ws.settings.home),
           "PREFECT_HOME": str(ws.settings.prefect_home)}
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def _rows(ws) -> dict[str, int]:
    with ws.engine.connect() as conn:
        return {table.name: conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
                for table in t.metadata.sorted_tables}


def test_a_load_killed_before_commit_leaves_nothing(ws) -> None:
    before = _rows(ws)
    crash(ws, "load.written", "load", str(DEMO / "bundle.yaml"))
    assert _rows(ws) == before  # all or nothing: the kill rolled the whole bundle back
    assert ops.load(ws, str(DEMO / "bundle.yaml"))["counts"]  # and the same load then succeeds whole


def test_a_run_killed_after_judging_is_finalised_by_the_reaper(ws) -> None:
    ops.load(ws, str(DEMO / "bundle.yaml"))
    run_id = ops.start_run(ws, SUITES[0]).run_id
    assert ops.execute_run(ws, run_id).error is None
    crash(ws, "finalise.judged", "finish", run_id)
    run = get_run(ws.engine, run_id)
    assert run.status == "released" and run.finalised_at is None  # judged, never finalised
    later = datetime.now(UTC) + timedelta(seconds=ws.settings.lease_seconds + 1)
    ws.ledger = CatalogLedger(ws.engine, ws.lake, clock=lambda: later)
    assert ops.reap(ws)["finalised_released"] == [run_id]
    run = get_run(ws.engine, run_id)
    assert run.status == "completed" and run.finalised_at is not None
    with ws.engine.connect() as conn:
        stamped = conn.execute(sa.select(t.run_criteria.c.verdict).where(t.run_criteria.c.run_id == run_id)).scalars().all()
    assert stamped and all(v in ("pass", "fail", "error") for v in stamped)
