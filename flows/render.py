"""How the command line shows things to a person (rich tables and a progress bar)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def run_with_progress(
    console: Console, suite: str, runner: str | None, deadline: float | None, quiet: bool = False,
    runner_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the ``run-suite`` flow with a live count of stored case runs."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from assay.storage.catalog.runs import run_details

    from . import orchestration
    from .workspace import open_workspace

    with Progress(
        SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed} case runs"),
        TimeElapsedColumn(), console=console, transient=True, disable=quiet,
    ) as progress:
        bar = progress.add_task(f"running {suite}", total=None)
        orchestration.listen(lambda receipt: progress.advance(bar, receipt.case_runs))
        try:
            result = orchestration.run_suite(suite, runner, deadline, runner_options)
        finally:
            orchestration.listen(None)
    details = run_details(open_workspace().engine, result["run"]["run_id"])
    return {"run": details, "executed": result["executed"]}


def print_load(console: Console, path: str, summary: dict[str, Any]) -> None:
    table = Table(title=f"loaded {path}", title_justify="left")
    counts = summary.get("counts", {})
    columns = sorted({k for c in counts.values() for k in c})
    table.add_column("kind")
    for col in columns:
        table.add_column(col, justify="right")
    for kind, c in counts.items():
        table.add_row(kind, *(str(c.get(col, 0)) for col in columns))
    console.print(table)
    for line in summary.get("new_versions", []):
        console.print(f"  new version: {line}")


def print_runs(console: Console, rows: list[dict[str, Any]]) -> None:
    table = Table(title="runs", title_justify="left")
    for col in ("run", "team/suite", "runner", "status", "case runs", "evaluations", "created"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["run_id"][:12], f"{r['team_id']}/{r['suite_key']}", r["runner"], _status(r),
            str(r["case_runs"]), str(r["evaluations"]), r["created_at"][:19],
        )
    console.print(table if rows else "no runs yet: `assay run TEAM/SUITE`")


def print_run(console: Console, r: dict[str, Any]) -> None:
    console.print(f"[bold]run {r['run_id']}[/]  {r['team_id']}/{r['suite_key']} via {r['runner']}: {_status(r)}")
    if r.get("status_reason"):
        console.print(f"  reason: {r['status_reason']}")
    console.print(f"  cases {r['case_count']}, case runs stored {r['case_runs']}, runner evaluations {r['evaluations']}")
    crit = r.get("criteria") or {}
    if crit:
        console.print("  criteria stamped: " + ", ".join(f"{k} v{v}" for k, v in crit.items()))
    rejected = r.get("rejected_reports") or []
    if rejected:
        console.print(f"  [yellow]{len(rejected)} rejected report(s)[/]: " + "; ".join(x["reason"] for x in rejected[:3]))


def _status(r: dict[str, Any]) -> str:
    colour = {"completed": "green", "error": "red", "timed_out": "yellow"}.get(r["status"], "cyan")
    return f"[{colour}]{r['status']}[/]"


def print_judged(console: Console, j: dict[str, Any]) -> None:
    console.print(
        f"judged {j['case_runs']} case run(s) of {j['runs']} run(s): {j['outcomes']} new outcome(s), "
        f"{j['evaluated']} result(s) evaluated, {j['carried']} carried forward unchanged"
        + (f", {j['unjudged']} not chosen" if j["unjudged"] else "")
        + f", judge calls {j['judge_calls']} (requests sent, retries included)"
        + (f", {j['judge_cached']} rubric result(s) from the judge cache" if j.get("judge_cached") else "")
    )


def _verdict(v: str | None) -> str:
    colour = {"pass": "green", "fail": "red", "error": "yellow"}.get(v or "", "dim")
    return f"[{colour}]{v or '-'}[/]"


def print_verdicts(console: Console, rows: list[dict[str, Any]]) -> None:
    table = Table(title="verdicts per consumer (under each run's stamped criteria)", title_justify="left")
    for col in ("run", "consumer", "criteria", "stamped", "now", "why"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["run_id"][:12], r["consumer"], f"v{r['criteria_version']}", _verdict(r["stamped"]),
                      _verdict(r["verdict"]), r["reason"] or "")
    console.print(table if rows else "no stamped criteria for these runs")
    for r in rows:
        for c in r.get("cases", []):
            console.print(f"  {r['run_id'][:12]} {r['consumer']} {c['case_key']}: {_verdict(c['verdict'])} {c['reason']}")


def print_rescore(console: Console, r: dict[str, Any]) -> None:
    table = Table(title=f"re-score {r['suite']} for {r['consumer']} under criteria {r['criteria']}",
                  title_justify="left")
    for col in ("run", "stamped", "under this", "why"):
        table.add_column(col, overflow="fold")
    for row in r["runs"]:
        stamped = f"{_verdict(row['stamped'])} (v{row['stamped_version']})" if row["stamped_version"] else "-"
        table.add_row(row["run_id"][:12], stamped, _verdict(row["verdict"]), row["reason"])
    console.print(table)
    console.print(f"{len(r['flips'])} run(s) flip against their stamped verdict")
    for f in r["flips"]:
        console.print(f"  {f['run_id'][:12]}: {_verdict(f['stamped'])} -> {_verdict(f['verdict'])} ({f['reason']})")


def print_plan(console: Console, p: dict[str, Any]) -> None:
    console.print(f"[bold]plan for {p['file']}[/]" + ("" if p["changes"] else ": nothing changes"))
    for line in p["changes"]:
        console.print(f"  {line}")
    for s in p["suites"]:
        h, j = s["history"], s["rejudge"]
        console.print(f"[bold]{s['suite']}[/]: {s['tier']}  (history: {h['runs']} run(s), {h['case_runs']} case run(s))")
        for reason in s["rerun_reasons"]:
            console.print(f"  re-run because {reason}")
        if j["assertions"]:
            calls = f"{j['judge_calls']} judge call(s)" + ("" if j["judge_configured"] else " once a judge is configured")
            console.print(f"  re-judge: {j['outcomes']} new outcome(s), {j['results']} result(s) to evaluate, {calls}")
        for c in s["consumers"]:
            console.print(f"  {c['consumer']}: {c['tier']} ({c['why']})")
