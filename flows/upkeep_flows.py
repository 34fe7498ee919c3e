"""The upkeep flows: reaping abandoned runs, collecting asynchronous ones, and keeping the lake tidy.

Thin wiring over :mod:`assay.flows.operations` and :mod:`assay.flows.collect`, one workspace per flow
run (:mod:`.flow_context`); importable from :mod:`assay.flows.orchestration` by these names.
"""

from __future__ import annotations

from typing import Any

from prefect import unmapped

from . import operations as ops
from .flow_context import assay_flow, flow_workspace, io_task, summed, workspace


@io_task
def reap_task() -> dict[str, list[str]]:
    return ops.reap(workspace())


@assay_flow(name="reap")
def reap() -> dict[str, list[str]]:
    """Resolve expired leases, passed deadlines and runs never started to timed_out; finalise runs left
    released; tear down the vendor objects dead runs left behind."""
    with flow_workspace():
        return reap_task()


@io_task
def collect_task(concurrency: int | None) -> dict[str, Any]:
    from .collect import collect_outstanding

    return collect_outstanding(workspace(), concurrency).to_dict()


@assay_flow(name="collect")
def collect(concurrency: int | None = None) -> dict[str, Any]:
    """Poll every outstanding asynchronous run; store, judge and finalise what finished; time out what is past its deadline."""
    with flow_workspace():
        return collect_task(concurrency)


@io_task
def compact_task(table: str, team: str | None) -> dict[str, int]:
    return ops.compact(workspace(), table, team)


@assay_flow(name="compact")
def compact(table: str | None = None, team: str | None = None) -> dict[str, int]:
    """Rewrite the lake's small files into files of about the target size, one task per table (the old
    files go at vacuum)."""
    with flow_workspace() as ws:
        tables = [table] if table is not None else sorted(ws.lake.tables)
        return summed(compact_task.map(tables, unmapped(team)).result())


@io_task
def vacuum_task() -> dict[str, int]:
    return ops.vacuum(workspace())


@assay_flow(name="vacuum")
def vacuum() -> dict[str, int]:
    """Delete lake files nobody will read again (unlisted, or retired), once past the grace period."""
    with flow_workspace():
        return vacuum_task()


@io_task
def migrate_lake_task() -> dict[str, dict[str, int]]:
    return ops.migrate_lake(workspace())


@assay_flow(name="lake-migrate")
def migrate_lake() -> dict[str, dict[str, int]]:
    """List a lake written before the manifest in the catalog (once; de-duplicating) and derive its re-score state."""
    with flow_workspace():
        return migrate_lake_task()
