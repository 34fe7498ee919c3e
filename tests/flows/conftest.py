"""Flow fixtures: a workspace with the demo bundle (the Prefect test harness, ``prefect_harness``, is in
``tests/conftest.py``: the conformance kit runs flows too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.flows.workspace import open_workspace


@pytest.fixture
def demo_ws(assay_home: Path):
    """A fresh workspace in a temp ASSAY_HOME with the demo bundle loaded (nothing run yet)."""
    ws = open_workspace(create=True)  # as `assay init` does: the catalog migrated
    ops.load(ws, str(DEMO / "bundle.yaml"))
    yield ws
    ws.close()
