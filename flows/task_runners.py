"""Where a wide flow's mapped tasks run, chosen by configuration: the same flow, another task runner.

Wide work (re-judging many runs, compacting the lake's tables) maps one task per part. By default the
parts run on Prefect's thread pool in the flow's own process (a re-judge's one run at a time: each holds
a run's atoms, so the runs in flight bound its memory). With ``ASSAY_DASK_ADDRESS`` they run on
the workers of a running Dask scheduler, possibly on other machines; with ``ASSAY_DASK_WORKERS`` on a
temporary Dask cluster of that many worker processes on this machine, started for the flow run and
stopped with it; each runs one task at a time and its engines (Polars, DuckDB) one thread each, so
``ASSAY_DASK_WORKERS`` processes share the cores without oversubscribing them. A task on a Dask worker opens the workspace from its worker's own environment
(:func:`.flow_context.workspace`), so the workers need the same ``ASSAY_*`` settings as the flow.

:func:`wide` reads the settings when it is called, so a module that does ``rejudge = wide(rejudge)``
at import picks the runner from the environment of the process that imports it (a deployment's worker).
``prefect_dask`` (and Dask) are imported only when Dask is chosen (:mod:`.dask_runner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from assay.core.errors import ConfigError

if TYPE_CHECKING:
    from assay.core.settings import Settings

F = TypeVar("F")

WORKER_ENV = {"POLARS_MAX_THREADS": "1"}
"""The environment of a temporary cluster's worker processes, of one thread each: Polars' pool of one
thread, and so Assay's DuckDB connections too (:mod:`assay.core.engines`)."""


def task_runner(settings: Settings) -> Any | None:
    """The Dask task runner the settings ask for, or ``None`` for Prefect's default (the thread pool)."""
    if settings.dask_address and settings.dask_workers:
        raise ConfigError(
            f"both ASSAY_DASK_ADDRESS ({settings.dask_address}) and ASSAY_DASK_WORKERS ({settings.dask_workers}) "
            "are set: unset ASSAY_DASK_WORKERS to use the running scheduler, or ASSAY_DASK_ADDRESS to start a "
            "temporary cluster on this machine"
        )
    if not settings.dask_address and not settings.dask_workers:
        return None
    from .dask_runner import AssayDaskTaskRunner

    if settings.dask_address:
        return AssayDaskTaskRunner(address=settings.dask_address)
    return AssayDaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={"n_workers": settings.dask_workers, "processes": True, "threads_per_worker": 1,
                        "dashboard_address": ":0",  # any free port: two flows at once must not clash
                        "env": WORKER_ENV},
    )


def wide(flow: F, settings: Settings | None = None) -> F:
    """``flow`` with the task runner the settings choose (default: those of the environment now), or
    ``flow`` itself when they choose none."""
    from .workspace import load_settings

    runner = task_runner(settings or load_settings())
    return flow if runner is None else flow.with_options(task_runner=runner)  # type: ignore[attr-defined]
