"""The catalog's scratch book: every vendor object a runner creates for a run, from before it exists
until it is deleted (:class:`assay.core.runner.ScratchBook`).

A row is written before the vendor is asked to create the object, so a process killed at any point
leaves a row naming it; :func:`abandoned` lists the rows of runs nobody is working on any more, which
the reaper hands back to their runner's ``teardown``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from assay.core.ids import new_id
from assay.core.runner import ScratchObject

from . import tables as t


def _now() -> datetime:
    return datetime.now(UTC)


def _obj(row: sa.Row) -> ScratchObject:
    return ScratchObject(scratch_id=row.scratch_id, run_id=row.run_id, runner=row.runner, kind=row.kind,
                         name=row.name, vendor_id=row.vendor_id)


class CatalogScratchBook:
    """Scratch objects recorded in the catalog's ``scratch_objects`` table."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine

    def intend(self, run_id: str, runner: str, kind: str, name: str) -> ScratchObject:
        obj = ScratchObject(scratch_id=new_id(), run_id=run_id, runner=runner, kind=kind, name=name)
        with self.engine.begin() as conn:
            conn.execute(t.scratch_objects.insert().values(
                scratch_id=obj.scratch_id, run_id=run_id, runner=runner, kind=kind, name=name, created_at=_now()))
        return obj

    def created(self, obj: ScratchObject, vendor_id: str) -> ScratchObject:
        with self.engine.begin() as conn:
            conn.execute(t.scratch_objects.update().where(t.scratch_objects.c.scratch_id == obj.scratch_id)
                         .values(vendor_id=vendor_id))
        return ScratchObject(**{**obj.__dict__, "vendor_id": vendor_id})

    def deleted(self, obj: ScratchObject) -> None:
        with self.engine.begin() as conn:
            conn.execute(t.scratch_objects.update().where(t.scratch_objects.c.scratch_id == obj.scratch_id)
                         .values(deleted_at=_now(), last_error=None))

    def failed(self, obj: ScratchObject, error: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(t.scratch_objects.update().where(t.scratch_objects.c.scratch_id == obj.scratch_id)
                         .values(last_error=error[:2000]))

    def outstanding(self, run_id: str | None = None) -> list[ScratchObject]:
        """Objects not yet deleted (of one run, or of every run), oldest first."""
        s = t.scratch_objects
        query = sa.select(s).where(s.c.deleted_at.is_(None)).order_by(s.c.created_at, s.c.scratch_id)
        if run_id is not None:
            query = query.where(s.c.run_id == run_id)
        with self.engine.connect() as conn:
            return [_obj(r) for r in conn.execute(query)]

    def abandoned(self, now: datetime | None = None) -> list[ScratchObject]:
        """Objects not yet deleted whose run nobody is working on: finalised, released, or its lease expired."""
        s, r = t.scratch_objects, t.runs
        now = now or _now()
        idle = sa.or_(r.c.finalised_at.is_not(None), r.c.lease_owner.is_(None), r.c.lease_expires_at < now)
        query = (sa.select(s).join(r, r.c.run_id == s.c.run_id)
                 .where(s.c.deleted_at.is_(None), idle).order_by(s.c.created_at, s.c.scratch_id))
        with self.engine.connect() as conn:
            return [_obj(row) for row in conn.execute(query)]


__all__ = ["CatalogScratchBook"]
