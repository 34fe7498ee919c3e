"""The projections flow: the projected tables agree with the verdict rules and the atoms, an incremental
history equals a full rebuild, a pass with nothing new recomputes nothing, and a pass killed at either of
its steps leaves the tables and the mark as they were."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
import sqlalchemy as sa
from polars.testing import assert_frame_equal
from readme_blocks import assert_walked
from command_line import assay

from assay.core.document_models import validate
from assay.flows import operations as ops
from assay.flows.demo import DEMO, REVISED, SUITES
from assay.flows.judging import judge_runs
from assay.flows.projection_flows import projections
from assay.flows.rescoring import rescore
from assay.storage.catalog import tables as t
from assay.storage.lake.projection_tables import PROJECTED
from assay.storage.lake.upkeep import vacuum
from assay.storage.query import connect


def snapshot(ws) -> dict[str, pl.DataFrame]:
    """Every projected table's live rows, in key order, without the time each pass wrote them."""
    return {name: ws.lake.read(name).drop("computed_at").sort(list(table.natural_key))
            for name, table in PROJECTED.items()}


def assert_same(left: dict[str, pl.DataFrame], right: dict[str, pl.DataFrame]) -> None:
    assert left.keys() == right.keys()
    for name in left:
        assert_frame_equal(left[name], right[name], check_column_order=False), name


def test_the_projected_tables_agree_with_the_rules_and_the_atoms(prefect_harness, demo_ws) -> None:
    ws = demo_ws
    runs = {suite: ops.run_to_final(ws, suite).run_id for suite in SUITES}
    summary = projections()
    assert summary["full"] and summary["runs"] == 2 and summary["suites"] == 2

    verdicts = ws.lake.read("run_verdicts")
    with ws.engine.connect() as conn:
        stamped = {(r.run_id, r.consumer_key): r.verdict for r in conn.execute(sa.select(t.run_criteria))}
    # the stamped version's row carries the verdict stamped at finalisation, and nothing has changed since
    on_stamped = verdicts.filter(pl.col("is_stamped"))
    assert {(r["run_id"], r["consumer_key"]): r["stamped_verdict"] for r in on_stamped.iter_rows(named=True)} == stamped
    assert not on_stamped["changed"].any()
    # the current version's verdict is what `assay rescore` says under it
    for suite, run_id in runs.items():
        consumers = verdicts.filter(pl.col("run_id") == run_id, pl.col("is_current"))
        assert consumers.height == 3
        for row in consumers.iter_rows(named=True):
            scored = {r["run_id"]: r for r in rescore(ws, suite, row["consumer_key"])["runs"]}[run_id]
            assert (row["verdict"], row["reason"]) == (scored["verdict"], scored["reason"])
    assert verdicts.filter(pl.col("suite_key") == "recorded-calls")["coverage"].to_list() == [1.0] * 3

    current = ws.lake.read("current_results")
    stats = ws.lake.read("behaviour_stats")
    assert dict(stats.group_by("run_id").agg(pl.col("results").sum()).iter_rows()) == dict(
        current.group_by("run_id").len().iter_rows())
    assert stats.filter(pl.col("assertion_key") == "every_variable_resolves")["not_met"].sum() == 4

    # the case breakdown: one row per judged case run, consumer and version
    cases = ws.lake.read("case_verdicts")
    judged = current.select("run_id", "case_run_id").unique().group_by("run_id").len()
    rows = verdicts.group_by("run_id").len().join(judged, on="run_id", suffix="_case_runs")
    assert dict(cases.group_by("run_id").len().iter_rows()) == {
        r["run_id"]: r["len"] * r["len_case_runs"] for r in rows.iter_rows(named=True)}

    # judge versus vendor: the guardrail and our transcript check of the same behaviour, call by call
    pairs = ws.lake.read("evaluator_pairs")
    ours = current.filter(pl.col("assertion_key") == "declines_out_of_area").select("case_run_id", ours="met")
    vendor = current.filter(pl.col("assertion_key") == "guardrail_handles_out_of_area").select(
        "case_run_id", vendor="met")
    expected = ours.join(vendor, on="case_run_id").with_columns(agree=pl.col("ours") == pl.col("vendor"))
    assert pairs.height == expected.height == 3
    assert sorted(pairs["agree"].to_list()) == sorted(expected["agree"].to_list())
    assert set(pairs["vendor_evaluator"]) == {"hamming:guardrail"} and set(pairs["our_evaluator"]) == {"assay:transcript"}

    costs = ws.lake.read("run_costs")
    reported = ws.lake.read("case_runs").group_by("run_id").agg(pl.col("cost_usd").sum())
    recorded = runs["northside-hvac/recorded-calls"]
    assert costs.filter(pl.col("run_id") == recorded)["runner_cost_usd"].item() == pytest.approx(
        reported.filter(pl.col("run_id") == recorded)["cost_usd"].item())

    # the rollups an analyst asks for are one SELECT each
    con = connect(ws.lake, catalog=True)
    counts = con.sql("SELECT team_id, consumer_key, pass, fail, error FROM verdict_counts ORDER BY ALL").fetchall()
    assert sum(p + f + e for *_, p, f, e in counts) == 6
    failing = con.sql("SELECT assertion_key FROM common_failures(1, DATE '2000-01-03', DATE '2100-01-04')").fetchall()
    assert ("every_variable_resolves",) in failing
    assert con.sql("SELECT agree, disagree FROM evaluator_agreement").fetchall() == [
        (int(expected["agree"].sum()), int((~expected["agree"]).sum()))]
    mixed = con.sql("SELECT bool_or(mixed_evaluators) FROM fleet_weekly WHERE team_id = 'northside-hvac'").fetchall()[0]
    assert mixed == (True,)  # a vendor's guardrail and our checks add up in one team's week: said so


