"""``assay report --html PATH``: one self-contained HTML page over a scope and period -- verdicts per consumer,
the failing behaviours with example case runs, trends, cost, and judge vs vendor agreement -- from the projected
tables (:mod:`.report`, :mod:`.report_html`).

When the projected tables are behind the evidence (runs finalised, judged or re-judged, criteria added since
the last ``assay project``), it runs the ``projections`` flow first and says so: a report never shows stale
figures.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

DAY = ["%Y-%m-%d"]


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    html: Annotated[str, typer.Option("--html", metavar="PATH", help="Write the report to this HTML file.")],
    suite: Annotated[str | None, typer.Option(metavar="TEAM/SUITE", help="Only this suite's runs.")] = None,
    team: Annotated[str | None, typer.Option(metavar="TEAM", help="Only this team's runs.")] = None,
    since: Annotated[datetime | None, typer.Option(formats=DAY, metavar="YYYY-MM-DD",
                                                   help="Runs from this day on (UTC).")] = None,
    until: Annotated[datetime | None, typer.Option(formats=DAY, metavar="YYYY-MM-DD",
                                                   help="Runs before this day (UTC; the day itself left out).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Write an HTML report (no network needed to view it): verdicts, failing behaviours, trends, cost, agreement."""
    from . import cli
    from .report import resolve_scope, stale_runs, write_report

    ws = cli._workspace()
    scope = resolve_scope(ws, suite=suite, team=team, since=since.date() if since else None,
                          until=until.date() if until else None)
    console = cli._console()
    projected = None
    if stale_runs(ws):  # Prefect is imported only then: a report over current tables starts in a second
        from . import orchestration
        from .task_runners import wide

        projected = orchestration.attend(wide(orchestration.projections), False)
        if not as_json:
            console.print(f"[dim]projected {projected['runs']} run(s) first: the projected tables were behind the "
                          "evidence[/]")
    written = write_report(ws, html, scope)
    if cli._emit("assay.report", {**written, "projected": projected}, as_json):
        return
    counts = written["counts"]
    if not counts["runs"]:
        console.print(f"[yellow]no finalised run in {scope.describe()}, {scope.period()}[/]: the report says so and "
                      "shows nothing else; widen --since/--until or the scope, or run a suite first")
    console.print(f"wrote {written['path']} ({written['bytes']:,} bytes): {counts['runs']} run(s), "
                  f"{counts['case_runs']} case run(s), {counts['teams']} team(s); {counts['failing_behaviours']} "
                  f"failing behaviour(s), {counts['charts']} chart(s); sections: {', '.join(written['sections'])}",
                  soft_wrap=True)
