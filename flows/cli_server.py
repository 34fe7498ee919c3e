"""``assay server start|stop|status``: the workspace's own Prefect server (:mod:`.server`).

While it is up every command runs its flows against it (no temporary server per command) and their
runs stay visible in its UI.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from .durations import human_duration

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]

server_app = typer.Typer(
    help="The workspace's own Prefect server: started once, used by every command while it is up.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start(
    timeout: Annotated[float | None, typer.Option(
        min=1, help="Seconds to wait for it to answer (default: ASSAY_SERVER_START_TIMEOUT_SECONDS).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the workspace's Prefect server in the background and wait until it answers."""
    from . import cli, server

    settings = cli._workspace().settings  # a workspace that exists: a mistyped ASSAY_HOME is an error
    state, already = server.start(settings, timeout)
    body = {**_body(settings, state), "already_running": already}
    if cli._emit("assay.server.start", body, as_json):
        return
    console = cli._console()
    verb = "already running" if already else "started"
    console.print(f"[green]{verb}[/]: Prefect server {state.url} (pid {state.pid}); the UI is served there")
    console.print(f"commands in this workspace use it while it is up; its log: {body['log']}", style="dim")
    _note_precedence(console, state)


@server_app.command("stop")
def server_stop(as_json: JsonOpt = False) -> None:
    """Stop the workspace's Prefect server (SIGTERM, then SIGKILL after a grace)."""
    from . import cli, server
    from .workspace import load_settings

    settings = load_settings()
    stopped = server.stop(settings)
    body = {**_body(settings, None), "stopped": stopped.describe() if stopped else None}
    if cli._emit("assay.server.stop", body, as_json):
        return
    if stopped is None:
        cli._console().print("no Prefect server runs for this workspace: nothing to stop")
    else:
        cli._console().print(f"stopped the Prefect server {stopped.url} (pid {stopped.pid})")


@server_app.command("status")
def server_status(as_json: JsonOpt = False) -> None:
    """Say whether the workspace's Prefect server runs: its pid, URL and uptime."""
    from . import cli, server
    from .workspace import load_settings

    settings = load_settings()
    state = server.current(settings)
    healthy = state is not None and server.healthy(state)
    body = {**_body(settings, state), "healthy": healthy}
    if cli._emit("assay.server.status", body, as_json):
        return
    console = cli._console()
    if state is None:
        console.print("not running: commands start a temporary Prefect server each; `assay server start` starts one")
        return
    info = body["server"]
    health = "answering" if healthy else "[yellow]not answering[/] (stop it with `assay server stop`)"
    console.print(f"[green]running[/]: {info['url']} (pid {info['pid']}, up {human_duration(info['uptime_seconds'])}), "
                  f"{health}")
    _note_precedence(console, state)


def _body(settings: Any, state: Any) -> dict[str, Any]:
    from .server import log_path, state_path

    return {"running": state is not None, "server": state.describe() if state else None,
            "state_file": str(state_path(settings)), "log": str(log_path(settings))}


def _note_precedence(console: Any, state: Any) -> None:
    """A ``PREFECT_API_URL`` of the user's own wins over the workspace's server: say so."""
    theirs = os.environ.get("PREFECT_API_URL")
    if theirs and theirs.rstrip("/") != state.api_url:
        console.print(f"[yellow]note[/]: PREFECT_API_URL is set ({theirs}): commands use that server, not this one")
