"""The fault tests' shared workspace: the demo's bundle loaded into a workspace on each catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.flows.workspace import open_workspace


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, monkeypatch: pytest.MonkeyPatch):
    """The demo workspace on each catalog (a module that needs another workspace defines its own ``ws``)."""
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    workspace = open_workspace(create=True)
    ops.load(workspace, str(DEMO / "bundle.yaml"))
    yield workspace
    workspace.close()
