"""The projections flow: each consumer's verdicts under its latest criteria, kept as a lake table.

A run's stamped verdict is a projection of the stored atoms; so is every later reading of them. This
flow keeps the lake's ``verdicts`` table up to date: for every suite and every consumer with criteria
there, the verdicts of the suite's finalised runs under the consumer's latest criteria version, one
task per (suite, consumer) (wide work maps over the configured task runner, :mod:`.task_runners`).
Writing is idempotent per (run, consumer, criteria spec): a pass over history that is already
projected writes nothing, so the deployment can run it hourly.

A run re-judged after its verdict was projected keeps that projected row under the same spec;
``assay rescore`` (a query) always reads the current atoms.
"""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.artifacts import create_table_artifact

from .flow_context import flow_workspace, io_task, summed, workspace


def projection_pairs(ws: Any, suite: str | None = None) -> list[tuple[str, str]]:
    """Every (``TEAM/SUITE``, consumer) with criteria, sorted; one suite's only when ``suite`` is given."""
    from assay.storage.catalog.listing import Scope, suites

    with ws.engine.connect() as conn:
        scope = Scope.resolve(conn, None, suite)
        return sorted((s["suite"], consumer) for s in suites(conn, scope) for consumer in s["consumers"])


def project(ws: Any, suite: str, consumer: str) -> dict[str, Any]:
    """Project one consumer's verdicts on one suite's finalised runs under its latest criteria."""
    from .rescoring import rescore

    done = rescore(ws, suite, consumer, materialise=True)
    runs = done["runs"]
    return {"pairs": 1, "runs": len(runs), "verdicts": sum(1 for r in runs if r["verdict"] is not None)}


@io_task
def project_task(suite: str, consumer: str) -> dict[str, Any]:
    """Retried like every store writer: a second attempt writes only what the first did not commit."""
    return {"suite": suite, "consumer": consumer, **project(workspace(), suite, consumer)}


@flow(name="projections")
def projections(suite: str | None = None) -> dict[str, Any]:
    """Bring the lake's ``verdicts`` table up to date: every consumer's verdicts on every suite (or one),
    one task per (suite, consumer); publishes what each wrote as the table artifact ``projections``."""
    with flow_workspace() as ws:
        pairs = projection_pairs(ws, suite)
        if not pairs:
            return {"pairs": 0, "runs": 0, "verdicts": 0}
        parts = project_task.map([p[0] for p in pairs], [p[1] for p in pairs]).result()
        create_table_artifact(parts, key="projections", description=f"verdicts projected for {len(parts)} (suite, consumer) pair(s)")
        return summed({k: v for k, v in part.items() if k not in ("suite", "consumer")} for part in parts)
