"""How the command line shows things to a person (rich tables and a progress bar)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table

from .durations import human_duration


def run_with_progress(
    console: Console, suite: str, runner: str | None, deadline: float | None, quiet: bool = False,
    runner_options: dict[str, Any] | None = None, repeat: int | None = None, budget: int | None = None,
    gate: list[str] | None = None,
) -> dict[str, Any]:
    """Run the ``run-suite`` flow with a live count of stored case runs against the run's cases. What would
    stop the run before it exists (an unknown suite or runner, say) is raised first, and starts no flow run.
    ``gate``: the consumers whose verdicts decide the flow run's state (a failed gate: ``Gate failed``)."""
    from assay.storage.catalog.runs import run_details

    from . import orchestration
    from .operations import check_run
    from .progress import is_quiet, live_count
    from .workspace import open_workspace

    ws = open_workspace()
    try:
        check_run(ws, suite, runner, repeat=repeat, budget=budget)
    finally:
        ws.close()
    if not (quiet or is_quiet() or _hinted or os.environ.get("PREFECT_API_URL")):
        _hint_server(console)
    with live_count(console, suite, unit="case runs", of="cases", quiet=quiet) as count:
        orchestration.listen(lambda receipt: count.advance(receipt.case_runs), on_start=count.total)
        try:
            result = orchestration.attend(orchestration.run_suite, suite, runner, deadline, runner_options, repeat,
                                          budget, gate or None)
        finally:
            orchestration.listen(None)
    ws = open_workspace()
    try:
        details = run_details(ws.engine, result["run"]["run_id"], ws.lake)
    finally:
        ws.close()
    return {"run": details, "executed": result["executed"]}


_hinted: list[bool] = []


def _hint_server(console: Console) -> None:
    """Once per command: without the workspace's server, each command starts a temporary one."""
    _hinted.append(True)
    console.print("starting a temporary Prefect server for this command; `assay server start` keeps one up "
                  "for the workspace", style="dim")


def rescore_with_progress(console: Console, ws: Any, suite: str, consumer: str, **options: Any) -> dict[str, Any]:
    """:func:`~assay.flows.rescoring.rescore` with a live count of the runs; the result gains ``seconds``."""
    from time import perf_counter

    from .progress import live_count
    from .rescoring import rescore

    start = perf_counter()
    with live_count(console, f"re-scoring {suite}", unit="runs") as count:
        result = rescore(ws, suite, consumer, progress=count.update, **options)
    return {**result, "seconds": perf_counter() - start}


def print_load(console: Console, path: str, summary: dict[str, Any]) -> None:
    counts = summary.get("counts", {})
    columns = sorted({k for c in counts.values() for k in c})
    table = _table(f"loaded {path}", ("kind", *columns))
    for col in table.columns[1:]:
        col.justify = "right"
    for kind, c in counts.items():
        table.add_row(kind, *(str(c.get(col, 0)) for col in columns))
    console.print(table)
    for line in summary.get("new_versions", []):
        console.print(f"  new version: {line}")


SHORT_ID = 12
"""Run ids in tables are cut to this many characters at least: a prefix ``get_run`` accepts."""


def short_ids(ids: list[str]) -> dict[str, str]:
    """Each id cut to the shortest prefix of at least :data:`SHORT_ID` characters that no other of ``ids``
    shares (never an ellipsis: a prefix is what ``assay runs show`` and the other commands accept)."""
    def shared(a: str, b: str) -> int:
        return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

    distinct = sorted(set(ids))  # an id shares its longest prefix with a neighbour in sorted order
    out = {}
    for i, full in enumerate(distinct):
        common = max((shared(full, distinct[j]) for j in (i - 1, i + 1) if 0 <= j < len(distinct)), default=0)
        out[full] = full[:max(SHORT_ID, common + 1)]
    return out


def _table(title: str, columns: tuple[str, ...], **kw: Any) -> Table:
    """A table whose cells wrap or fold, never cut with an ellipsis, kept inside the console's width."""
    from rich import box

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 1), collapse_padding=True, **kw)
    for col in columns:
        table.add_column(col, overflow="fold")
    return table


def _needs(columns: list[list[str]], split: bool = False) -> int:
    """The width a :func:`_table` with these columns (header, then cells) needs: at each cell's longest
    line, or with ``split`` at its longest word (the narrowest it wraps to without folding)."""
    pieces = (str.split if split else str.splitlines)
    return sum(max(len(p) for v in col for p in pieces(v)) for col in columns) + 2 * (len(columns) - 1)


