"""``assay demo``: load the demo bundle, run its suites, show what ran and what was stored, change the
bundle and show what each tier costs, then run one situation on three vendors (fakes on loopback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

DEMO = Path(__file__).parent / "demo"
SUITES = ("acme-plumbing/main-line", "northside-hvac/recorded-calls")
REPEATS = "acme-plumbing/chat-repeats"
"""The suite whose runs replay each case: the fake agent fumbles one call in ten on one of its cases."""


def run_demo(console: Console, quiet: bool = False, reset: bool = False) -> dict[str, Any]:
    """The whole demo, with the fake vendors (and, unless one is configured, the fake judge) running."""
    from .demo_vendors import fake_vendors

    with fake_vendors():
        return _run_demo(console, quiet, reset)


def _run_demo(console: Console, quiet: bool, reset: bool) -> dict[str, Any]:
    from . import operations as ops
    from .judging import judge_runs, verdicts_for
    from .rescoring import rescore
    from .planning import plan
    from .render import print_judged, print_load, print_plan, print_rescore, print_run, print_verdicts, run_with_progress
    from .demo_vendors import SUITE as VENDOR_SUITE, run_on_every_vendor

    ws = _fresh_workspace(reset)
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
    run_ids = [r["run_id"] for r in runs]
    stored = stored_summary(ws, run_ids)
    before = verdicts_for(ws, run_ids)
    if not quiet:
        print_stored(console, stored)
        say("\n[bold]1. One set of evidence, a verdict per consumer[/] (each under its own criteria)")
        print_verdicts(console, before)

    planned = plan(ws, str(REVISED))
    if not quiet:
        say("\n[bold]2. A revised bundle[/]: " + "; ".join(REVISIONS))
        print_plan(console, planned)
    reloaded = ops.load(ws, str(REVISED))
    rejudged = judge_runs(ws, run_ids, trigger="rejudge")
    rescored = rescore(ws, SUITES[0], "nightly_sweep")
    after = verdicts_for(ws, run_ids)
    if not quiet:
        say("\n[bold]3. Re-judge[/] (new outcomes over stored evidence; no runner called)")
        print_judged(console, rejudged)
        say("\n[bold]4. Re-score[/] (the raised threshold applied to history; a query)")
        print_rescore(console, rescored)
        say("\n[bold]5. What flipped, and why[/] (stamped verdicts never change; 'now' reads the latest outcomes)")
        print_verdicts(console, [v for v in after if v["verdict"] != v["stamped"]] or after)
        say(f"\n[bold]6. Re-run[/] (a case's situation changed, so only the runner can say): {SUITES[1]}")
    rerun = run_with_progress(console, SUITES[1], None, None, quiet=quiet)["run"]
    if not quiet:
        print_run(console, rerun)
        print_verdicts(console, verdicts_for(ws, [rerun["run_id"]]))
        say(f"\n[bold]7. One situation, three vendors[/] ({VENDOR_SUITE} on VAPI, ElevenLabs and Hamming — fakes "
            "on loopback; the rubric judged by our judge)")
    vendors = run_on_every_vendor(console, ws, quiet=quiet)
    if not quiet:
        say(f"\n[bold]8. Replayed calls[/] ({REPEATS}: each case replayed 10 times, undecided ones escalated up to 30; "
            "nightly_sweep asks each case for a 90 % pass rate at 95 % confidence)")
    repeated = run_with_progress(console, REPEATS, "vapi_chat", None, quiet=quiet)["run"]
    repeated_verdicts = verdicts_for(ws, [repeated["run_id"]])
    if not quiet:
        print_verdicts(console, repeated_verdicts)
        say(
            f"\nNext, with ASSAY_HOME={ws.settings.home}: `assay runs list`, `assay verdicts RUN --cases`, "
            "`assay rescore SUITE --consumer C --spec FILE`, or query the lake with DuckDB "
            f"(files under {ws.settings.resolved_lake_url}; notebooks/ has examples)."
        )
    return {
        "loaded": loaded, "runs": runs, "stored": stored, "verdicts": before, "plan": planned,
        "reloaded": reloaded, "rejudged": rejudged, "rescored": rescored, "verdicts_after": after, "rerun": rerun,
        "vendors": vendors, "repeated": repeated, "repeated_verdicts": repeated_verdicts,
    }


MARKER = ".assay-demo"
"""Written in a home the demo created: only such a home may be emptied by ``assay demo --reset``."""


def _fresh_workspace(reset: bool):
    """The demo tells a story from an empty workspace: refuse one with runs, unless asked to empty it.

    Like ``assay init`` it may create ASSAY_HOME (``make demo`` starts from nothing). ``--reset`` empties
    only a home holding the demo's marker: evidence is write-once, and one slip with ``ASSAY_HOME``
    pointing at a team's workspace must not delete it.
    """
    import shutil

    from assay.core.errors import ConfigError
    from assay.storage.catalog.runs import list_runs

    from .workspace import load_settings, open_workspace

    settings = load_settings()
    home = settings.home.resolve()
    created = not home.exists() or (home.is_dir() and not any(home.iterdir()))
    ws = open_workspace(settings, create=True)
    if created:
        (home / MARKER).write_text("Created by `assay demo`; `assay demo --reset` may empty this folder.\n")
    if not list_runs(ws.engine, limit=1):
        return ws
    if not reset:
        raise ConfigError(
            f"ASSAY_HOME {home} already holds runs; the demo starts from an empty one: "
            "point ASSAY_HOME at a new folder, or pass --reset to empty this one"
        )
    if not (home / MARKER).is_file():
        raise ConfigError(
            f"--reset empties only a workspace the demo created, and {home} has no {home / MARKER}: "
            "point ASSAY_HOME at a new folder for the demo (`make demo` uses .assay/demo-home), "
            "or delete this one yourself if nothing in it is needed"
        )
    ws.close()
    if ws.settings.catalog_url is not None or ws.settings.lake_url is not None:
        raise ConfigError("--reset empties ASSAY_HOME only; unset ASSAY_CATALOG_URL and ASSAY_LAKE_URL for the demo")
    for name in ("catalog.db", "catalog.db-wal", "catalog.db-shm"):
        (home / name).unlink(missing_ok=True)
    for name in ("lake", "demo"):
        shutil.rmtree(home / name, ignore_errors=True)
    return open_workspace(ws.settings, create=True)  # a new, empty catalog: migrated, as `assay init` would


REVISIONS = (
    "acme-plumbing's out_of_area_clause now asks for the referral clause 'refer them to a licensed plumber' "
    "(a reworded assertion)",
    "acme-plumbing's nightly_sweep threshold rises from 0.75 to 0.9 (an edited criteria)",
    "northside-hvac's maintenance plan now costs $199 a year (a changed situation)",
)


REVISED = DEMO / "revised.yaml"
"""The demo bundle with a reworded assertion, a raised threshold and a changed situation (see REVISIONS)."""


def write_revised_bundle(path: Path) -> Path:
    """A copy of :data:`REVISED` at ``path``, with its target files beside it (a bundle's targets are
    files inside its own folder)."""
    import shutil

    import yaml

    bundle = yaml.safe_load(REVISED.read_text())
    for rel in {rel for team in bundle["teams"] for suite in team["suites"] for rel in suite["target"].values()}:
        (path.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DEMO / rel, path.parent / rel)
    shutil.copyfile(REVISED, path)
    return path


def stored_summary(ws, run_ids: list[str]) -> dict[str, Any]:
    """What the lake holds for these runs, asked of DuckDB."""
    from assay.storage.query import connect

    ids = ", ".join(f"'{r}'" for r in run_ids)
    with connect(ws.lake) as con:
        case_runs = con.sql(
            f"""SELECT team_id, runner, case_key, status, count(*) AS case_runs,
                       round(sum(coalesce(cost_usd, 0)), 3) AS cost_usd,
                       sum(len(transcript)) AS turns, sum(len(tool_calls)) AS tool_calls
                FROM case_runs WHERE run_id IN ({ids})
                GROUP BY ALL ORDER BY ALL"""
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
