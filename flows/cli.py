"""The ``assay`` command line.

Cheap to start: this module imports typer and our own light modules only; each command imports
what it needs (Prefect, Polars, DuckDB, SQLAlchemy) when it runs. Errors are caught once, here: one
red line and exit 1 (the traceback with ``--debug``); a malformed command line exits 2.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from assay.core.documents import document
from assay.core.errors import AssayError

app = typer.Typer(
    name="assay",
    help="Test AI agents on runners you do not own: run, keep the evidence, judge it, read verdicts.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
runs_app = typer.Typer(help="The run ledger.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

_state = {"debug": False}
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
) -> None:
    _state["debug"] = debug


def _console():
    from rich.console import Console

    return Console()


def _emit(schema: str, body: dict[str, Any], as_json: bool) -> bool:
    """Print ``body`` as a JSON document when asked; return whether it did."""
    if as_json:
        typer.echo(json.dumps(document(schema, body), indent=2, default=str))
    return as_json


def _workspace():
    from .workspace import open_workspace

    return open_workspace()


@app.command()
def init(as_json: JsonOpt = False) -> None:
    """Create ASSAY_HOME: the catalog (migrated to the newest schema) and the lake."""
    ws = _workspace()
    ws.engine  # migrates
    ws.lake
    body = {"home": str(ws.settings.home.resolve()), "catalog": ws.settings.resolved_catalog_url,
            "lake": ws.settings.resolved_lake_url}
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


@app.command()
def run(
    suite: Annotated[str, typer.Argument(help="The suite: TEAM/SUITE, or SUITE when unambiguous.")],
    runner: Annotated[str | None, typer.Option(help="Runner name; default: the one for the suite's target.")] = None,
    deadline: Annotated[float | None, typer.Option(help="Minutes after which the run is not worth waiting for.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite through a runner and store what it produced as evidence."""
    from .render import run_with_progress

    result = run_with_progress(_console(), suite, runner, deadline, quiet=as_json)
    if not _emit("assay.run", result, as_json):
        from .render import print_run

        print_run(_console(), result["run"])
    if result["run"]["status"] == "error":
        raise typer.Exit(1)


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
    """Show one run: status, lease, criteria stamped, reports accepted and rejected."""
    from assay.storage.catalog.runs import run_details

    details = run_details(_workspace().engine, run_id)
    if not _emit("assay.run", {"run": details}, as_json):
        from .render import print_run

        print_run(_console(), details)


@app.command()
def reap(as_json: JsonOpt = False) -> None:
    """Resolve runs whose lease expired or whose deadline passed to timed_out."""
    from . import operations as ops

    result = ops.reap(_workspace())
    if not _emit("assay.reap", result, as_json):
        n = sum(map(len, result.values()))
        _console().print(f"timed out {n} run(s): " + ", ".join(f"{k} {len(v)}" for k, v in result.items()))


@app.command()
def demo(as_json: JsonOpt = False) -> None:
    """On a fresh ASSAY_HOME: load the demo bundle, run both demo suites, show what was stored."""
    from .demo import run_demo

    summary = run_demo(_console(), quiet=as_json)
    _emit("assay.demo", summary, as_json)


def main(argv: list[str] | None = None) -> None:
    """Entry point. Typer handles the command line (a malformed one exits 2); our errors end here."""
    try:
        app(args=argv, prog_name="assay")
    except AssayError as exc:
        _fail(exc, exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - the boundary: one line, the traceback with --debug
        _fail(exc, 1, unexpected=True)


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


if __name__ == "__main__":
    main()