def _keep_words(console: Console, table: Table, columns: list[list[str]]) -> None:
    """When the columns do not fit on one line a row but their longest words do, fix each column at its
    longest word: rich then wraps at the breaks the cells hold (and between the header's words) instead
    of folding an id mid-word. Otherwise rich folds, never cuts."""
    if _needs(columns) > console.width >= _needs(columns, split=True):
        for column, cells in zip(table.columns, columns, strict=True):
            column.width = _needs([cells], split=True)


def print_runs(console: Console, rows: list[dict[str, Any]]) -> None:
    if not rows:
        console.print("no runs yet: `assay run TEAM/SUITE`")
        return
    short = short_ids([r["run_id"] for r in rows])
    heads = ("run", "team/suite", "runner", "status (outcome)", "case runs", "evals", "created")
    cells = [[short[r["run_id"]], f"{r['team_id']}/{r['suite_key']}", r["runner"],
              r["status"] + (f" ({r['outcome']})" if r.get("outcome") else ""),
              str(r["case_runs"]), str(r["evaluations"]), r["created_at"][:19].replace("T", " ")] for r in rows]
    def columns() -> list[list[str]]:
        return [[h, *col] for h, col in zip(heads, zip(*cells, strict=True), strict=True)]

    if _needs(columns()) > console.width:
        for row in cells:  # two lines a row, broken where a reader expects, rather than an id cut anywhere
            row[1], row[6] = row[1].replace("/", "/\n", 1), row[6].replace(" ", "\n")
    table = _table("runs", heads)
    table.columns[0].no_wrap = True
    _keep_words(console, table, columns())
    for r, row in zip(rows, cells, strict=True):
        outcome = f" ({_verdict(r['outcome'])})" if r.get("outcome") else ""
        table.add_row(*row[:3], _status(r) + outcome, *row[4:])
    console.print(table)


def print_run(console: Console, r: dict[str, Any]) -> None:
    """One run: what ``assay runs show`` promises (status and reason, lease, stamped criteria and verdicts,
    reports accepted and rejected, and what judging made of it), a labelled line each."""
    from rich.markup import escape

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    add = grid.add_row
    add("  suite", f"{r['team_id']}/{r['suite_key']} via {r['runner']}")
    outcome = f" (outcome {_verdict(r['outcome'])})" if r.get("outcome") else ""
    reason = f": {escape(r['status_reason'])}" if r.get("status_reason") else ""
    add("  status", f"{_status(r)}{outcome}{reason}")
    lease = r.get("lease") or {}
    held = f"held by {escape(lease['owner'])} until {_time(lease['expires_at'])}" if lease.get("owner") else "none held"
    seen = "".join(f"; {what} {_time(lease[k])}" for what, k in (("claimed", "claimed_at"),
                                                                ("last report", "last_report_at")) if lease.get(k))
    add("  lease", f"{held}{seen}; deadline {_time(r['deadline_at']) if r.get('deadline_at') else 'none'}")
    add("  evidence", f"{r['case_count']} case(s), {r['case_runs']} case run(s) stored, "
                      f"{r['evaluations']} runner evaluation(s)")
    acc = r.get("accepted")
    if acc:
        last = f", last {_time(acc['last_at'])}" if acc["last_at"] else ""
        add("  accepted", f"{acc['reports']} report(s): {acc['case_runs']} case run(s), "
                          f"{acc['evaluations']} evaluation(s){last}")
    rejected = r.get("rejected_reports") or []
    add("  rejected", f"{len(rejected)} report(s)" if not rejected else f"[yellow]{len(rejected)} report(s)[/]")
    for x in rejected:
        add("", f"{escape(x['request_id'])} from {escape(x['owner'])}: {escape(x['reason'])}")
    j = r.get("judged")
    if j is not None:
        add("  judged", f"{j['case_runs_judged']} of {j['case_runs']} case run(s): {j['outcomes']} outcome(s) in "
                        f"{j['passes']} pass(es), latest {_time(j['last_judged_at'])} ({j['last_trigger']})"
            if j["judged"] else "not yet")
    stamped = r.get("stamped") or [{"consumer": k, "version": v, "verdict": None, "reason": None}
                                   for k, v in (r.get("criteria") or {}).items()]
    for n, c in enumerate(stamped):
        why = f": {escape(c['reason'])}" if c["reason"] else ""
        add("  stamped" if n == 0 else "", f"{c['consumer']} v{c['version']} {_verdict(c['verdict'])}{why}")
    console.print(f"[bold]run {r['run_id']}[/]")
    console.print(grid)


def _time(iso: str | None) -> str:
    return iso[:19].replace("T", " ") if iso else "-"


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


