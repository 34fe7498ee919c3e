"""The fleet views separate results a runner cannot evaluate (not applicable) from failures."""

from __future__ import annotations

import duckdb
import pytest

from assay.core.criteria import UNSUPPORTED
from assay.storage.fleet_views import FLEET, MACROS

# (team, run, key, evaluator, results, met, not_met): tool.called fails for real once (acme on vapi_chat) and
# is not evaluated by hamming in two teams; greets never fails
STATS = [
    ("acme", "r1", "tool.called", "assay:tool", 2, 1, 1),
    ("acme", "r2", "tool.called", UNSUPPORTED, 2, 0, 2),
    ("bolt", "r3", "tool.called", UNSUPPORTED, 3, 0, 3),
    ("bolt", "r3", "greets", "assay:transcript", 3, 3, 0),
]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("""CREATE TABLE behaviour_stats (team_id VARCHAR, run_id VARCHAR, assertion_key VARCHAR,
        evaluator VARCHAR, results BIGINT, met BIGINT, not_met BIGINT, undetermined BIGINT, assertion_version INTEGER,
        week DATE)""")
    con.executemany("INSERT INTO behaviour_stats VALUES (?, ?, ?, ?, ?, ?, ?, 0, 1, DATE '2026-11-30')", STATS)
    for name in ("fleet_weekly", "behaviour_teams", "behaviour_trend"):
        con.execute(f"CREATE VIEW {name} AS {FLEET[name][0]}")
    con.execute(MACROS["common_failures"])
    return con


@pytest.mark.parametrize("view", ["behaviour_teams", "behaviour_trend"])
def test_a_key_a_runner_cannot_evaluate_is_counted_apart_from_its_failures(con, view: str) -> None:
    got = con.sql(f"SELECT not_met, not_applicable, met_rate FROM {view} WHERE assertion_key = 'tool.called'").fetchall()
    assert got == [(1, 5, 0.5)]  # one real failure; five not applicable, out of the met rate


def test_the_teams_failing_count_only_real_failures(con) -> None:
    got = con.sql("SELECT team_id, not_met, not_applicable FROM fleet_weekly WHERE assertion_key = 'tool.called' "
                  "ORDER BY team_id").fetchall()
    assert got == [("acme", 1, 2), ("bolt", 0, 3)]
    teams = con.sql("SELECT teams_failing, failing_teams FROM behaviour_teams WHERE assertion_key = 'tool.called'")
    assert teams.fetchall() == [(1, ["acme"])]


def test_common_failures_lists_no_key_that_only_did_not_apply(con) -> None:
    con.execute("DELETE FROM behaviour_stats WHERE evaluator = 'assay:tool'")
    assert con.sql("SELECT * FROM common_failures(1, DATE '2000-01-01', DATE '2100-01-01')").fetchall() == []
