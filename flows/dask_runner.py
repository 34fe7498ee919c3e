"""Prefect's Dask task runner, made to report to the flow's own Prefect server (imported only when Dask is
chosen: see :mod:`.task_runners`).

A task on a Dask worker reports its state to the Prefect API its serialised settings name. A flow run on
a temporary server (no ``PREFECT_API_URL``: the command line without ``assay server start``) names none,
so each worker would start a temporary server of its own, on the workspace's Prefect database, and its
task runs would be recorded there. :class:`AssayDaskTaskRunner` names the flow's temporary server in the
settings it sends. That server listens on loopback, so only workers on the flow's machine reach it: for
a scheduler elsewhere, run ``assay server start`` (or set ``PREFECT_API_URL``) where the workers can reach it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from prefect_dask import DaskTaskRunner


@contextmanager
def _flow_server_named() -> Iterator[None]:
    """While inside, the settings name the API this process reaches (its temporary server's, if any)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one Prefect's client started for this process (one per port)
    if not server.running:
        yield
        return
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


class AssayDaskTaskRunner(DaskTaskRunner):
    """A :class:`prefect_dask.DaskTaskRunner` whose tasks report to the flow's Prefect server, a temporary one too."""

    def submit(self, task: Any, parameters: dict[str, Any], wait_for: Any = None, dependencies: Any = None) -> Any:
        with _flow_server_named():
            return super().submit(task, parameters, wait_for=wait_for, dependencies=dependencies)
