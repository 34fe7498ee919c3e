"""``assay project``: bring the projected tables up to date (the ``projections`` flow, which the deployment
runs hourly): per-consumer verdicts, fleet statistics, evaluator pairs and costs, for analysts to query
with ``assay query`` or ``assay.connect()``."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("project")(project)


def project(
    full: Annotated[bool, typer.Option("--full", help="Recompute every run, not only those that changed.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Project the evidence into the analysts' tables: only the runs that changed since the last pass."""
    from . import cli, orchestration
    from .task_runners import wide

    result = orchestration.attend(wide(orchestration.projections), full)
    if cli._emit("assay.project", result, as_json):
        return
    how = "every run (full)" if result["full"] else "the runs that changed"
    written = ", ".join(f"{rows} {table}" for table, rows in result["rows"].items())
    cli._console().print(f"projected {how}: {result['runs']} run(s) of {result['suites']} suite(s); rows: {written}")
