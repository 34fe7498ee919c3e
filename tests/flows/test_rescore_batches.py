"""A re-score that reads atoms (a per-case pass rate, or counts it cannot use) reads them a batch of runs at a
time, and says the same as when it reads the whole suite at once; materialised, each run's verdict once."""

from __future__ import annotations

import polars as pl
import pytest

from assay.core.criteria import CriteriaSpec
from assay.flows import operations as ops
from assay.flows import rescoring
from assay.flows.demo import SUITES

SUITE = SUITES[0]


def test_batches_hold_about_so_many_case_runs_and_a_larger_run_alone() -> None:
    runs = pl.DataFrame({"run_id": ["a", "b", "c", "d", "e"], "case_runs": [3, 3, 9, 1, None]})
    assert rescoring.batches(runs, size=6) == [["a", "b"], ["c"], ["d", "e"]]
    assert rescoring.batches(runs.head(0), size=6) == []


@pytest.mark.parametrize("spec", [CriteriaSpec(pass_rate={"min": 0.8}), None], ids=["pass-rate", "stored-version"])
def test_a_rescore_read_run_by_run_equals_one_read_of_the_suite(demo_ws, monkeypatch: pytest.MonkeyPatch,
                                                                spec: CriteriaSpec | None) -> None:
    ws = demo_ws
    runs = [ops.run_to_final(ws, SUITE).run_id for _ in range(3)]
    whole = rescoring.rescore(ws, SUITE, "nightly_sweep", spec=spec)
    read: list[list[str]] = []
    atoms = rescoring.current_atoms

    def counted(ws, run_ids, suite_id=None):
        read.append(list(run_ids))
        return atoms(ws, run_ids, suite_id)

    monkeypatch.setattr(rescoring, "BATCH_CASE_RUNS", 1)  # every run a batch of its own
    monkeypatch.setattr(rescoring, "current_atoms", counted)
    monkeypatch.setattr(rescoring, "id_code", lambda _: 0)  # codes that collide: the atoms' path, whatever the spec
    split = rescoring.rescore(ws, SUITE, "nightly_sweep", spec=spec, materialise=True)
    assert split == whole
    assert sorted(read) == sorted([r] for r in runs)  # the atoms of one run at a time
    stored = ws.lake.read("verdicts")
    assert sorted(stored["run_id"]) == sorted(runs)
    assert dict(stored.select("run_id", "verdict").iter_rows()) == {r["run_id"]: r["verdict"] for r in whole["runs"]}
