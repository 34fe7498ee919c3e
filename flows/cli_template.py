"""``assay template``: starter packs. ``apply`` makes a team's cases from a template group and the team's
facts; ``ls`` lists the templates, the groups, and the cases each template made."""

from __future__ import annotations

from typing import Annotated, Any

import typer

template_app = typer.Typer(help="Templates and starter packs: make a team's cases from shared recipes.",
                           no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(template_app, name="template")


@template_app.command("apply")
def apply(
    group: Annotated[str, typer.Argument(metavar="GROUP", help="The template group (starter pack) to apply.")],
    team: Annotated[str, typer.Option(metavar="TEAM", help="The team whose cases these become (loaded already).")],
    facts: Annotated[str, typer.Option(metavar="FILE", help="The team's facts: a YAML or JSON mapping of "
                                       "placeholder name to value.")],
    suite: Annotated[str | None, typer.Option(metavar="SUITE", help="Also add the cases to this suite of the "
                                              "team (SUITE or TEAM/SUITE).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Make one case per template of GROUP for TEAM, filled with the team's facts.

    Applied again after a template changed, it brings those cases up to date; with the same templates
    and facts it changes nothing. Nothing is written unless every fact is there and of its type."""
    from assay.core.errors import NotFoundError
    from assay.core.template_facts import read_facts
    from assay.storage.catalog.templates import apply_group

    from . import cli

    if suite and "/" in suite and suite.split("/", 1)[0] != team:
        raise NotFoundError("suite", suite, f"--suite names a suite of --team {team}: give SUITE or {team}/SUITE")
    body = apply_group(cli._workspace().engine, group, team, read_facts(facts), facts, suite)
    if cli._emit("assay.template", body, as_json):
        return
    console = cli._console()
    where = f" (suite {body['suite']})" if body["suite"] else ""
    done = {a: sum(c["action"] == a for c in body["cases"]) for a in ("created", "updated", "unchanged")}
    console.print(f"applied {group} to {team}{where}: " + ", ".join(f"{n} {a}" for a, n in done.items()))
    for case in body["cases"]:
        console.print(f"  {case['case']}: {case['action']} (template v{case['version']})")
        for line in case["changes"]:
            console.print(f"    {line}", soft_wrap=False)


@template_app.command("ls")
def ls(
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """List the templates (latest version, placeholders, the cases each made) and the template groups."""
    from assay.storage.catalog.templates import list_templates

    from . import cli

    body = list_templates(cli._workspace().engine)
    if cli._emit("assay.template.ls", body, as_json):
        return
    _print(cli._console(), body)


def _print(console: Any, body: dict[str, Any]) -> None:
    from .render import _table

    if not body["templates"]:
        console.print("no templates: load a bundle with `templates:` and `template_groups:` (`assay load BUNDLE`)")
        return
    table = _table("templates", ("template", "v", "placeholders", "cases", "behind"))
    for tpl in body["templates"]:
        made = f"{tpl['cases']} in {tpl['teams']} team(s)"
        table.add_row(tpl["template"], str(tpl["version"]), ", ".join(tpl["placeholders"]) or "-", made,
                      ", ".join(tpl["behind"]) or "-")
    console.print(table)
    groups = _table("template groups", ("group", "title", "templates"))
    for g in body["groups"]:
        groups.add_row(g["group"], g["title"], ", ".join(g["templates"]))
    console.print(groups)
