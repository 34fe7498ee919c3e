"""Deployments: Assay's jobs as Prefect deployments on a process work pool, the scheduled ones with
their schedules. ``assay deploy`` registers them (:func:`deploy`); a worker (``assay worker``, or
``prefect worker start --pool POOL``) runs their flow runs. ``docs/operations.md`` says how to run them.

Each deployment's entry point is a flow of *this* module, imported by the worker's flow-run process:
wide flows (re-judging, compaction, projections) take their task runner from that process's settings
(:func:`.task_runners.wide`: a Dask scheduler, a local Dask cluster, or threads), so the worker's
environment decides where wide work runs, as it decides the catalog and the lake.

Every deployment is named ``assay``: a flow run is asked for as ``FLOW/assay`` (``run-suite/assay``).
Cron schedules are in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import orchestration, projection_flows, sweep_flows, upkeep_flows
from .task_runners import wide

DEPLOYMENT_NAME = "assay"
"""The name every deployment shares: ``FLOW/assay``."""

DEFAULT_POOL = "assay"
"""The process work pool ``assay deploy`` creates when it is missing."""

# The flows a worker runs, by the names the deployments' entry points import.
run_suite = orchestration.run_suite
judge = orchestration.judge
rejudge = wide(orchestration.rejudge)
rescore_materialise = orchestration.rescore_materialise
reap = upkeep_flows.reap
collect = upkeep_flows.collect
compact = wide(upkeep_flows.compact)
vacuum = upkeep_flows.vacuum
projections = wide(projection_flows.projections)
nightly_sweep = sweep_flows.nightly_sweep


@dataclass(frozen=True)
class Deployment:
    """One deployment: the flow (an attribute of this module), and its schedule, if any."""

    flow: str
    every_seconds: int | None = None
    cron: str | None = None
    what: str = ""

    @property
    def schedule(self) -> str:
        if self.every_seconds is not None:
            return f"every {self.every_seconds} s"
        return f"cron {self.cron} (UTC)" if self.cron else "on demand"


DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("reap", every_seconds=60, what="end abandoned runs (expired leases, passed deadlines)"),
    Deployment("collect", every_seconds=30, what="poll asynchronous runs; store, judge, finalise what finished"),
    Deployment("compact", cron="0 2 * * *", what="rewrite the lake's small files, one task per table"),
    Deployment("vacuum", cron="0 4 * * *", what="delete lake files past the grace period"),
    Deployment("projections", cron="15 * * * *", what="the projected tables: verdicts, fleet stats, evaluator pairs, costs"),
    Deployment("nightly_sweep", cron="0 1 * * *",
               what="re-run suites tagged nightly on each runner they declare, then re-judge"),
    Deployment("run_suite", what="run a suite: parameters suite, runner (default: each it declares, a run "
                                 "each), deadline_minutes, gate"),
    Deployment("judge", what="judge one run's stored evidence again: parameter run_id"),
    Deployment("rejudge", what="re-judge runs (mapped per run): parameter run_ids"),
    Deployment("rescore_materialise", what="append a criteria's verdicts on a suite's history to the lake"),
)
"""Every deployment ``assay deploy`` registers."""


def ensure_pool(client: Any, pool: str) -> bool:
    """Create the process work pool ``pool`` unless it exists; True if it was created."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    try:
        found = client.read_work_pool(pool)
    except ObjectNotFound:
        client.create_work_pool(WorkPoolCreate(
            name=pool, type=ProcessWorker.type, base_job_template=ProcessWorker.get_default_base_job_template(),
            description="Assay's jobs, run as processes by `assay worker`",
        ))
        return True
    if found.type != ProcessWorker.type:
        from assay.core.errors import ConfigError

        raise ConfigError(f"work pool {pool!r} is of type {found.type!r}; Assay's deployments run on a "
                          f"{ProcessWorker.type!r} pool: name another with `assay deploy --pool NAME`")
    return False


def deploy(pool: str = DEFAULT_POOL, *, paused: bool = False) -> dict[str, Any]:
    """Register every deployment on the process work pool ``pool`` (created if missing) with the
    Prefect server of ``PREFECT_API_URL``. Registering again updates them in place."""
    from prefect.client.orchestration import get_client
    from prefect.types.entrypoint import EntrypointType

    with get_client(sync_client=True) as client:
        created = ensure_pool(client, pool)
    registered = []
    for d in DEPLOYMENTS:
        flow = globals()[d.flow]
        deployment = flow.to_deployment(
            DEPLOYMENT_NAME, interval=d.every_seconds, cron=d.cron, paused=paused, description=d.what,
            tags=["assay"], entrypoint_type=EntrypointType.MODULE_PATH,
        )
        deployment.entrypoint = f"{__name__}.{d.flow}"  # this module's flow (wide ones choose their runner)
        deployment_id = deployment.apply(work_pool_name=pool)
        registered.append({"deployment": f"{flow.name}/{DEPLOYMENT_NAME}", "id": str(deployment_id),
                           "schedule": d.schedule, "what": d.what})
    return {"pool": pool, "pool_created": created, "paused": paused, "deployments": registered}
