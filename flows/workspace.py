"""A workspace: the settings, the catalog engine, the lake and the ledger, opened together.

It also owns the Prefect environment a workspace runs flows in (its own Prefect home, telemetry off,
the workspace's server when it is up, else a temporary server that dies with the command): see
:func:`use_prefect_home` and :func:`bind_temporary_server`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import ValidationError

from assay.core.errors import ConfigError
from assay.core.settings import Settings

if TYPE_CHECKING:  # the command line imports this module before every command: keep it light
    import sqlalchemy as sa

    from assay.storage.catalog.ledger import CatalogLedger
    from assay.storage.lake import Lake

PREFECT_DEFAULTS = {
    # The temporary server's start-up ping and the SDK's usage events cannot leave an air-gapped machine.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    # Prefect waits 20 s for its temporary server; a busy CI machine or laptop needs longer.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}


@dataclass
class Workspace:
    settings: Settings
    upgrade: bool = False
    """Migrate the catalog to the newest schema when the engine opens: only `assay init` (and the demo)."""

    @cached_property
    def engine(self) -> sa.Engine:
        from assay.storage.catalog.engine import create_catalog_engine, migrate
        from assay.storage.catalog.workspace_identity import check_identity, record_identity

        engine = create_catalog_engine(self.settings.resolved_catalog_url)
        try:
            if self.upgrade:
                migrate(engine)
                record_identity(engine, self.settings.resolved_lake_url)
            else:
                require_current(engine, self.settings)
                check_identity(engine, self.settings.resolved_lake_url)  # the lake given is the catalog's own
        except BaseException:
            engine.dispose()
            raise
        return engine

    @cached_property
    def lake(self) -> Lake:
        from assay.storage.lake import Lake

        return Lake.from_settings(self.settings, self.engine)

    @cached_property
    def ledger(self) -> CatalogLedger:
        from assay.storage.catalog.ledger import CatalogLedger

        return CatalogLedger(self.engine, self.lake)

    def close(self) -> None:
        if "engine" in self.__dict__:
            self.engine.dispose()


def require_current(engine: sa.Engine, settings: Settings) -> None:
    """Refuse a catalog behind this Assay's schema: migrations run at `assay init`, never on open."""
    from assay.core.redact import mask_url
    from assay.storage.catalog.engine import HEAD, current_revision

    found = current_revision(engine)
    if found is not None and found > HEAD:  # revisions are numbered 0001, 0002, ...
        raise ConfigError(
            f"the catalog {mask_url(settings.resolved_catalog_url)} is at schema revision {found}, newer than this "
            f"Assay knows (revision {HEAD}): a newer Assay ran `assay init` on it; install that version here "
            "(workers and commands must run the version that migrated the catalog)"
        )
    if found != HEAD:
        state = "has no schema yet" if found is None else f"is at schema revision {found}"
        raise ConfigError(
            f"the catalog {mask_url(settings.resolved_catalog_url)} {state}; this Assay needs revision {HEAD}: "
            "run `assay init` to create or upgrade it (safe to repeat: it keeps every run)"
        )


