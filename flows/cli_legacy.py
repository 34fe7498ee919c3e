"""``assay legacy import LINEAGE PATH``: a legacy lineage's export brought in once, one-way, as history.

The lineages, their export files and columns are described in ``docs/legacy.md``; the work is the
``legacy-import`` flow (:mod:`.legacy_flows`).
"""

from __future__ import annotations

from typing import Annotated

import typer

legacy_app = typer.Typer(help="Legacy history: the four legacy lineages, imported once.", no_args_is_help=True)

LINEAGE_HELP = "prompt_test, simulation_v2, hamming_voice or chat_lane."
PATH_HELP = "The export: a directory with one file per legacy table (.csv or .parquet; see docs/legacy.md)."


def register(app: typer.Typer) -> None:
    app.add_typer(legacy_app, name="legacy")


@legacy_app.command("import")
def legacy_import(
    lineage: Annotated[str, typer.Argument(metavar="LINEAGE", help=LINEAGE_HELP)],
    path: Annotated[str, typer.Argument(metavar="PATH", help=PATH_HELP)],
    team: Annotated[str | None, typer.Option(
        help="The team that owns the history (default: each row's team_id).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Import a legacy export as history: its cases, its runs (already final) and one opaque result per
    legacy verdict. All or nothing; importing it again imports only what is new."""
    from . import cli
    from .orchestration import attend
    from .orchestration import legacy_import as flow

    result = attend(flow, lineage, path, team)
    if cli._emit("assay.legacy", result, as_json):
        return
    console = cli._console()
    got, had = result["imported"], result["already_imported"]
    console.print(f"imported {result['lineage']}: {got['cases']} cases, {got['suites']} suites, {got['runs']} runs")
    console.print(f"  {got['case_runs']} case runs, {got['results']} opaque legacy results (one per case run)")
    if had["cases"] or had["runs"]:
        console.print(f"already imported: {had['cases']} cases, {had['runs']} runs (left as they are)")
    if result["skipped_rows"]:
        other = "chat-lane" if result["lineage"] == "hamming_voice" else "voice"
        console.print(f"left out {result['skipped_rows']} {other} row(s) of the shared Hamming tables")
    for run_id in result["runs"]:
        console.print(f"  run {run_id}", overflow="fold")
