"""``assay lake migrate|compact|vacuum``: keeping the evidence lake tidy (see the README's lake section);
each calls its flow (:mod:`.upkeep_flows`)."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]

lake_app = typer.Typer(help="The evidence lake: its files, as the catalog's manifest lists them.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(lake_app, name="lake")


@lake_app.command("migrate")
def lake_migrate(as_json: JsonOpt = False) -> None:
    """List a lake written by an earlier Assay in the catalog's manifest, de-duplicating once."""
    from . import cli
    from .orchestration import attend, migrate_lake

    result = attend(migrate_lake)
    if not cli._emit("assay.lake.migrate", {"tables": result}, as_json):
        if not result:
            cli._console().print("the lake is listed by the manifest already: nothing to do")
        for table, counts in sorted(result.items()):
            cli._console().print(f"{table}: {counts['files']} file(s) listed, {counts['rewritten']} rewritten, "
                             f"{counts['duplicates_dropped']} duplicate row(s) dropped")


@lake_app.command("compact")
def lake_compact(
    table: Annotated[str | None, typer.Option(help="Only this lake table (e.g. assertion_results).")] = None,
    team: Annotated[str | None, typer.Option(help="Only this team's partitions.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rewrite each partition's small files into larger ones, sorted for re-scoring (old files go at vacuum)."""
    from . import cli
    from .orchestration import attend, compact
    from .task_runners import wide

    result = attend(wide(compact), table, team)
    if not cli._emit("assay.lake.compact", result, as_json):
        cli._console().print(f"compacted {result['partitions']} partition(s): {result['files_in']} file(s) -> "
                         f"{result['files_out']}, {result['rows']} row(s)"
                         + (f"; {result['refused']} refused (compacted concurrently)" if result["refused"] else ""))


@lake_app.command("vacuum")
def lake_vacuum(as_json: JsonOpt = False) -> None:
    """Delete lake files nobody reads (unlisted, or superseded) once past the grace period."""
    from . import cli
    from .orchestration import attend, vacuum

    result = attend(vacuum)
    if not cli._emit("assay.lake.vacuum", result, as_json):
        cli._console().print(f"deleted {result['unnamed']} unlisted and {result['retired']} retired file(s)")
