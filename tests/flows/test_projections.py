"""The projections flow: every consumer's verdicts under its latest criteria, kept in the lake's
``verdicts`` table, one mapped task per (suite, consumer); running it again writes nothing new."""

from __future__ import annotations

import polars as pl

from assay.flows import operations as ops
from assay.flows.projection_flows import projection_pairs, projections
from assay.flows.rescoring import rescore

SUITES = ("acme-plumbing/main-line", "northside-hvac/recorded-calls")


def _projected(ws) -> pl.DataFrame:
    return ws.lake.scan("verdicts").select("run_id", "consumer_key", "criteria", "verdict").collect().sort(
        "run_id", "consumer_key")


def test_projections_keep_every_consumers_verdicts_and_write_each_once(prefect_harness, demo_ws) -> None:
    runs = [ops.run_to_final(demo_ws, suite).run_id for suite in SUITES]
    pairs = projection_pairs(demo_ws)
    assert {suite for suite, _ in pairs} >= set(SUITES)

    first = projections()
    assert first["pairs"] == len(pairs)
    table = _projected(demo_ws)
    # one row per finalised run and consumer of its suite, each the verdict a re-score reads now
    expected = []
    for suite, consumer in pairs:
        for row in rescore(demo_ws, suite, consumer)["runs"]:
            if row["verdict"] is not None:
                expected.append((row["run_id"], consumer, row["verdict"]))
    assert sorted(expected) == sorted(table.select("run_id", "consumer_key", "verdict").iter_rows())
    assert set(table["run_id"]) == set(runs)
    assert first["verdicts"] == table.height

    again = projections()  # hourly: history already projected writes nothing
    assert again["pairs"] == first["pairs"]
    assert _projected(demo_ws).equals(table)

    newer = ops.run_to_final(demo_ws, SUITES[0]).run_id
    projections(suite=SUITES[0])  # one suite's pairs only
    after = _projected(demo_ws)
    consumers = {c for s, c in pairs if s == SUITES[0]}
    assert set(after.filter(pl.col("run_id") == newer)["consumer_key"]) == consumers
    assert after.height == table.height + len(consumers)


def test_projections_with_nothing_loaded_do_nothing(prefect_harness, assay_home) -> None:
    from assay.flows.workspace import open_workspace

    ws = open_workspace(create=True)  # as `assay init` does: the catalog migrated, nothing loaded
    ws.engine
    ws.close()
    assert projections() == {"pairs": 0, "runs": 0, "verdicts": 0}
