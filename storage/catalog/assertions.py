"""Reading assertions and criteria as judging and re-scoring need them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec
from assay.core.errors import NotFoundError
from assay.core.ids import canonical_json

from . import tables as t


def current_assertions(conn: sa.Connection, suite_id: str, case_ids: Iterable[str]) -> list[dict]:
    """The latest version of every assertion of a suite and of the given cases.

    Each row: assertion_id, owner, suite_id, case_id, assertion_key, assertion_version, mechanism,
    params (canonical JSON text).
    """
    a = t.assertions
    owners = [f"suite:{suite_id}", *(f"case:{c}" for c in case_ids)]
    latest = (
        sa.select(a.c.owner, a.c.assertion_key, sa.func.max(a.c.version).label("version"))
        .where(a.c.owner.in_(owners))
        .group_by(a.c.owner, a.c.assertion_key)
        .subquery()
    )
    q = sa.select(a).join(
        latest,
        sa.and_(a.c.owner == latest.c.owner, a.c.assertion_key == latest.c.assertion_key, a.c.version == latest.c.version),
    )
    return [
        {
            "assertion_id": r.assertion_id, "owner": r.owner, "suite_id": r.suite_id, "case_id": r.case_id,
            "assertion_key": r.assertion_key, "assertion_version": r.version, "mechanism": r.mechanism,
            "params": canonical_json(r.params),
        }
        for r in conn.execute(q.order_by(a.c.owner, a.c.assertion_key))
    ]


def criteria_spec(conn: sa.Connection, suite_id: str, consumer: str, version: int | None = None) -> tuple[int, CriteriaSpec]:
    """A consumer's criteria for a suite: the given version, or the latest."""
    c = t.criteria
    q = sa.select(c.c.version, c.c.spec).where(c.c.suite_id == suite_id, c.c.consumer_key == consumer)
    q = q.where(c.c.version == version) if version is not None else q.order_by(c.c.version.desc()).limit(1)
    row = conn.execute(q).first()
    if row is None:
        raise _no_criteria(conn, suite_id, consumer, version)
    return row.version, CriteriaSpec.model_validate(row.spec)


def _no_criteria(conn: sa.Connection, suite_id: str, consumer: str, version: int | None) -> NotFoundError:
    """No such criteria: the consumers that have criteria on the suite, or the versions this consumer has."""
    c, s = t.criteria, t.suites
    suite = "/".join(conn.execute(sa.select(s.c.team_id, s.c.suite_key).where(s.c.suite_id == suite_id)).one())
    versions = list(conn.execute(sa.select(c.c.version).where(c.c.suite_id == suite_id, c.c.consumer_key == consumer)
                                 .order_by(c.c.version)).scalars())
    if version is not None and versions:
        return NotFoundError("criteria", f"{consumer} v{version}",
                             f"versions of {consumer} on {suite}: {', '.join(f'v{v}' for v in versions)}")
    known = conn.execute(sa.select(c.c.consumer_key).where(c.c.suite_id == suite_id).distinct()
                         .order_by(c.c.consumer_key)).scalars()
    return NotFoundError(
        f"criteria on suite {suite} for consumer", consumer, known=list(known), known_as="consumers with criteria here",
        hint=f"list them with `assay ls criteria --suite {suite}`; a bundle gives a consumer criteria per suite")


def stamped_criteria(conn: sa.Connection, run_ids: Iterable[str]) -> list[sa.Row]:
    """Per run and consumer: the criteria version stamped at start, its spec, and the stamped verdict."""
    rc, c = t.run_criteria, t.criteria
    q = (
        sa.select(rc.c.run_id, rc.c.consumer_key, rc.c.version, rc.c.verdict, rc.c.verdict_reason, c.c.spec)
        .join(c, c.c.criteria_id == rc.c.criteria_id)
        .where(rc.c.run_id.in_(list(run_ids)))
        .order_by(rc.c.run_id, rc.c.consumer_key)
    )
    return list(conn.execute(q))


ASSIGNMENT: dict[str, pl.DataType] = {
    "case_run_id": pl.String(), "assertion_id": pl.String(), "assertion_key": pl.String(),
    "assertion_version": pl.Int32(), "mechanism": pl.String(), "params": pl.String(),
}
"""An assignment: one (case run, current assertion version) pair for judging to evaluate or carry."""


def assignments(conn: sa.Connection, run_ids: Sequence[str], case_runs: pl.DataFrame) -> pl.DataFrame:
    """One row per (case run, current assertion version) that applies to it: its suite's and its case's.

    ``case_runs`` has ``run_id``, ``case_run_id`` and ``case_id`` of the runs' case runs.
    """
    runs = t.runs
    suites = dict(conn.execute(sa.select(runs.c.run_id, runs.c.suite_id).where(runs.c.run_id.in_(list(run_ids)))).all())
    parts = []
    for suite_id in sorted(set(suites.values())):
        runs_of_suite = [r for r, s in suites.items() if s == suite_id]
        these = case_runs.filter(pl.col("run_id").is_in(runs_of_suite)).select("case_run_id", "case_id")
        rows = current_assertions(conn, suite_id, these["case_id"].unique().to_list())
        if not rows or these.is_empty():
            continue
        catalog = pl.DataFrame(
            rows, schema_overrides={"assertion_version": pl.Int32, "case_id": pl.String, "suite_id": pl.String}
        )
        suite_level = these.join(catalog.filter(pl.col("suite_id").is_not_null()), how="cross")
        case_level = these.join(catalog.filter(pl.col("case_id").is_not_null()), on="case_id")
        parts += [suite_level.select(list(ASSIGNMENT)), case_level.select(list(ASSIGNMENT))]
    return pl.concat(parts) if parts else pl.DataFrame(schema=ASSIGNMENT)
