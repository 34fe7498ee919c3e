"""kill -9 while a vendor runner provisions its scratch objects, then the reaper, then a check that the
vendor holds nothing of the dead run.

A platform chat runner creates a scratch assistant (VAPI) or agent (ElevenLabs) per run. The child
process dies by SIGKILL at one step: with the object's name recorded but nothing created yet
(``scratch.intended``), with the object created at the vendor but its id not yet recorded
(``scratch.created``, so teardown must find it by name), or in the middle of reporting
(``report.recorded``, the object fully recorded). Recovery is what an operator runs, ``assay reap``:
the run times out once its lease lapses, and its abandoned scratch objects are torn down.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.fakes.serve import FAKE_MODEL, running, settings_env
from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.flows.workspace import open_workspace
from assay.storage.catalog import tables as t
from assay.storage.catalog.runs import get_run

STEPS = ("scratch.intended", "scratch.created", "report.recorded")
RUNNERS = {"vapi_chat": ("vapi", "assistant"), "elevenlabs_chat": ("elevenlabs", "agent")}
SUITE = "acme-plumbing/main-line"
LEASE_SECONDS = 3

CHILD = r"""
import sys
from assay.flows import operations as ops
from assay.flows.workspace import open_workspace

ws = open_workspace()
ops.execute_run(ws, sys.argv[1])
print("finished without reaching the failpoint")
"""


@pytest.fixture(scope="module")
def fakes():
    with running() as started:
        yield started


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, fakes, monkeypatch: pytest.MonkeyPatch):
    env = settings_env(fakes) | {"ASSAY_CALLER_BASE_URL": fakes["openai"].url + "/v1", "ASSAY_CALLER_MODEL": FAKE_MODEL,
                                 "ASSAY_CALLER_API_KEY": fakes["openai"].key, "ASSAY_CATALOG_URL": catalog_url,
                                 "ASSAY_LEASE_SECONDS": str(LEASE_SECONDS)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for fake in fakes.values():
        fake.reset()
    workspace = open_workspace(create=True)
    ops.load(workspace, str(DEMO / "bundle.yaml"))
    yield workspace
    workspace.close()


@pytest.mark.parametrize("runner", sorted(RUNNERS))
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_while_provisioning_leaves_nothing_at_the_vendor(ws, fakes, runner: str, step: str) -> None:
    vendor, kind = RUNNERS[runner]
    run_id = ops.start_run(ws, SUITE, runner).run_id
    env = {**os.environ, "ASSAY_FAILPOINTS": step, "PREFECT_HOME": str(ws.settings.prefect_home)}
    proc = subprocess.run([sys.executable, "-c", CHILD, run_id], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"

    with ws.engine.connect() as conn:
        rows = conn.execute(sa.select(t.scratch_objects).where(t.scratch_objects.c.run_id == run_id)).all()
    assert len(rows) == 1 and rows[0].deleted_at is None, rows
    assert (rows[0].vendor_id is None) == (step != "report.recorded")
    held_before = fakes[vendor].live_objects().get(kind, [])
    assert len(held_before) == (0 if step == "scratch.intended" else 1)

    time.sleep(LEASE_SECONDS + 0.5)  # the dead process's lease lapses; nobody renews it
    reaped = ops.reap(ws)
    assert reaped["lease_expired"] == [run_id] and reaped["scratch_failed"] == []
    assert reaped["scratch_deleted"] == [rows[0].name]
    assert get_run(ws.engine, run_id).status == "timed_out"
    assert fakes[vendor].live_objects().get(kind, []) == [], f"{vendor} still holds the dead run's {kind}"
    assert ws.ledger.scratch.outstanding(run_id) == []
    assert ops.reap(ws)["scratch_deleted"] == []  # nothing twice
