"""The ``assay`` command line.

Cheap to start: this module imports typer and our own light modules only; each command imports
what it needs (Prefect, Polars, DuckDB, SQLAlchemy) when it runs. Errors are caught once, here: one
red line and exit 1 (the traceback with ``--debug``); a malformed command line exits 2.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from datetime import datetime
from enum import Enum
from typing import Annotated, Any

import typer

from assay.core.documents import document
from assay.core.errors import AssayError, UsageError

app = typer.Typer(
    name="assay",
    help="Test AI agents on runners you do not own: run, keep the evidence, judge it, read verdicts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
runs_app = typer.Typer(help="The run ledger.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

_state: dict[str, Any] = {"debug": False}
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]


def _version(value: bool) -> None:
    if value:  # package metadata only: as light as --help
        from importlib.metadata import version

        typer.echo(f"assay {version('assay')}")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars and no library chatter.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    _state["debug"] = debug
    from .progress import configure

    configure(quiet=quiet, debug=debug)
    from .workspace import load_settings, require_home, use_prefect_home

    settings = load_settings()
    command = ctx.invoked_subcommand
    if command not in CREATE_WORKSPACE | WITHOUT_WORKSPACE and not _asks_for_help(ctx):
        require_home(settings)  # before Prefect (or anything) can create a mistyped ASSAY_HOME
    # before any command imports Prefect, which reads it once (and creates its home when it does)
    use_prefect_home(settings, debug, inside_home=command in CREATE_WORKSPACE or settings.home.is_dir())


CREATE_WORKSPACE = frozenset({"init", "demo", "ci"})
"""The commands that create ASSAY_HOME when it does not exist."""
WITHOUT_WORKSPACE = frozenset({
    "version", "fake-vendors", "import-config", "export",
    "sessions", "bless", "distil", "review", "calibrate",  # a repository's coding-agent sessions and exams
    "run",  # creates it for an exam, as `assay ci` does; refuses a suite where it opens the workspace
})
"""The commands that need no workspace, or find out whether they do once they run (where ASSAY_HOME does not
exist, Prefect's home is not put inside it). Every other one is refused at once there, before Prefect, which
makes its home inside ASSAY_HOME when imported, could create the folder."""


def _asks_for_help(ctx: typer.Context) -> bool:
    """Whether the command line asks for help (``--help``, or a command group with no command) rather than
    for work: help needs no workspace. The group's callback runs before click parses the rest, so this
    reads the arguments :func:`main` was given."""
    from typer.core import TyperGroup

    args = _state.get("argv") or []
    if "--help" in args:
        return True
    command = ctx.command.get_command(ctx, ctx.invoked_subcommand or "")  # type: ignore[attr-defined]
    return isinstance(command, TyperGroup) and args[-1:] == [ctx.invoked_subcommand]


def _console():
    from rich.console import Console

    return Console()


def _emit(schema: str, body: dict[str, Any], as_json: bool) -> bool:
    """Print ``body`` as a JSON document when asked; return whether it did."""
    if as_json:  # orjson (a Prefect dependency): a re-score of thousands of runs prints in milliseconds
        import orjson

        sys.stdout.buffer.write(orjson.dumps(document(schema, body), default=str,
                                                     option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
        sys.stdout.flush()
    return as_json


_opened: list = []
"""The workspaces the running command opened: :func:`main` closes them when it ends, however it ends."""


def _workspace(create: bool = False):
    """The settings' workspace, closed (its catalog engine disposed, its connections with it) when the
    command ends."""
    from .workspace import open_workspace

    ws = open_workspace(create=create)
    _opened.append(ws)
    return ws


@app.command("version")
def version_command(as_json: JsonOpt = False) -> None:
    """Print this build's version, the machine-readable documents it can produce (schema id, revision,
    stability), and the exit codes every command shares."""
    import platform
    from importlib.metadata import version

    from assay.core.documents import DOCUMENTS
    from assay.core.exit_codes import MEANING

    body = {
        "version": version("assay"), "python": platform.python_version(),
        "schemas": [{"schema": sid, "revision": rev, "stability": tier} for sid, (rev, tier) in sorted(DOCUMENTS.items())],
        "exit_codes": [{"code": int(c), "name": c.name, "meaning": meaning} for c, meaning in MEANING.items()],
    }
    if _emit("assay.version", body, as_json):
        return
    typer.echo(f"assay {body['version']} (Python {body['python']})")
    typer.echo("documents (--json): " + ", ".join(f"{r['schema']} r{r['revision']}" for r in body["schemas"]))
    typer.echo("exit codes: " + "; ".join(f"{r['code']} {r['name']}" for r in body["exit_codes"]))


@app.command()
def init(as_json: JsonOpt = False) -> None:
    """Create ASSAY_HOME: the catalog (migrated to the newest schema) and the lake. On an existing
    workspace, upgrade its catalog (safe to repeat: it keeps every run)."""
    ws = _workspace(create=True)
    with ws.engine.connect():  # opening the catalog with create migrates it to the newest schema
        pass
    ws.lake.check_layout(creating=True)
    from assay.core.redact import mask_url

    body = {"home": str(ws.settings.home.resolve()), "catalog": mask_url(ws.settings.resolved_catalog_url),
            "lake": mask_url(ws.settings.resolved_lake_url)}
    if not _emit("assay.init", body, as_json):
        _console().print(f"[green]ready[/]: catalog {body['catalog']}, lake {body['lake']}")


@app.command()
def load(
    path: Annotated[str, typer.Argument(help="A YAML or JSON bundle of consumers, cases, suites, assertions, criteria.")],
    as_json: JsonOpt = False,
) -> None:
    """Load a bundle into the catalog: all or nothing; loading it twice changes nothing."""
    from . import operations as ops

    summary = ops.load(_workspace(), path)
    if not _emit("assay.load", summary, as_json):
        from .render import print_load

        print_load(_console(), path, summary)


@runs_app.command("list")
def runs_list(
    suite: Annotated[str | None, typer.Option(help="Only runs of this suite.")] = None,
    team: Annotated[str | None, typer.Option(help="Only runs of this team.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """List runs, newest first."""
    from assay.storage.catalog.runs import list_runs

    rows = [r.to_dict() for r in list_runs(_workspace().engine, suite=suite, team=team, limit=limit)]
    if not _emit("assay.runs", {"runs": rows}, as_json):
        from .render import print_runs

        print_runs(_console(), rows)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(help="A run id (or a unique prefix of 6+ characters).")],
    as_json: JsonOpt = False,
) -> None:
    """Show one run: status and reason, lease, criteria and verdicts stamped, reports accepted and
    rejected, and its judging."""
    from assay.storage.catalog.runs import run_details

    ws = _workspace()
    details = run_details(ws.engine, run_id, ws.lake)
    if not _emit("assay.run", {"run": details}, as_json):
        from .render import print_run

        print_run(_console(), details)


@app.command()
def reap(as_json: JsonOpt = False) -> None:
    """Resolve runs whose lease expired, deadline passed or that never started to timed_out; finalise
    runs left released."""
    from . import orchestration

    result = orchestration.attend(orchestration.reap)
    if not _emit("assay.reap", result, as_json):
        finalising = ("finalised_released", "finalisation_deferred")
        timed_out = {k: v for k, v in result.items() if not k.startswith("scratch_") and k not in finalising}
        n = sum(map(len, timed_out.values()))
        _console().print(f"timed out {n} run(s): " + ", ".join(f"{k} {len(v)}" for k, v in timed_out.items()))
        if result["finalised_released"]:
            _console().print(f"judged and finalised {len(result['finalised_released'])} run(s) left released: "
                             + ", ".join(result["finalised_released"]))
        if result["finalisation_deferred"]:
            _console().print(f"left {len(result['finalisation_deferred'])} released run(s) for the next reap (a "
                             "failure that passes, such as a full disk; `assay runs show RUN` says which): "
                             + ", ".join(result["finalisation_deferred"]))
        if result["scratch_deleted"] or result["scratch_failed"]:
            _console().print(f"deleted {len(result['scratch_deleted'])} vendor object(s) left by dead runs"
                             + "".join(f"; not deleted: {n}" for n in result["scratch_failed"]))


@app.command()
def judge(
    run_id: Annotated[str, typer.Argument(help="The run to judge again (a new outcome per case run).")],
    force: Annotated[bool, typer.Option(help="Re-evaluate unchanged pairs too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Judge a run's stored evidence again; its stamped verdicts never change."""
    from assay.storage.catalog.runs import get_run

    from . import orchestration

    ws = _workspace()
    try:
        run = get_run(ws.engine, run_id)
    finally:
        ws.close()
    body = orchestration.watched(_console(), "judging", "case runs", as_json, orchestration.judge, run.run_id, force)
    if not _emit("assay.judge", body, as_json):
        from .render import print_judged, print_verdicts

        print_judged(_console(), body["judged"])
        print_verdicts(_console(), body["verdicts"])


