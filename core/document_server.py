"""The bodies of ``assay server start``, ``assay server stop`` and ``assay server status``: the
workspace's own Prefect server."""

from __future__ import annotations

from .document_runs import Body


class ServerInfo(Body):
    """The workspace's Prefect server, when one runs."""

    pid: int
    """Its process id."""
    port: int
    """The loopback port it listens on."""
    url: str
    """Where it is served (the UI); ``http://127.0.0.1:PORT``."""
    api_url: str
    """Its API (``url`` + ``/api``): what commands set ``PREFECT_API_URL`` to while it is up."""
    started_at: str
    """When it was started (ISO 8601, UTC)."""
    uptime_seconds: float
    """Seconds since then."""


class ServerBody(Body):
    """What every ``assay server`` document says."""

    running: bool
    """Whether the server runs now (after the command)."""
    server: ServerInfo | None
    """The running server; ``None`` when none runs."""
    state_file: str
    """The file that records the running server (pid, port, URL, start time)."""
    log: str
    """The server's own log."""


class ServerStartDoc(ServerBody):
    """``assay server start``: the server, started or found running."""

    already_running: bool
    """True when it was up before this command: nothing was started."""


class ServerStopDoc(ServerBody):
    """``assay server stop``: the server stopped, if one ran."""

    stopped: ServerInfo | None
    """The server this command stopped; ``None`` when none ran."""


class ServerStatusDoc(ServerBody):
    """``assay server status``: whether the server runs."""

    healthy: bool
    """Whether it answered ``/api/health`` just now (always false when it does not run)."""


class DeployedDoc(Body):
    """One deployment ``assay deploy`` registered."""

    deployment: str
    """``FLOW/assay``: what a flow run is asked for by (``prefect deployment run run-suite/assay``)."""
    id: str
    """Its id on the Prefect server."""
    schedule: str
    """``every N s``, ``cron EXPR (UTC)``, or ``on demand``."""
    what: str
    """What its flow does."""


class DeployDoc(Body):
    """``assay deploy``: every Assay deployment, registered on a process work pool."""

    api_url: str
    """The Prefect server's API they were registered with."""
    pool: str
    """The process work pool their flow runs go to."""
    pool_created: bool
    """True when this command created the pool."""
    paused: bool
    """True when the schedules were registered paused."""
    deployments: list[DeployedDoc]
    """The deployments, scheduled ones first."""
