"""A report and a judging pass paused at their staged step (a suspended machine, a slow upload), vacuum meanwhile.

The pause is a vacuum run at the writer's ``*.staged`` failpoint, dated as if the pause had lasted past the
grace period: within the staged files' lease, vacuum keeps them and the writer commits; past it, vacuum
deletes them and the commit is refused whole. Either way the catalog's counts equal the rows in the lake
and no run is left ``released`` (the lake-level cases: tests/storage/test_lake_leases.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.core.errors import EvidenceError
from assay.flows import judging
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.workspace import open_workspace
from assay.storage import judgments
from assay.storage.catalog import ledger
from assay.storage.catalog import tables as t
from assay.storage.lake import Lake
from assay.storage.lake.upkeep import vacuum

GRACE = 60.0
PAUSED = timedelta(minutes=10)
"""Past the grace period, within the lease."""
LAPSED = timedelta(hours=2)
"""Past the lease (an hour by default) too."""


@pytest.fixture
def ws(assay_home: Path, catalog_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    monkeypatch.setenv("ASSAY_LAKE_URL", str(tmp_path / "lake"))
    workspace = open_workspace(create=True)
    ops.load(workspace, str(DEMO / "bundle.yaml"))
    yield workspace
    workspace.close()


def pause_at(monkeypatch: pytest.MonkeyPatch, module, step: str, lake: Lake, pause: timedelta) -> list[dict]:
    """At ``step`` (the files are staged, their transaction not begun), vacuum as if ``pause`` had passed."""
    swept: list[dict] = []

    def paused(name: str) -> None:
        if name == step:
            swept.append(vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + pause))

    monkeypatch.setattr(module, "failpoint", paused)
    return swept


def consistent(ws) -> dict[str, int]:
    """Every run final, and the catalog's case-run counts equal to the rows readers see; the lake's counts."""
    with ws.engine.connect() as conn:
        runs = conn.execute(sa.select(t.runs)).all()
    visible = dict(ws.lake.read("case_runs").group_by("run_id").len().iter_rows())
    for run in runs:
        assert run.status != "released" and run.finalised_at is not None, f"run {run.run_id} is stuck {run.status}"
        assert visible.get(run.run_id, 0) == run.case_runs, (run.run_id, visible.get(run.run_id), run.case_runs)
    for f in ws.lake.snapshot()[1]:
        raise AssertionError(f.message())
    return {name: ws.lake.read(name).height for name in ("case_runs", "outcomes", "assertion_results")}


def test_a_report_paused_within_its_lease_survives_vacuum(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    swept = pause_at(monkeypatch, ledger, "report.staged", ws.lake, PAUSED)
    ops.run_to_final(ws, SUITES[1])
    assert swept and all(s["unnamed"] == 0 for s in swept)
    counts = consistent(ws)
    assert counts["case_runs"] > 0 and counts["assertion_results"] > 0


def test_a_report_paused_past_its_lease_is_refused_whole(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    swept = pause_at(monkeypatch, ledger, "report.staged", ws.lake, LAPSED)
    run = ops.run_to_final(ws, SUITES[1])
    assert swept and sum(s["unnamed"] for s in swept) > 0  # vacuum took the paused writer's files
    assert run.status == "error" and "is missing; nothing was recorded: stage the rows again" in run.status_reason
    assert run.case_runs == 0 and consistent(ws)["case_runs"] == 0


@pytest.mark.parametrize("pause", [PAUSED, LAPSED], ids=["within", "past"])
def test_a_judging_pass_paused_at_its_staged_step_commits_whole_or_not_at_all(ws, monkeypatch, pause) -> None:
    ops.run_to_final(ws, SUITES[1])
    before = consistent(ws)
    with ws.engine.connect() as conn:
        runs = list(conn.execute(sa.select(t.runs.c.run_id)).scalars())
    swept = pause_at(monkeypatch, judgments, "judge.staged", ws.lake, pause)
    if pause is PAUSED:
        judging.judge_runs(ws, runs, trigger="rejudge", force=True)
    else:
        with pytest.raises(EvidenceError, match="stage the rows again"):
            judging.judge_runs(ws, runs, trigger="rejudge", force=True)
    assert swept
    after = consistent(ws)
    if pause is PAUSED:  # a second pass: one more outcome per case run, with its atoms
        assert after["outcomes"] == 2 * before["outcomes"] and after["assertion_results"] > before["assertion_results"]
    else:  # refused whole: readers see what they saw before the pass
        assert after == before