@app.command()
def rejudge(
    run: Annotated[list[str] | None, typer.Option("--run", help="A run id (repeatable).")] = None,
    suite: Annotated[str | None, typer.Option(help="Every finalised run of this suite.")] = None,
    team: Annotated[str | None, typer.Option(help="Every finalised run of this team.")] = None,
    since: Annotated[str | None, typer.Option(help="Runs created on or after this date (YYYY-MM-DD).")] = None,
    until: Annotated[str | None, typer.Option(help="Runs created before this date (YYYY-MM-DD).")] = None,
    key: Annotated[list[str] | None, typer.Option("--key", help="Only these assertion keys (repeatable).")] = None,
    new_versions: Annotated[bool, typer.Option(help="Only pairs never judged before.")] = False,
    force: Annotated[bool, typer.Option(help="Re-evaluate unchanged pairs too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write new outcomes over stored evidence for chosen runs. Calls the judge, never a runner."""
    from . import orchestration
    from .selection import select_runs
    from .task_runners import wide

    ws = _workspace()
    try:
        run_ids = select_runs(ws, runs=run, suite=suite, team=team, since=since, until=until,
                              choose="give --run RUN (repeatable), --suite TEAM/SUITE or --team TEAM")
    finally:
        ws.close()
    judged = orchestration.watched(_console(), "judging", "case runs", as_json, wide(orchestration.rejudge), run_ids,
                                   keys=key, new_versions_only=new_versions, force=force)
    if not _emit("assay.rejudge", judged, as_json):
        from .render import print_judged

        print_judged(_console(), judged)


@app.command()
def rescore(
    suite: Annotated[str | None, typer.Argument(help="The suite: TEAM/SUITE (none: every suite, with --spec).")] = None,
    consumer: Annotated[str | None, typer.Option(help="Whose criteria to apply (without SUITE: only this consumer's "
                                                      "stamped verdicts).")] = None,
    version: Annotated[int | None, typer.Option(help="A stored criteria version (default: the latest).")] = None,
    spec: Annotated[str | None, typer.Option(help="A candidate criteria spec file (YAML or JSON).")] = None,
    since: Annotated[datetime | None, typer.Option(formats=["%Y-%m-%d"], help="Without SUITE: runs created on or "
                                                   "after this day (UTC).")] = None,
    team: Annotated[str | None, typer.Option(help="Without SUITE: only this team's runs.")] = None,
    materialise: Annotated[bool, typer.Option(help="Append the verdicts to the lake's verdicts table.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply a criteria to stored history: per-run verdicts and the runs that flip. A query.

    With a SUITE, one consumer's criteria (a stored version or --spec) over that suite's runs. Without one,
    a what-if: --spec over every suite's runs in scope (--since, --team), against each consumer's stamped
    verdict, by team and consumer, with the keys that make each flip.
    """
    from .selection import read_spec

    if suite is None:
        _whatif(spec, since, team, consumer, version, materialise, as_json)
        return
    if since is not None or team is not None:
        raise UsageError("--since and --team scope a what-if over every suite: drop SUITE (and give --spec), or "
                         "drop them to re-score the whole suite")
    if consumer is None:
        raise UsageError(f"re-scoring {suite} needs --consumer: whose criteria to apply")
    candidate = read_spec(spec) if spec else None
    if materialise:  # it writes to the lake: a flow (a plain re-score stays a query, without Prefect)
        _rescore_materialise(suite, consumer, version, candidate, as_json)
        return
    options = {"version": version, "spec": candidate}
    if as_json:  # the lean path: no progress bar, nothing rich imported
        from .rescoring import rescore as do_rescore

        _emit("assay.rescore", do_rescore(_workspace(), suite, consumer, **options), as_json)
        return
    from .render import print_rescore, rescore_with_progress

    print_rescore(_console(), rescore_with_progress(_console(), _workspace(), suite, consumer, **options))


def _whatif(spec: str | None, since: datetime | None, team: str | None, consumer: str | None, version: int | None,
            materialise: bool, as_json: bool) -> None:
    from .selection import read_spec

    if spec is None:
        raise UsageError("name a SUITE to re-score, or give --spec candidate.yaml to ask what a candidate criteria "
                         "would flip over history (with --since DATE and --team T to narrow it)")
    if version is not None or materialise:
        raise UsageError("--version and --materialise need a SUITE: a what-if over history applies --spec and writes nothing")
    from .whatif import whatif

    result = whatif(_workspace(), read_spec(spec), since=since.date() if since else None, team=team, consumer=consumer)
    if not _emit("assay.whatif", result, as_json):
        from .render import print_whatif

        print_whatif(_console(), result)


def _rescore_materialise(suite: str, consumer: str, version: int | None, candidate: Any, as_json: bool) -> None:
    from assay.storage.catalog.assertions import criteria_spec
    from assay.storage.catalog.runs import find_suite

    from . import orchestration

    with _workspace().engine.connect() as conn:  # a mistyped suite or consumer starts no flow run
        found = find_suite(conn, suite)
        if candidate is None:
            criteria_spec(conn, found.suite_id, consumer, version)

    result = orchestration.watched(_console(), f"re-scoring {suite}", "runs", as_json, orchestration.rescore_materialise,
                                   suite, consumer, version, candidate.model_dump() if candidate else None)
    if not _emit("assay.rescore", result, as_json):
        from .render import print_rescore

        print_rescore(_console(), result)


@app.command()
def plan(
    path: Annotated[str, typer.Argument(help="A bundle to compare with what is loaded.")],
    as_json: JsonOpt = False,
) -> None:
    """Say what loading a bundle would need per suite and consumer: re-score, re-judge or re-run."""
    from .planning import plan as make_plan

    result = make_plan(_workspace(), path)
    if not _emit("assay.plan", result, as_json):
        from .render import print_plan

        print_plan(_console(), result)


@app.command()
def demo(
    reset: Annotated[bool, typer.Option(help="Empty ASSAY_HOME first (its catalog and lake): only a home the demo created.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """On a fresh ASSAY_HOME: load the demo bundle, run both suites, show verdicts and the three tiers."""
    from .demo import run_demo

    summary = run_demo(_console(), quiet=as_json, reset=reset)
    _emit("assay.demo", summary, as_json)


class QueryFormat(str, Enum):
    """How `assay query` prints its answer."""

    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def query(
    sql: Annotated[str, typer.Argument(metavar="SQL", help="Over the lake, the catalog and the derived views.")],
    fmt: Annotated[QueryFormat, typer.Option("--format", help="table, csv, or json (an array of rows).")] = (
        QueryFormat.table
    ),
    as_json: JsonOpt = False,
) -> None:
    """Ask your own question: SQL on assay.connect(), DuckDB over the lake and the catalog.

    Every view and column is listed in docs/reference/query.md. --json prints the answer as a document
    (its columns with their types, and its rows); --format json, the bare array of rows.
    """
    import assay
    from assay.storage.query import run as run_sql

    if as_json and fmt is not QueryFormat.table:
        raise UsageError(f"--json prints a document and --format {fmt.value} the bare answer: give one of them")
    answer = run_sql(assay.connect(), sql)
    if as_json:
        columns = [{"name": n, "type": t} for n, t in zip(answer.columns, answer.types, strict=True)]
        _emit("assay.query", {"columns": columns, "rows": answer.records(), "row_count": len(answer.rows)}, True)
    elif fmt is QueryFormat.csv:
        typer.echo(answer.to_csv(), nl=False)
    elif fmt is QueryFormat.json:
        typer.echo(answer.to_json())
    else:
        _print_answer(answer)


def _print_answer(answer) -> None:
    """A table when the columns fit the terminal, else one block per row (column, value), like psql's ``\\x``."""
    from rich.rule import Rule
    from rich.table import Table
    from rich.text import Text

    console = _console()
    rows = [[v if len(v) <= 200 else v[:199] + "…" for v in row] for row in answer.text(null="null")]
    needed = sum(max([len(c), *(min(len(r[i]), 20) for r in rows)]) + 3 for i, c in enumerate(answer.columns))
    if needed <= console.width:
        table = Table(show_edge=False, pad_edge=False)
        for name in answer.columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*map(Text, row))
        console.print(table)
    for n, row in enumerate(rows if needed > console.width else [], start=1):
        console.print(Rule(f"row {n}", align="left", style="dim"))
        block = Table.grid(padding=(0, 2))
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for name, value in zip(answer.columns, row, strict=True):
            block.add_row(name, Text(value))
        console.print(block)
    console.print(f"{len(rows)} row(s)", style="dim")


def main(argv: list[str] | None = None) -> None:
    """Entry point. Typer handles the command line (a malformed one exits 2); our errors end here."""
    _state["argv"] = list(sys.argv[1:] if argv is None else argv)
    try:
        app(args=argv, prog_name="assay")
    except AssayError as exc:
        _fail(exc, exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - the boundary: one line, the traceback with --debug
        _fail(exc, 1, unexpected=True)
    finally:
        while _opened:
            _opened.pop().close()


COLLECT_EVERY = (200_000, 10, 10)
"""The ``assay`` process's garbage-collector thresholds (``gc.set_threshold``): the youngest generation is
collected after 200,000 new objects instead of Python's 700. A command imports Prefect, Polars,
SQLAlchemy and pydantic, hundreds of thousands of objects that live as long as the process; at 700 the
collector passes over them hundreds of times while they are imported and while the command works: a
process doing what ``assay rescore --json`` does over 20,000 runs spent 125-150 ms of about 0.8 s
collecting. Cyclic garbage is still collected, later: the young generation after 200,000 new objects,
the older two after ten and a hundred times that. Measured with ``python -m assay.flows.cli rescore
--json`` over 20,000 runs against the same command with this setting undone, median of 9 fresh processes,
alternating, two runs: 0.857 s -> 0.808 s and 0.851 s -> 0.766 s."""


def run_command() -> None:
    """The ``assay`` program: :func:`main` as the process's entry point, ending without the interpreter's
    teardown.

    After the exit handlers, Python would collect every object in several full passes as it tears the
    modules down: with Prefect, pydantic and the engines imported, hundreds of thousands of objects,
    0.15-0.85 s of every command, for memory the operating system takes back anyway. So the first exit
    handler of the process (registered here, before any other: handlers run last-registered first) ends
    it once all the others have run: standard streams flushed, then ``os._exit`` with the command's exit
    status. Non-daemon threads have been joined before any handler runs. What it skips is what no command
    relies on: finalisers of objects still alive (every store closes what it opens, and a catalog's
    SQLite write-ahead log is replayed by the next open). Tests call :func:`main`, which never does this.

    The cyclic garbage collector runs less often here than Python's default (:data:`COLLECT_EVERY`).
    When the workspace's Prefect server went away during the command, it ends as soon as :func:`main` has
    (:func:`_server_went_away`).
    """
    gc.set_threshold(*COLLECT_EVERY)
    if not atexit._ncallbacks():  # a handler registered earlier would run after ours: then end as usual
        atexit.register(_end_now)
    try:
        main()
    except SystemExit as done:
        _ended_with.append(done.code)
        if _server_went_away():
            _end_now()
        raise
    _ended_with.append(0)


def _server_went_away() -> bool:
    """Whether the Prefect server this command's flows reported to went away meanwhile (:mod:`.flow_context`).
    Then the command ends at once, its work done: at exit Prefect would try to send every event it still
    holds to the gone server, several seconds each, before the process could end."""
    context = sys.modules.get("assay.flows.flow_context")
    return context is not None and context.server_gone() is not None


_ended_with: list[object] = []  # the exit status run_command's main ended with (SystemExit's code)


def _end_now() -> None:
    if not _ended_with:  # main did not end (an interrupt, say): let the interpreter end as it does
        return
    code = _ended_with[-1]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    # SystemExit's code: None is success, a number the status, anything else was printed (as Python does) and is 1
    os._exit(0 if code is None else code if isinstance(code, int) else 1)


def _fail(exc: BaseException, code: int, unexpected: bool = False) -> None:
    if _state["debug"]:
        import traceback

        traceback.print_exception(exc)
    message = str(exc) if not unexpected else f"{type(exc).__name__}: {exc}"
    first, *rest = message.splitlines() or [""]
    typer.secho(f"error: {first}", fg="red", err=True)
    for line in rest:
        typer.echo(f"  {line}", err=True)
    if unexpected and not _state["debug"]:
        typer.echo("  (run with --debug for the traceback)", err=True)
    sys.exit(code)


# Commands kept in modules of their own; each registers itself on the app.
from . import (  # noqa: E402
    cli_calls, cli_collect, cli_deploy, cli_drill, cli_exam_run, cli_exams, cli_export, cli_import_config, cli_judge, cli_lake,
    cli_legacy, cli_ls, cli_project, cli_report, cli_server, cli_template, cli_vendors, cli_verdicts,
)

for _module in (cli_calls, cli_collect, cli_deploy, cli_drill, cli_exam_run, cli_exams, cli_export, cli_import_config, cli_judge,
                cli_lake, cli_legacy, cli_ls, cli_project, cli_report, cli_server, cli_template, cli_vendors, cli_verdicts):
    _module.register(app)

if __name__ == "__main__":
    run_command()