def test_an_incremental_history_equals_a_full_rebuild(prefect_harness, demo_ws) -> None:
    ws = demo_ws
    first = {suite: ops.run_to_final(ws, suite).run_id for suite in SUITES}
    assert projections()["runs"] == 2
    before = snapshot(ws)
    files = {name: ws.lake.live(name) for name in PROJECTED}

    again = projections()  # nothing new since: nothing recomputed, no file rewritten
    assert again["runs"] == 0 and again["rows"] == dict.fromkeys(PROJECTED, 0)
    assert {name: ws.lake.live(name) for name in PROJECTED} == files
    assert_same(snapshot(ws), before)

    newer = ops.run_to_final(ws, SUITES[1]).run_id  # new evidence, judged and finalised
    assert projections()["runs"] == 1
    assert set(ws.lake.read("run_verdicts")["run_id"]) == {*first.values(), newer}

    # a revised bundle: a new criteria version (nightly_sweep on main-line) and a reworded assertion
    ops.load(ws, str(REVISED))
    judge_runs(ws, [first[SUITES[0]]], trigger="rejudge")
    assert projections()["runs"] == 1  # main-line's one run: new outcomes and new current criteria
    main = ws.lake.read("run_verdicts").filter(pl.col("run_id") == first[SUITES[0]], pl.col("consumer_key") == "nightly_sweep")
    assert sorted(main.select("criteria_version", "is_stamped", "is_current").iter_rows()) == [(1, True, False), (2, False, True)]
    trend = ws.lake.read("behaviour_stats").filter(pl.col("assertion_key") == "out_of_area_clause")
    assert trend["assertion_version"].to_list() == [2]  # the rewording's results are the current ones

    incremental = snapshot(ws)
    rebuilt = projections(full=True)
    assert rebuilt["full"] and rebuilt["runs"] == 3
    assert_same(snapshot(ws), incremental)


CHILD = r"""
from assay.flows.projection_flows import project_all
from assay.flows.workspace import open_workspace

project_all(open_workspace())
print("finished without reaching the failpoint")
"""


@pytest.mark.parametrize("step", ["projection.staged", "projection.recorded"])
def test_a_pass_killed_at_either_step_leaves_tables_and_mark_as_they_were(failpoint_kill, prefect_harness, demo_ws,
                                                                          step) -> None:
    ws = demo_ws
    ops.run_to_final(ws, SUITES[0])
    projections()
    before = snapshot(ws)
    with ws.engine.connect() as conn:
        mark = conn.execute(sa.select(t.projection_marks)).one()
    ops.run_to_final(ws, SUITES[1])  # stale: the next pass has work to do

    failpoint_kill(step, [sys.executable, "-c", CHILD], env={**os.environ, "ASSAY_HOME": str(ws.settings.home)})

    with ws.engine.connect() as conn:
        assert conn.execute(sa.select(t.projection_marks)).one() == mark
    assert_same(snapshot(ws), before)  # nothing of the killed pass is visible
    vacuum(ws.lake, grace_seconds=1, now=datetime.now(UTC) + timedelta(hours=1))
    with ws.engine.connect() as conn:
        named = set(conn.execute(sa.select(t.lake_files.c.path)).scalars())
    on_disk = {p[len(ws.lake.root) + 1:] for p in ws.lake.fs.find(ws.lake.root) if p.endswith(".parquet")}
    assert on_disk <= named, "the killed pass's files outlived the vacuum"

    assert projections()["runs"] == 1  # recovery: the next pass does what the killed one did not
    recovered = snapshot(ws)
    projections(full=True)
    assert_same(snapshot(ws), recovered)


def test_projections_with_nothing_loaded_do_nothing(prefect_harness, assay_home) -> None:
    from assay.flows.workspace import open_workspace

    ws = open_workspace(create=True)  # as `assay init` does: the catalog migrated, nothing loaded
    ws.engine
    try:
        summary = projections()
        assert (summary["runs"], summary["suites"]) == (0, 0)
        assert all(ws.lake.read(name).is_empty() for name in PROJECTED)
    finally:
        ws.close()


FLEET = "## Fleet tables"


def test_the_readme_fleet_block_runs_as_written_through_the_cli(readme_walk, tmp_path) -> None:
    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    for suite in SUITES:
        assay("run", suite, home=home)
    done = readme_walk(FLEET, home)
    assert_walked(FLEET, done)
    said = [proc.stdout for _, _, proc in done]
    assert "projected every run (full): 2 run(s) of 2 suite(s)" in " ".join(said[0].split())
    counts = said[1]
    assert all(name in counts for name in ("acme-plumbing", "northside-hvac", "publish_gate"))
    assert "every_variable_resolves" in said[2]

    again = json.loads(assay("project", "--json", home=home).stdout)
    validate(again)
    assert (again["schema"], again["full"], again["runs"]) == ("assay.project", False, 0)
    full = json.loads(assay("project", "--full", "--json", home=home).stdout)
    assert (full["full"], full["runs"], full["rows"]["run_verdicts"]) == (True, 2, 6)
