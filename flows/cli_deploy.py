"""``assay deploy`` and ``assay worker``: Assay's jobs as scheduled Prefect deployments, and the
process that runs them (:mod:`.deployments`; ``docs/operations.md``).

Both need a Prefect server that stays up: the workspace's own (``assay server start``) or the one
``PREFECT_API_URL`` names. A temporary server cannot keep a schedule: it ends with the command.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from assay.core.errors import ConfigError

PoolOpt = Annotated[str, typer.Option("--pool", help="The process work pool (created by `assay deploy` when missing).")]


def register(app: typer.Typer) -> None:
    app.command("deploy")(deploy)
    app.command("worker")(worker)


def _server_url(verb: str) -> str:
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        raise ConfigError(
            f"{verb} needs a Prefect server that stays up, and none is set: run `assay server start` "
            "(the workspace's own), or set PREFECT_API_URL to your Prefect server's API"
        )
    return url


def deploy(
    pool: PoolOpt = "assay",
    paused: Annotated[bool, typer.Option("--paused", help="Register the schedules paused (resume them in the UI).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Register every Assay deployment (scheduled upkeep, the nightly sweep, on-demand jobs) on a process work pool."""
    from . import cli
    from .deployments import deploy as register_all

    url = _server_url("assay deploy")
    cli._workspace().close()  # a workspace that exists and is current: the worker's flows will open it
    result = {"api_url": url, **register_all(pool, paused=paused)}
    if cli._emit("assay.deploy", result, as_json):
        return
    console = cli._console()
    made = " (created)" if result["pool_created"] else ""
    console.print(f"registered {len(result['deployments'])} deployment(s) on work pool {pool!r}{made} at {url}"
                  + (" [yellow]paused[/]" if paused else ""))
    for d in result["deployments"]:
        console.print(f"  {d['deployment']:<32} {d['schedule']:<26} {d['what']}", overflow="fold")
    console.print(f"start a worker to run them: `assay worker --pool {pool}`", style="dim")


def worker(
    pool: PoolOpt = "assay",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most this many flow runs at once.")] = None,
) -> None:
    """Run a Prefect process worker for the pool in the foreground, with this workspace's settings (Ctrl-C stops it)."""
    url = _server_url("assay worker")
    from . import cli

    cli._workspace().close()  # refuse a mistyped ASSAY_HOME or an old catalog before the worker starts
    os.environ["PREFECT_API_URL"] = url
    if not cli._state["debug"]:
        os.environ["PREFECT_LOGGING_LEVEL"] = "INFO"  # the worker's log is what an operator reads
    argv = [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--type", "process"]
    if limit is not None:
        argv += ["--limit", str(limit)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)  # the worker replaces this command: its signals and exit code are the worker's
