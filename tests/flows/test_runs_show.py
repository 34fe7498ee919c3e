"""`assay runs show` shows what the README promises: status and reason, the lease and deadline, the
criteria and verdicts stamped, the reports accepted and rejected, and what judging made of the run."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from command_line import assay

from assay.core.errors import LeaseError
from assay.core.evidence import CaseRun, Report, Turn
from assay.core.runner import Lease
from assay.flows.judging import judge_runs
from assay.storage.catalog.runs import create_run, job_for_run


def _show(home: Path, *args: str):
    return assay("runs", "show", *args, home=home, columns=80)


@pytest.fixture
def held_run(demo_ws, assay_home: Path) -> str:
    """A run under a live lease with a deadline: one report accepted, one refused, judged once."""
    ws = demo_ws
    run_id = create_run(ws.engine, "acme-plumbing/main-line", "config_check", deadline=timedelta(hours=2)).run_id
    lease = ws.ledger.claim(run_id, "worker-1", 600)
    cases = job_for_run(ws.engine, run_id).cases
    ws.ledger.report(lease, Report.from_case_runs("r1", [
        CaseRun(case_id=c.case_id, transcript=[Turn(role="agent", text="hello")]) for c in cases]))
    with pytest.raises(LeaseError):
        ws.ledger.report(Lease(run_id, "impostor", lease.expires_at), Report.from_case_runs("r2", []))
    judge_runs(ws, [run_id], trigger="judge")
    return run_id


def test_runs_show_json_has_lease_reports_stamped_criteria_and_judging(held_run: str, assay_home: Path) -> None:
    run = json.loads(_show(assay_home, held_run[:12], "--json").stdout)["run"]
    assert run["run_id"] == held_run and run["status"] == "running"
    lease = run["lease"]
    assert lease["owner"] == "worker-1" and lease["expires_at"] and lease["claimed_at"] and lease["deadline_at"]
    assert run["accepted"]["reports"] == 1 and run["accepted"]["case_runs"] == 4 and run["accepted"]["last_at"]
    [rejected] = run["rejected_reports"]
    assert rejected["owner"] == "impostor" and "worker-1" in rejected["reason"] and rejected["received_at"]
    assert [(s["consumer"], s["version"], s["verdict"]) for s in run["stamped"]] == [
        ("blueprint_ci", 1, None), ("nightly_sweep", 1, None), ("publish_gate", 1, None)]  # not finalised yet
    judged = run["judged"]
    assert judged["judged"] and judged["case_runs_judged"] == 4 == judged["case_runs"] == judged["outcomes"]
    assert judged["passes"] == 1 and judged["last_trigger"] == "judge" and judged["last_judged_at"]


def test_runs_show_text_says_the_same_within_80_columns(held_run: str, assay_home: Path) -> None:
    out = _show(assay_home, held_run).stdout
    assert all(len(line) <= 80 for line in out.splitlines()), out
    flat = " ".join(out.split())
    assert f"run {held_run}" in flat and "suite acme-plumbing/main-line via config_check status running" in flat
    assert "lease held by worker-1 until" in flat and "deadline 20" in flat, flat
    assert "accepted 1 report(s): 4 case run(s)" in flat and "rejected 1 report(s)" in flat, flat
    assert "r2 from impostor:" in flat and "worker-1" in flat.split("r2 from impostor:")[1], flat
    assert "judged 4 of 4 case run(s): 4 outcome(s) in 1 pass(es)" in flat and "(judge)" in flat, flat
    assert "stamped blueprint_ci v1 -" in flat and "publish_gate v1 -" in flat, flat


def test_tables_cut_run_ids_only_to_unique_prefixes_of_12_or_more() -> None:
    from assay.flows.render import short_ids

    twins = ["0123456789abcdef" + "0" * 16, "0123456789abcdef" + "1" * 16, "fedcba9876543210" + "0" * 16]
    short = short_ids(twins)
    assert short[twins[0]] == twins[0][:17] and short[twins[1]] == twins[1][:17]  # 16 shared: one more
    assert short[twins[2]] == twins[2][:12]
