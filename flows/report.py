"""What ``assay report`` shows, read from the projected tables and their rollup views (:mod:`assay.storage.fleet_views`)
over one scope -- a team or a suite -- and period.

The connection is :func:`assay.storage.query.connect`'s; :func:`narrow` replaces each projected table (and the
evidence the examples come from) by its rows in scope, so every rollup view over them answers for the scope
with its own SQL. Only finalised runs are projected, so the report counts only those. The projections must be
current: :func:`stale_runs` says how many runs they are behind (the command runs the ``projections`` flow
first when there are any).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.core.criteria import UNSUPPORTED
from assay.core.errors import ConfigError
from assay.storage import projection
from assay.storage.catalog.names import check_team
from assay.storage.catalog.runs import find_suite

from .workspace import Workspace

if TYPE_CHECKING:
    import duckdb

__all__ = ["EXAMPLES", "Scope", "gather", "narrow", "resolve_scope", "stale_runs", "write_report"]

EXAMPLES = 3
"""Example case runs shown per failing behaviour."""
TOP = 25
"""Failing behaviours shown (the worst first); the report says how many more there are."""
TURNS = 4
"""Transcript turns in an example's excerpt."""
NARROWED = ("run_verdicts", "case_verdicts", "behaviour_stats", "evaluator_pairs", "run_costs", "case_runs",
            "current_results")
"""The relations :func:`narrow` cuts to the scope: the projected tables and the evidence of the examples."""


@dataclass(frozen=True)
class Scope:
    """Which runs a report covers: a team, or a suite, or neither (every team); and a period of run dates."""

    team: str | None = None
    suite: str | None = None
    """``TEAM/SUITE``."""
    suite_id: str | None = None
    since: date | None = None
    """First run date included."""
    until: date | None = None
    """First run date excluded (as ``assay rejudge --until``)."""

    def describe(self) -> str:
        return f"suite {self.suite}" if self.suite else f"team {self.team}" if self.team else "every team"

    def period(self) -> str:
        if self.since and self.until:
            return f"runs from {self.since} to before {self.until}"
        if self.since:
            return f"runs from {self.since} on"
        return f"runs before {self.until}" if self.until else "all history"

    def to_dict(self) -> dict[str, Any]:
        return {"team": self.team, "suite": self.suite, "since": _iso(self.since), "until": _iso(self.until)}


def resolve_scope(ws: Workspace, *, suite: str | None = None, team: str | None = None,
                  since: date | None = None, until: date | None = None) -> Scope:
    """The scope the options name, checked against the catalog (an unknown team or suite names the known ones)."""
    if suite and team:
        raise ConfigError(f"--suite {suite} and --team {team} both given: give one (--suite TEAM/SUITE narrows "
                          "to one suite, --team TEAM to a team's suites)")
    if since and until and since >= until:
        raise ConfigError(f"--since {since} is not before --until {until}: --until is the first day left out, "
                          "so give a later --until")
    with ws.engine.connect() as conn:
        if suite:
            row = find_suite(conn, suite)
            return Scope(team=row.team_id, suite=f"{row.team_id}/{row.suite_key}", suite_id=row.suite_id,
                         since=since, until=until)
        return Scope(team=check_team(conn, team) if team else None, since=since, until=until)


