"""``assay ls [KIND]``: what the catalog holds — teams, suites, cases, assertions, criteria, consumers.

Without a kind: counts per kind and the team/suite tree. ``--team`` and ``--suite`` narrow any listing.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from assay.core.errors import UnknownChoiceError

KINDS = ("teams", "suites", "cases", "assertions", "criteria", "consumers")
"""What ``assay ls KIND`` lists: a reader each in :data:`assay.storage.catalog.listing.READERS`."""


def kind_named(name: str) -> str:
    """The kind ``name`` means (``suite`` is ``suites``); else an error naming the nearest and the known kinds."""
    kind = name if name in KINDS else f"{name}s" if f"{name}s" in KINDS else None
    if kind is None:
        raise UnknownChoiceError("kind", name, "`assay ls` alone shows an overview of them all", known=KINDS)
    return kind


def register(app: typer.Typer) -> None:
    app.command("ls")(ls)


def ls(
    kind: Annotated[str | None, typer.Argument(
        metavar="KIND", help=f"{', '.join(KINDS)}; none: an overview.", show_default=False)] = None,
    team: Annotated[str | None, typer.Option(metavar="TEAM", help="Only this team's.")] = None,
    suite: Annotated[str | None, typer.Option(metavar="TEAM/SUITE", help="Only what belongs to this suite.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """List what is loaded: teams, suites, cases, assertions (with versions), criteria, consumers."""
    from assay.storage.catalog import listing

    from . import cli

    chosen = kind_named(kind) if kind else None
    with cli._workspace().engine.connect() as conn:
        scope = listing.Scope.resolve(conn, team, suite)
        rows = listing.READERS[chosen](conn, scope) if chosen else None
        body = {"kind": chosen or "overview", **scope.to_dict(),
                **({chosen: rows} if chosen else listing.overview(conn, scope))}
    if cli._emit("assay.ls", body, as_json):
        return
    console = cli._console()
    if chosen is None:
        _print_overview(console, body)
    elif not rows:
        console.print(f"no {chosen}" + _where(scope.to_dict()) + ": load a bundle with `assay load BUNDLE`")
    else:
        _print_table(console, chosen, rows)


def _where(scope: dict[str, str | None]) -> str:
    return f" in {scope['suite']}" if scope["suite"] else f" in team {scope['team']}" if scope["team"] else ""


def _print_overview(console, body: dict[str, Any]) -> None:
    from rich.tree import Tree

    n = body["counts"]
    console.print(f"{n['teams']} team(s), {n['suites']} suite(s), {n['cases']} case(s), {n['assertions']} "
                  f"assertion(s) ({n['assertion_versions']} version(s)), {n['criteria']} criteria, "
                  f"{n['consumers']} consumer(s){_where(body)}")
    if not n["teams"]:
        console.print("nothing loaded yet: `assay load BUNDLE`")
        return
    tree = Tree("teams", guide_style="dim")
    for team in body["teams"]:
        branch = tree.add(f"[bold]{team['team']}[/]  {team['name']} ({team['cases']} case(s))")
        for s in team["suites"]:
            consumers = ", ".join(s["consumers"]) or "no criteria"
            tags = f"; tags: {', '.join(s['tags'])}" if s["tags"] else ""
            branch.add(f"{s['key']}  {s['target_kind']}, {s['cases']} case(s); criteria for: {consumers}{tags}")
    console.print(tree)
    console.print("consumers: " + (", ".join(c["consumer"] for c in body["consumers"]) or "none"))
    console.print("[dim]more: `assay ls suites|cases|assertions|criteria|consumers|teams`, "
                  "narrowed with --team TEAM or --suite TEAM/SUITE[/]")


_Col = tuple[str, str, bool]  # header, field, never wrapped (an identifier)
_LAYOUT: dict[str, tuple[str | None, tuple[_Col, ...]]] = {
    "teams": (None, (("team", "team", True), ("name", "name", False), ("suites", "suites", True),
                     ("cases", "cases", True))),
    "suites": ("team", (("suite", "key", True), ("target", "target", False), ("cases", "cases", True),
                        ("criteria for", "consumers", False), ("tags", "tags", False),
                        ("runners", "runners", False))),
    "cases": ("team", (("case", "key", True), ("title", "title", False), ("in suites", "suites", False))),
    "assertions": ("owner", (("key", "key", True), ("mechanism", "mechanism", True), ("version", "version", True))),
    "criteria": ("suite", (("consumer", "consumer", True), ("version", "version", True), ("spec", "summary", False))),
    "consumers": (None, (("consumer", "consumer", True), ("description", "description", False),
                         ("criteria on", "suites", False))),
}
"""Per kind: the field its rows are grouped under (a heading each), and its columns."""


def _cell(field: str, row: dict[str, Any]) -> str:
    value = row[field]
    if field == "version":
        return f"v{value} of {row['versions']}"
    if field == "target":
        return f"{row['target_kind']}: {value}"
    if isinstance(value, list):
        return ", ".join(value) or "-"
    return str(value)


def _group(field: str | None, row: dict[str, Any]) -> str:
    if field == "owner":  # an assertion belongs to a suite or to a case of a team
        return f"{row['scope']} {row['team']}/{row['of']}"
    return row[field] if field else ""


def _print_table(console, kind: str, rows: list[dict[str, Any]]) -> None:
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    by, columns = _LAYOUT[kind]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(_group(by, row), []).append(row)
    console.print(f"[bold]{kind}[/] ({len(rows)})")
    for heading, members in groups.items():
        table = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, header_style="dim")
        for header, _, ident in columns:
            table.add_column(header, no_wrap=ident, overflow="fold")
        for row in members:
            table.add_row(*(Text(_cell(field, row)) for _, field, _ in columns))
        if heading:
            console.print(Text(heading, style="bold"))
        console.print(Padding(table, (0, 0, 0, 2), expand=False) if heading else table)
