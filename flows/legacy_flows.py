"""The legacy import flow: four legacy lineages brought in once, one-way, as history.

Thin wiring over :func:`assay.flows.legacy_mapping.import_history` (reading and validating is
:mod:`.legacy`, the mapping onto our model :mod:`.legacy_mapping`, the one-transaction write
:mod:`assay.storage.history`); importable from :mod:`assay.flows.orchestration`.
"""

from __future__ import annotations

from typing import Any


from .flow_context import assay_flow, flow_workspace, io_task, workspace


@io_task
def legacy_import_task(lineage: str, path: str, team: str | None) -> dict[str, Any]:
    """Import the export (retried only on a transient store error: a repeat imports nothing twice)."""
    from .legacy_mapping import import_history

    return import_history(workspace(), lineage, path, team)


@assay_flow(name="legacy-import")
def legacy_import(lineage: str, path: str, team: str | None = None) -> dict[str, Any]:
    """Import a legacy lineage's export as history: cases, final runs, and one opaque result per legacy
    result; what an earlier import brought in is left as it is."""
    with flow_workspace():
        return legacy_import_task(lineage, path, team)