def stale_runs(ws: Workspace) -> int:
    """Finalised runs whose projection is behind their evidence, judging or criteria (0: the tables are current)."""
    return len(projection.begin(ws.engine).runs)


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def narrow(con: "duckdb.DuckDBPyConnection", scope: Scope) -> None:
    """Replace each relation of :data:`NARROWED` by its rows in ``scope``; the views over them follow."""
    views = {name for (name,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary").fetchall()}
    for name in NARROWED:
        if name not in views:  # no file yet: an empty table, nothing to narrow
            continue
        columns = set(con.sql(f'SELECT * FROM "{name}" LIMIT 0').columns)
        where = []
        if scope.team:
            where.append(f"team_id = {_literal(scope.team)}")
        if scope.suite_id:
            where.append(f"suite_id = {_literal(scope.suite_id)}" if "suite_id" in columns else
                         f"run_id IN (SELECT run_id FROM runs WHERE suite_id = {_literal(scope.suite_id)})")
        if scope.since:
            where.append(f"date >= {_literal(scope.since.isoformat())}")
        if scope.until:
            where.append(f"date < {_literal(scope.until.isoformat())}")
        if where:
            con.execute(f'ALTER VIEW "{name}" RENAME TO "_all_{name}"')
            con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM "_all_{name}" WHERE {" AND ".join(where)}')


def _rows(con: "duckdb.DuckDBPyConnection", sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    relation = con.execute(sql, params or [])
    names = [d[0] for d in relation.description]
    return [dict(zip(names, row, strict=True)) for row in relation.fetchall()]


def gather(con: "duckdb.DuckDBPyConnection", scope: Scope) -> dict[str, Any]:
    """Everything the report shows, as plain rows, from a connection already :func:`narrow`-ed to ``scope``."""
    coverage = _rows(con, """
        SELECT count(*) AS runs, coalesce(sum(case_runs), 0)::BIGINT AS case_runs, count(DISTINCT team_id) AS teams,
          count(DISTINCT suite_id) AS suites, min(date) AS first_date, max(date) AS last_date,
          coalesce(list_sort(list_distinct(list(runner))), []) AS runners, max(computed_at) AS projected_at
        FROM run_costs""")[0]
    coverage["not_executed"] = _rows(con, """SELECT count(*) AS n FROM case_runs
        WHERE status <> 'executed' AND run_id IN (SELECT run_id FROM run_costs)""")[0]["n"]
    data: dict[str, Any] = {"scope": scope.to_dict(), "describe": scope.describe(), "period": scope.period(),
                            "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"), "coverage": coverage}
    if not coverage["runs"]:
        return data
    data["verdicts"] = _rows(con, """
        SELECT consumer_key, sum(runs)::BIGINT AS runs, sum(pass)::BIGINT AS pass, sum(fail)::BIGINT AS fail,
          sum(error)::BIGINT AS error, sum(not_judged)::BIGINT AS not_judged, sum(stamped_pass)::BIGINT AS stamped_pass,
          sum(stamped_fail)::BIGINT AS stamped_fail, sum(stamped_error)::BIGINT AS stamped_error,
          bool_or(mixed_evaluators) AS mixed_evaluators
        FROM verdict_counts GROUP BY consumer_key ORDER BY consumer_key""")
    data["verdicts_by_date"] = _rows(con, """
        SELECT date, consumer_key, sum(runs)::BIGINT AS runs, sum(pass)::BIGINT AS pass
        FROM verdict_counts GROUP BY date, consumer_key ORDER BY date, consumer_key""")
    data["failing"], data["failing_more"] = _failing(con)
    data["not_applicable"] = _not_applicable(con)
    data["trend"] = _rows(con, """
        SELECT assertion_key, assertion_version, week::VARCHAR AS week, teams, runs, results, met, not_met,
          undetermined, met_rate, evaluators, mixed_evaluators
        FROM behaviour_trend ORDER BY assertion_key, assertion_version, week""")
    data["weekly"] = _rows(con, """
        SELECT assertion_key, team_id, week::VARCHAR AS week, runs, results, not_met, undetermined, met_rate, versions,
          evaluators, mixed_evaluators
        FROM fleet_weekly WHERE not_met > 0 ORDER BY assertion_key, team_id, week""")
    data["runner_costs"] = _rows(con, """SELECT team_id, week::VARCHAR AS week, runner, runs, case_runs,
        runner_cost_usd, judge_cost_usd, total_cost_usd FROM runner_costs ORDER BY team_id, week, runner""")
    data["consumer_costs"] = _rows(con, """SELECT consumer_key, sum(runs)::BIGINT AS runs,
        sum(case_runs)::BIGINT AS case_runs, sum(runner_cost_usd) AS runner_cost_usd,
        sum(judge_cost_usd) AS judge_cost_usd, sum(total_cost_usd) AS total_cost_usd
        FROM consumer_costs GROUP BY consumer_key ORDER BY consumer_key""")
    data["agreement"] = _rows(con, """SELECT * FROM evaluator_agreement
        ORDER BY behaviour, vendor_key, team_id""")
    data["disagreements"] = _rows(con, """
        SELECT p.behaviour, p.vendor_key, p.case_key, p.run_id, p.case_run_id, p.our_met, p.our_reason, p.vendor_met,
          p.vendor_reason, c.source_ref
        FROM evaluator_pairs p LEFT JOIN case_runs c USING (case_run_id)
        WHERE NOT p.agree ORDER BY p.date DESC, p.behaviour, p.case_key, p.case_run_id LIMIT 10""")
    return data


def _failing(con: "duckdb.DuckDBPyConnection") -> tuple[list[dict[str, Any]], int]:
    """The failing behaviours (``common_failures`` over the whole scope, with the met rate of ``fleet_weekly``),
    each with :data:`EXAMPLES` failed case runs, different cases first; and how many more were left out."""
    failing = _rows(con, """
        SELECT f.*, r.met_rate FROM common_failures(1, DATE '0001-01-01', DATE '9999-12-31') f
        LEFT JOIN (SELECT assertion_key, sum(met) / nullif(sum(met) + sum(not_met), 0) AS met_rate
                   FROM fleet_weekly GROUP BY assertion_key) r USING (assertion_key)
        ORDER BY f.teams_failing DESC, f.failures DESC, f.assertion_key""")
    shown, more = failing[:TOP], max(len(failing) - TOP, 0)
    if not shown:
        return [], 0
    examples = _rows(con, f"""
        WITH failed AS (
          SELECT r.assertion_key, r.case_key, r.run_id, r.case_run_id, r.reason, r.evaluator, r.date, r.judged_at,
            row_number() OVER (PARTITION BY r.assertion_key, r.case_key
                               ORDER BY r.date DESC, r.judged_at DESC, r.case_run_id) AS per_case
          FROM current_results r
          WHERE r.met = false AND r.evaluator <> '{UNSUPPORTED}' AND r.assertion_key IN (SELECT unnest(?)) AND r.run_id IN (SELECT run_id FROM run_costs)
        ), picked AS (
          SELECT *, row_number() OVER (PARTITION BY assertion_key ORDER BY per_case, date DESC, case_key) AS n
          FROM failed
        )
        SELECT p.assertion_key, p.case_key, p.run_id, p.case_run_id, p.reason, p.evaluator, c.runner, c.source_ref,
          c.status, c.error, c.transcript
        FROM picked p LEFT JOIN case_runs c USING (case_run_id) WHERE p.n <= {EXAMPLES}
        ORDER BY p.assertion_key, p.n""", [[f["assertion_key"] for f in shown]])
    for row in shown:
        row["examples"] = [_example(e) for e in examples if e["assertion_key"] == row["assertion_key"]]
    return shown, more


def _not_applicable(con: "duckdb.DuckDBPyConnection") -> list[dict[str, Any]]:
    """Per behaviour and runner, the results that runner could not evaluate (unsupported): kept apart from the
    failing behaviours, since they say where a key does not apply, not how the agent behaved."""
    return _rows(con, f"""
        SELECT r.assertion_key, c.runner, count(*)::BIGINT AS results, count(DISTINCT r.run_id)::BIGINT AS runs
        FROM current_results r JOIN case_runs c USING (case_run_id)
        WHERE r.evaluator = '{UNSUPPORTED}' AND r.run_id IN (SELECT run_id FROM run_costs)
        GROUP BY r.assertion_key, c.runner ORDER BY r.assertion_key, c.runner""")


def _example(row: dict[str, Any]) -> dict[str, Any]:
    transcript = row.pop("transcript") or []
    row["excerpt"] = [{"role": turn["role"], "text": _short(turn["text"] or "")} for turn in transcript[:TURNS]]
    row["turns"] = len(transcript)
    return row


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def write_report(ws: Workspace, path: str, scope: Scope) -> dict[str, Any]:
    """Read the scope's rows, render the page and write it to ``path``; what was written (``assay.report``'s body)."""
    from assay.storage.query import connect

    from .report_html import render

    target = Path(path)
    if target.is_dir() or not target.parent.is_dir():
        raise ConfigError(f"cannot write the report to {path}: "
                          + ("it is a folder" if target.is_dir() else f"the folder {target.parent} does not exist")
                          + "; give --html a file path in an existing folder (report.html, say)")
    import duckdb

    from assay.storage.query import lake_error

    # a team's (or suite's) report reads only that team's files: another team's damaged file never stops it
    con = connect(ws.lake, catalog=True, teams=[scope.team] if scope.team else None)
    try:
        narrow(con, scope)
        data = gather(con, scope)
    except duckdb.Error as exc:
        found = lake_error(exc)  # a damaged lake file of the scope, named (never DuckDB's SQL)
        if found is None:
            raise
        raise found from None
    finally:
        con.close()
    page = render(data)
    content = page.html.encode("utf-8")
    target.write_bytes(content)
    c = data["coverage"]
    return {
        "path": str(target.resolve()), "bytes": len(content), "scope": scope.to_dict(), "sections": page.sections,
        "counts": {
            "runs": c["runs"], "case_runs": c["case_runs"], "not_executed": c["not_executed"], "teams": c["teams"],
            "suites": c["suites"], "consumers": len(data.get("verdicts", [])),
            "failing_behaviours": len(data.get("failing", [])) + data.get("failing_more", 0),
            "examples": sum(len(f["examples"]) for f in data.get("failing", [])),
            "evaluator_pairs": sum(r["pairs"] for r in data.get("agreement", [])), "charts": page.charts,
        },
    }
