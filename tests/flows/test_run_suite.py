"""The Prefect flows end to end on the embedded default: the demo bundle, both runners, the reaper."""

from __future__ import annotations


import pytest

from assay.flows import operations as ops
from assay.flows.demo import SUITES, stored_summary
from assay.storage.catalog.runs import create_run, get_run, run_details


@pytest.fixture
def workspace(demo_ws):
    return demo_ws


def test_run_suite_flow_runs_both_demo_suites(prefect_harness, workspace) -> None:
    from assay.flows.orchestration import run_suite

    config = run_suite(SUITES[0])
    calls = run_suite(SUITES[1])
    assert config["run"]["status"] == calls["run"]["status"] == "completed"
    assert config["run"]["runner"] == "config_check" and calls["run"]["runner"] == "recorded"
    assert config["executed"]["case_runs"] == config["run"]["case_count"] == 4
    assert calls["executed"]["case_runs"] == 12 and calls["executed"]["evaluations"] > 12
    details = run_details(workspace.engine, calls["run"]["run_id"])
    assert set(details["criteria"]) == {"blueprint_ci", "publish_gate", "nightly_sweep"}
    stored = stored_summary(workspace, [config["run"]["run_id"], calls["run"]["run_id"]])
    assert sum(r["case_runs"] for r in stored["case_runs"]) == 16
    assert {r["team_id"] for r in stored["case_runs"]} == {"acme-plumbing", "northside-hvac"}


def test_a_runner_that_cannot_run_the_target_is_refused_before_a_run_exists(workspace) -> None:
    from assay.core.errors import ConfigError
    from assay.storage.catalog.runs import list_runs

    with pytest.raises(ConfigError, match="cannot execute suite"):
        ops.start_run(workspace, SUITES[1], "config_check")
    assert list_runs(workspace.engine) == []


def test_reap_flow_times_out_an_abandoned_run(prefect_harness, workspace) -> None:
    from assay.flows.orchestration import reap

    run_id = create_run(workspace.engine, SUITES[0], "config_check").run_id
    workspace.ledger.claim(run_id, "gone", 0.01)
    import time

    time.sleep(0.05)
    assert reap()["lease_expired"] == [run_id]
    assert get_run(workspace.engine, run_id).status == "timed_out"


def test_compact_lake_flow_compacts_and_keeps_every_row(prefect_harness, workspace) -> None:
    from assay.flows.orchestration import compact, run_suite, vacuum

    for _ in range(2):
        run_suite(SUITES[1])
    before = workspace.lake.read("case_runs").sort("case_run_id")
    files = len(workspace.lake.files("case_runs"))
    result = compact()
    assert result["files_in"] >= files == 2 and vacuum() == {"retired": 0, "unnamed": 0}
    assert len(workspace.lake.files("case_runs")) == 1
    assert workspace.lake.read("case_runs").sort("case_run_id").equals(before)
