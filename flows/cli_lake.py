"""``assay lake migrate|compact|vacuum|verify``: keeping the evidence lake tidy (see the README's lake section);
each but ``verify`` (a read, no flow) calls its flow (:mod:`.upkeep_flows`)."""

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


@lake_app.command("verify")
def lake_verify(
    team: Annotated[str | None, typer.Option(help="Only this team's files.")] = None,
    table: Annotated[str | None, typer.Option(help="Only this lake table (e.g. current_results).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check every listed file against the manifest: present, its size, footer, columns and sha256.

    Prints each file that differs, its partition and what differs; exits 1 when any does (readers of
    those partitions are refused until the files are restored from a backup).
    """
    from assay.storage.catalog.names import check_team
    from assay.storage.lake import manifest

    from . import cli

    ws = cli._workspace()
    if team:
        with ws.engine.connect() as conn:
            team = check_team(conn, team)
    bad = ws.lake.verify(team=team, table=table)
    with ws.engine.connect() as conn:
        names = [ws.lake.table(table).name] if table else list(ws.lake.tables)
        checked = sum(map(len, manifest.live_tables(conn, names, None if team is None else [team]).values()))
    body = {"checked": checked, "bad": [{"table": p.table, "team_id": p.team_id, "date": p.date,
                                         "address": p.address, "what": p.what} for p in bad]}
    if not cli._emit("assay.lake.verify", body, as_json):
        console = cli._console()
        for p in bad:
            console.print(f"bad: {p.table} team_id={p.team_id} date={p.date}: {p.address} {p.what}", highlight=False,
                          soft_wrap=True, markup=False)
        console.print(f"{len(bad)} of {checked} file(s) bad: restore them from a backup; readers of their partitions "
                      "are refused until then" if bad else f"all {checked} listed file(s) match the manifest")
    if bad:
        raise typer.Exit(1)
