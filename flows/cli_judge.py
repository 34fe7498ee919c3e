"""``assay judge-agreement LABELS``: how well our judge agrees with a labelled set, measured and kept.

The file format and the figures are described in :mod:`assay.flows.agreement`; this module only wires
the command (kept light: the work is imported when the command runs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

LABELS_HELP = (
    "A JSON Lines file, one labelled item per line: "
    '{"id": "...", "rubric": "...", "transcript": [{"role": "caller|agent|system", "text": "..."}], '
    '"tool_calls": [{"name": "...", "arguments": {}, "result": ...}], "expected": "pass|fail"} '
    "(id and tool_calls optional)."
)


def register(app: typer.Typer) -> None:
    app.command("judge-agreement")(judge_agreement)
    app.command("judge-noise")(judge_noise)


def judge_noise(
    run_id: Annotated[str, typer.Argument(help="The run whose stored calls our judge answers again.")],
    times: Annotated[int, typer.Option(help="Answers asked per (call, rubric) question, 2..50.")] = 5,
    key: Annotated[list[str] | None, typer.Option(metavar="KEY", help="Only this rubric key (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Measure our judge's own noise: ask each rubric of a run's stored calls again, TIMES times, fresh.

    Per key: how often the judge's answers on the same call differ, next to how often the run's replays of a
    case differ. Nothing is stored or cached: the run's results and verdicts stay as they were.
    """
    from . import cli
    from .judge_noise import describe, measure

    ws = cli._workspace()
    result = measure(ws, run_id, times=times, keys=key)
    if not cli._emit("assay.judge-noise", result, as_json):
        for line in describe(result):
            typer.echo(line)


def judge_agreement(
    labels: Annotated[Path, typer.Argument(help=LABELS_HELP, exists=True, dir_okay=False, readable=True)],
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Judge a labelled set with the configured judge (through its cache); print and keep agreement and Cohen's kappa.

    Undetermined items (no verdict from the judge) count in neither figure and are reported next to them,
    with how many of them were answers that could not be read as a verdict (rather than the endpoint failing).
    """
    from assay.core.documents import document

    from .agreement import describe, measure
    from .workspace import open_workspace

    ws = open_workspace()
    try:
        result = measure(ws, labels)
    finally:
        ws.close()
    if as_json:
        typer.echo(json.dumps(document("assay.judge-agreement", result), indent=2, default=str))
        return
    for line in describe(result):
        typer.echo(line)