def print_verdicts(console: Console, rows: list[dict[str, Any]], runners: dict[str, str] | None = None) -> None:
    """The verdicts in the rows' order; with ``runners`` (run id -> runner), each run's runner beside it."""
    ran = ("runner",) if runners else ()
    table = _table("verdicts per consumer (under each run's stamped criteria)",
                   ("run", *ran, "consumer", "criteria", "stamped", "now", "why"))
    table.columns[0].no_wrap = True
    short = short_ids([r["run_id"] for r in rows])
    for r in rows:
        by = (runners.get(r["run_id"], "-"),) if runners else ()
        table.add_row(short[r["run_id"]], *by, r["consumer"], f"v{r['criteria_version']}", _verdict(r["stamped"]),
                      _verdict(r["verdict"]), r["reason"] or "")
    console.print(table if rows else "no stamped criteria for these runs")
    for r in rows:
        if r.get("series"):
            from .render_drill import print_series

            print_series(console, r["run_id"], r["consumer"], r["series"])
        if "cases" in r:
            from .render_drill import print_cases

            print_cases(console, r["run_id"], r["consumer"], r["cases"])


def print_rescore(console: Console, r: dict[str, Any]) -> None:
    table = _table(f"re-score {r['suite']} for {r['consumer']} under criteria {r['criteria']}",
                   ("run", "runner", "stamped", "under this", "why"))  # oldest first: --json has the times
    table.columns[0].no_wrap = True
    short = short_ids([row["run_id"] for row in r["runs"]])
    for row in r["runs"]:
        stamped = f"{_verdict(row['stamped'])} (v{row['stamped_version']})" if row["stamped_version"] else "-"
        table.add_row(short[row["run_id"]], row["runner"], stamped, _verdict(row["verdict"]), row["reason"])
    console.print(table)
    if r.get("seconds"):
        n = len(r["runs"])
        console.print(f"{n} run(s) re-scored in {human_duration(r['seconds'])} ({n / r['seconds']:,.0f} runs/s)",
                      style="dim")
    console.print(f"{len(r['flips'])} run(s) flip against their stamped verdict")
    for f in r["flips"]:
        console.print(f"  {short.get(f['run_id'], f['run_id'])}: {_verdict(f['stamped'])} -> "
                      f"{_verdict(f['verdict'])} ({f['reason']})")


def print_whatif(console: Console, w: dict[str, Any]) -> None:
    scope = ", ".join(f"{k} {w[k]}" for k in ("since", "team", "consumer") if w[k]) or "all history"
    table = _table(f"what-if: the candidate criteria over {w['runs']} run(s) ({scope})",
                   ("team", "suite", "consumer", "runs", "flips", "pass->fail", "fail->pass", "->error", "error->"))
    for g in w["groups"]:
        table.add_row(g["team"], g["suite"], g["consumer"], *(str(g[k]) for k in (
            "runs", "flips", "pass_to_fail", "fail_to_pass", "to_error", "from_error")))
    console.print(table)
    console.print(f"{len(w['flips'])} verdict(s) flip against the stamped one")
    for f in w["flips"]:
        keys = ", ".join(f["keys"]) or "no single key (coverage or undetermined results)"
        console.print(f"  {f['run_id']} {f['suite']} {f['consumer']}: {_verdict(f['stamped'])} -> "
                      f"{_verdict(f['verdict'])} on {keys}")
    for s in w["skipped"]:
        console.print(f"  skipped {s['suite']}: {s['why']}", style="dim")


def print_plan(console: Console, p: dict[str, Any]) -> None:
    console.print(f"[bold]plan for {p['file']}[/]" + ("" if p["changes"] else ": nothing changes"))
    for line in p["changes"]:
        console.print(f"  {line}")
    for s in p["suites"]:
        h, j = s["history"], s["rejudge"]
        console.print(f"[bold]{s['suite']}[/]: {s['tier']}  (history: {h['runs']} run(s), {h['case_runs']} case run(s))")
        for reason in s["rerun_reasons"]:
            console.print(f"  re-run because {reason}")
        for edit in s["in_place"]:
            console.print(f"  in place, nothing to redo: {edit}")
        if j["assertions"]:
            calls = f"{j['judge_calls']} judge call(s)" + ("" if j["judge_configured"] else " once a judge is configured")
            console.print(f"  re-judge: {j['outcomes']} new outcome(s), {j['results']} result(s) to evaluate, {calls}")
        for c in s["consumers"]:
            console.print(f"  {c['consumer']}: {c['tier']} ({c['why']})")
    for tpl in p.get("templates", []):
        console.print(tpl["line"], markup=False)
