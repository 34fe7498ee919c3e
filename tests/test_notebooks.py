"""Every analyst notebook runs, top to bottom, against the demo data."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.workspace import open_workspace

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("notebooks") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASSAY_HOME", str(home))
        ws = open_workspace(create=True)
        ops.load(ws, str(DEMO / "bundle.yaml"))
        for suite in SUITES:
            ops.run_to_final(ws, suite)
        ws.close()
    return home


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_demo_data(notebook: Path, demo_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in __import__("os").environ if k.startswith("ASSAY_") and k != "ASSAY_HOME"]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ASSAY_HOME", str(demo_home))
    namespace = runpy.run_path(str(notebook), run_name="__main__")
    if notebook.stem == "evidence_overview":
        assert namespace["case_runs"]["case_runs"].sum() == 16
        assert set(namespace["failures"]["team_id"]) == {"acme-plumbing", "northside-hvac"}
        assert namespace["disagreement"].height == 3
