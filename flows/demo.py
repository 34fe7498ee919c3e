"""``assay demo``: load the demo bundle, run both demo suites, show what ran and what was stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

DEMO = Path(__file__).parent / "demo"
SUITES = ("acme-plumbing/main-line", "northside-hvac/recorded-calls")


def run_demo(console: Console, quiet: bool = False) -> dict[str, Any]:
    from . import operations as ops
    from .render import print_load, print_run, run_with_progress
    from .workspace import open_workspace

    ws = open_workspace()
    say = (lambda *a, **k: None) if quiet else console.print
    say(f"[bold]Assay demo[/] in {ws.settings.home.resolve()}\n")

    bundle = DEMO / "bundle.yaml"
    loaded = ops.load(ws, str(bundle))
    if not quiet:
        print_load(console, "the demo bundle", loaded)

    runs = []
    for suite in SUITES:
        result = run_with_progress(console, suite, None, None, quiet=quiet)
        runs.append(result["run"])
        if not quiet:
            print_run(console, result["run"])
    stored = stored_summary(ws, [r["run_id"] for r in runs])
    if not quiet:
        print_stored(console, stored)
        say(
            "\nNext: `assay runs list`, `assay runs show RUN`, or query the lake with DuckDB "
            f"(files under {ws.settings.resolved_lake_url})."
        )
    return {"loaded": loaded, "runs": runs, "stored": stored}


def stored_summary(ws, run_ids: list[str]) -> dict[str, Any]:
    """What the lake holds for these runs, asked of DuckDB."""
    from assay.storage.query import connect

    con = connect(ws.lake)
    ids = ", ".join(f"'{r}'" for r in run_ids)
    case_runs = con.sql(
        f"""SELECT team_id, runner, case_key, status, count(*) AS case_runs,
                   round(sum(coalesce(cost_usd, 0)), 3) AS cost_usd,
                   sum(len(transcript)) AS turns, sum(len(tool_calls)) AS tool_calls
            FROM case_runs WHERE run_id IN ({ids})
            GROUP BY ALL ORDER BY team_id, case_key"""
    ).fetchall()
    evaluations = con.sql(
        f"""SELECT evaluator, coalesce(verdict, 'score') AS verdict, count(*) AS n
            FROM runner_evaluations WHERE run_id IN ({ids})
            GROUP BY ALL ORDER BY evaluator, verdict"""
    ).fetchall()
    files = {table: len(ws.lake.files(table)) for table in ("case_runs", "runner_evaluations")}
    return {
        "case_runs": [
            dict(zip(("team_id", "runner", "case_key", "status", "case_runs", "cost_usd", "turns", "tool_calls"), r))
            for r in case_runs
        ],
        "runner_evaluations": [dict(zip(("evaluator", "verdict", "n"), r)) for r in evaluations],
        "lake_files": files,
    }


def print_stored(console: Console, stored: dict[str, Any]) -> None:
    table = Table(title="evidence stored (case_runs, via DuckDB over the lake)", title_justify="left")
    for col in ("team", "runner", "case", "status", "case runs", "turns", "tool calls", "cost $"):
        table.add_column(col)
    for r in stored["case_runs"]:
        table.add_row(r["team_id"], r["runner"], r["case_key"], r["status"], str(r["case_runs"]),
                      str(r["turns"]), str(r["tool_calls"]), f"{r['cost_usd']:.3f}")
    console.print(table)
    ev = Table(title="runner evaluations (the vendor's own judgments, kept as evidence)", title_justify="left")
    for col in ("evaluator", "verdict", "count"):
        ev.add_column(col)
    for r in stored["runner_evaluations"]:
        ev.add_row(r["evaluator"], r["verdict"], str(r["n"]))
    console.print(ev)
    console.print("lake files: " + ", ".join(f"{t} {n}" for t, n in stored["lake_files"].items()))
