"""Flow fixtures: one Prefect test harness for the whole test run, and a workspace with the demo bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.flows.workspace import open_workspace


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def demo_ws(assay_home: Path):
    """A fresh workspace in a temp ASSAY_HOME with the demo bundle loaded (nothing run yet)."""
    ws = open_workspace(create=True)  # as `assay init` does: the catalog migrated
    ops.load(ws, str(DEMO / "bundle.yaml"))
    yield ws
    ws.close()
