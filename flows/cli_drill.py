"""``assay show`` (one case run in full: why its results came out) and ``assay diff`` (what changed
between two runs of one suite)."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]


def register(app: typer.Typer) -> None:
    app.command("show")(show)
    app.command("diff")(diff)


def show(
    case_run: Annotated[str, typer.Argument(
        metavar="CASE_RUN", help="A case-run id (or a unique prefix of 6+ characters), or a call id.")],
    run: Annotated[str | None, typer.Option(help="Look only in this run (a call id replayed in several runs).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """One case run: its results (who counts each), its verdicts, and its transcript and tool calls, the
    lines that decided a result marked."""
    from . import cli
    from .drill import show as read_show

    body = read_show(cli._workspace(), case_run, run)
    if not cli._emit("assay.show", body, as_json):
        from .render_drill import print_show

        print_show(cli._console(), body)


def diff(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="The earlier run (an id or a unique prefix).")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The later run, of the same suite.")],
    as_json: JsonOpt = False,
) -> None:
    """What changed between two runs of one suite: verdicts by consumer and by case, met rates by assertion key."""
    from . import cli
    from .drill_diff import diff as read_diff

    body = read_diff(cli._workspace(), run_a, run_b)
    if not cli._emit("assay.diff", body, as_json):
        from .render_drill import print_diff

        print_diff(cli._console(), body)
