"""A suite larger than a projection batch is projected over several batches, one batch's atoms at a time, and
its projected tables are the same as when it is projected in one: the other runs' rows kept once, none lost."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from assay.flows import operations as ops
from assay.flows.demo import SUITES
from assay.flows.projection_flows import projections
from assay.storage import projection
from assay.storage.lake.projection_tables import PROJECTED


def snapshot(ws) -> dict[str, pl.DataFrame]:
    return {name: ws.lake.read(name).drop("computed_at").sort(list(table.natural_key))
            for name, table in PROJECTED.items()}


def test_a_suite_projected_over_several_batches_equals_one_batch(prefect_harness, demo_ws,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ws = demo_ws
    kept = ops.run_to_final(ws, SUITES[1]).run_id
    assert projections()["runs"] == 1
    newer = [ops.run_to_final(ws, SUITES[1]).run_id for _ in range(3)]

    plan = projection.begin(ws.engine)
    assert list(plan.suites.values()) == [sorted(newer)]  # the new runs of the one suite
    per_run = projection.batches(plan, case_runs=1)
    assert [sum(batch.values(), []) for batch in per_run] == [[r] for r in sorted(newer)]  # one run each
    assert len(projection.batches(plan)) == 1  # the default: the suite's three small runs read together

    with monkeypatch.context() as patched:
        patched.setattr(projection, "BATCH_CASE_RUNS", 1)  # every run a batch of its own
        assert projections()["runs"] == 3
    split = snapshot(ws)
    assert set(split["run_verdicts"]["run_id"]) == {kept, *newer}
    assert projections(full=True)["runs"] == 4  # all in one batch
    rebuilt = snapshot(ws)
    for name in PROJECTED:
        assert_frame_equal(split[name], rebuilt[name], check_column_order=False)
