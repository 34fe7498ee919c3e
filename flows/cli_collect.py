"""``assay collect``: one pass over the outstanding asynchronous runs (Hamming's voice tests).

Polls each, stores and judges what finished, finalises it with its verdicts, and times out what is past
its deadline (results that arrive after that are dropped loudly and counted). Schedule it (the
``collect`` Prefect flow) or run it by hand; running it again is always safe.
"""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("collect")(collect)


def collect(
    concurrency: Annotated[int | None, typer.Option(
        min=1, max=256, help="At most this many vendor polls in flight (default: ASSAY_COLLECT_CONCURRENCY).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Poll outstanding asynchronous runs: store, judge and finalise what finished; time out what is past its deadline."""
    from . import cli, orchestration

    result = orchestration.attend(orchestration.collect, concurrency)
    if cli._emit("assay.collect", result, as_json):
        return
    console = cli._console()
    console.print(
        f"{result['outstanding']} outstanding: {len(result['waiting'])} still working, "
        f"{len(result['collected'])} collected, {len(result['finalised'])} judged and finalised, "
        f"{len(result['timed_out'])} timed out, {len(result['failed'])} failed, {len(result['retry'])} to retry"
    )
    if result["late_reports"]:
        console.print(f"[yellow]dropped {result['late_reports']} late report(s)[/] (the run was already final; "
                      f"kept in rejected reports): {', '.join(r[:12] for r in result['late_runs'])}")
    for run_id, error in {**result["failed"], **result["retry"]}.items():
        console.print(f"  {run_id[:12]}: {error}")
    for warning in result["warnings"]:
        console.print(f"[yellow]warning[/]: {warning}")