def load_settings() -> Settings:
    """``Settings()`` from the environment, a malformed variable a :class:`ConfigError` naming it."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(f"ASSAY_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"malformed setting: {problems}") from None


def open_workspace(settings: Settings | None = None, *, create: bool = False) -> Workspace:
    """Open the workspace the settings describe; only ``assay init`` and the demo create one (``create``),
    and only they migrate its catalog: otherwise a catalog behind the code's schema is refused.

    A mistyped ``ASSAY_HOME`` must be an error, not a new empty workspace that answers "no runs yet"
    while the team's evidence sits elsewhere.
    """
    from assay.core.redact import install_log_redaction

    install_log_redaction()  # nothing this workspace logs keeps a secret
    settings = settings or load_settings()
    if create:
        settings.home.mkdir(parents=True, exist_ok=True)
    else:
        require_home(settings)
    # Prefect keeps its own database; inside ASSAY_HOME, parallel workspaces never share one. (The CLI
    # sets it earlier, and for certain, in use_prefect_home; a library caller's own setting wins.)
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    return Workspace(settings, upgrade=create)


def require_home(settings: Settings) -> None:
    """Refuse an ``ASSAY_HOME`` that does not exist: only `assay init` (and the demo) create one."""
    if not settings.home.is_dir():
        raise ConfigError(
            f"ASSAY_HOME {settings.home.resolve()} does not exist (or is not a folder): run `assay init` to create a "
            "workspace there, or point ASSAY_HOME at an existing workspace folder"
        )


def use_prefect_home(settings: Settings, debug: bool = False, *, inside_home: bool = True) -> None:
    """Point Prefect at this workspace's home, with telemetry off, before Prefect is imported.

    Prefect reads its settings once, when it is first imported: set later, ``PREFECT_HOME`` is ignored
    and every workspace shares ``~/.prefect/prefect.db`` (and its "database is locked" errors). The
    command line calls this before any command runs. Unless ``debug``, Prefect's own log lines (its
    temporary server starting, a failed task's traceback) stay off the terminal: the command line
    reports an error once, itself. ``--debug`` shows them.

    When the workspace's own server (``assay server start``, :mod:`.server`) is up and answering,
    ``PREFECT_API_URL`` points at it: flows run there, with no temporary server, and stay visible in its
    UI. A ``PREFECT_API_URL`` already in the environment is left as it is.

    Not ``inside_home``: a command that needs no workspace, with ``ASSAY_HOME`` missing; Prefect, if it
    runs at all, must not create the folder (a mistyped home that the next command would take for a workspace).
    """
    if inside_home:
        os.environ["PREFECT_HOME"] = str(settings.prefect_home)
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not os.environ.get("PREFECT_API_URL"):  # a server of the user's own wins
        from .server import api_url_if_up

        if url := api_url_if_up(settings):
            os.environ["PREFECT_API_URL"] = url
            # it runs without CSRF protection (loopback only, .server): no token to fetch per flow run
            os.environ.setdefault("PREFECT_CLIENT_CSRF_SUPPORT_ENABLED", "false")
    if not debug:
        os.environ["PREFECT_LOGGING_LEVEL"] = "CRITICAL"
        # its background services' own failures too: a server gone mid-command fails every event sent to it
        os.environ["PREFECT_INTERNAL_LOGGING_LEVEL"] = "CRITICAL"
        # A temporary Dask cluster's chatter (.task_runners), errors included: a worker whose heartbeat meets
        # the scheduler already closing logs an ERROR as the cluster stops, on a loaded machine; a task's
        # own failure reaches the command through the flow, and --debug shows everything.
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
        import logging

        # Prefect's background senders log under top-level names, outside the `prefect` logger the level
        # above governs: "Still processing items" when a command ends before its events are all sent
        # (they are sent before the process exits).
        for sender in ("EventsWorker", "APILogWorker"):
            logging.getLogger(sender).setLevel(logging.CRITICAL)


_WATCHDOG = """\
import os, signal, sys, time
if sys.stdin.buffer.read():
    sys.exit(0)
pid = int(sys.argv[1])
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except OSError:
        sys.exit(0)
    for _ in range(50):
        time.sleep(0.1)
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit(0)
"""
_watchdogs: dict[int, subprocess.Popen] = {}


def bind_temporary_server() -> None:
    """Make Prefect's temporary server die with this process, however the process ends.

    Prefect starts the server as a child and stops it at exit, but SIGKILL skips exit handlers, and the
    orphan lives on, holding the workspace's Prefect database. ``PR_SET_PDEATHSIG`` is Linux-only and
    fires when the *thread* that started the child ends (Prefect may start it from a worker thread); a
    process group would take the user's terminal job control with it. So a tiny watchdog process (no
    imports beyond the standard library) waits on a pipe whose write end only this process holds: the
    kernel closes it when this process ends, by any means; on end-of-file with no "stopped" word the
    watchdog stops the server (SIGTERM, then SIGKILL). Only the temporary server is bound: with
    ``PREFECT_API_URL`` set there is none (and its heavy module is not imported).
    """
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api.server import SubprocessASGIServer as Server

    if getattr(Server, "_assay_bound", False):
        return
    start, stop = Server._run_uvicorn_command, Server.stop

    def run_bound(self):
        if self.server_process is not None and self.server_process.poll() is not None:
            _release(self.server_process.pid)  # Prefect retries on another port; the first one is gone
        process = start(self)
        _watchdogs[process.pid] = guard(process.pid)
        return process

    def stop_bound(self):
        pid = self.server_process.pid if self.server_process else None
        try:
            stop(self)
        finally:
            _release(pid)

    Server._run_uvicorn_command, Server.stop, Server._assay_bound = run_bound, stop_bound, True


def guard(pid: int) -> subprocess.Popen:
    """A watchdog that stops ``pid`` (SIGTERM, then SIGKILL) when this process ends, by any means,
    before :func:`release` is called: see :func:`bind_temporary_server`."""
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(pid)],
        stdin=subprocess.PIPE, start_new_session=True,  # a Ctrl-C to the command's group spares it
    )


def release(watchdog: subprocess.Popen) -> None:
    """Tell a :func:`guard` watchdog its process is taken care of: it leaves it alone and exits."""
    watchdog.stdin.write(b"released")  # type: ignore[union-attr]
    watchdog.stdin.close()  # type: ignore[union-attr]
    watchdog.wait()


def _release(pid: int | None) -> None:
    """Tell the server's watchdog it was stopped in order: its pid may be reused, so leave it alone."""
    if (watchdog := _watchdogs.pop(pid, None)) is not None:  # type: ignore[arg-type]
        release(watchdog)
