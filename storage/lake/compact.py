"""Compaction: rewrite a partition's many small files as a few large ones, swapping their manifest rows at once.

Every report and judging pass writes one small file per table per team/date partition, so over time a
partition holds thousands of them. Compacting one partition takes three steps:

1. :func:`plan` picks, from the manifest, each partition's live files smaller than the target size
   (only where rewriting them gives fewer files);
2. :func:`rewrite` checks each file in full against the manifest (size, footer, sha256: a file changed
   since it was written is refused by name, never copied into a new file as if it were true), reads them in one scan, sorts the rows for the re-score query and stages them as
   new files through :meth:`Lake.stage` (validated, at the current schema version), read by nobody yet;
3. :func:`swap` retires the old files and names the new ones in **one** catalog transaction, and only
   if every old file is still live: a concurrent compaction of the same partition got there first
   otherwise, and this one rolls back, leaving its new files unnamed for vacuum.

No row is lost or doubled and no query's answer changes. The old files stay on disk, retired:
:func:`~.upkeep.vacuum` deletes them after the grace period, so a reader that listed them a moment
before the swap still reads them. :func:`compact` does the three steps for every partition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import groupby

from assay.core.errors import EvidenceError
from assay.core.failpoints import failpoint
from assay.core.ids import new_id

from . import integrity, manifest
from .manifest import FileFilter, LakeFile
from .projection_tables import PROJECTED
from .store import Lake

__all__ = ["Compaction", "Partition", "TARGET_BYTES", "compact", "plan", "rewrite", "sort_keys", "swap"]

TARGET_BYTES = 128 * 2**20
"""The default size of a compacted file; files at least this large are left alone."""


@dataclass(frozen=True)
class SmallFile:
    """A live file a compaction will replace, as the manifest names it."""

    path: str
    rows: int
    bytes: int
    version: int
    checksum: str | None = None


@dataclass(frozen=True)
class Partition:
    """One table's team/date partition and the small live files in it to be rewritten."""

    table: str
    team_id: str
    date: str
    files: tuple[SmallFile, ...]

    @property
    def rows(self) -> int:
        """The rows the files hold (the manifest's count)."""
        return sum(f.rows for f in self.files)

    @property
    def bytes(self) -> int:
        """The files' total size in bytes."""
        return sum(f.bytes for f in self.files)


@dataclass(frozen=True)
class Compaction:
    """A partition rewritten: the new files are staged (unnamed) until :func:`swap` names them."""

    compaction_id: str
    """Recorded as the new files' ``origin_ref`` and the old files' ``removed_by``."""
    partition: Partition
    written: tuple[LakeFile, ...]


def sort_keys(lake: Lake, table: str) -> list[str]:
    """The columns a compacted file of ``table`` is sorted by, for the re-score query: the table's
    ``sort_by`` (else ``run_id``), then its natural key, so the order is total and a run's rows are together."""
    lt = lake.table(table)
    first = lt.sort_by or (("run_id",) if "run_id" in lt.arrow_schema.names else ())
    return [*first, *(k for k in lt.natural_key if k not in first)]


def plan(
    lake: Lake, *, table: str | None = None, team: str | None = None, target_bytes: int = TARGET_BYTES,
    min_files: int = 2,
) -> list[Partition]:
    """Partitions (of ``table`` and ``team``, or all) with at least ``min_files`` live files smaller than
    ``target_bytes`` that would be rewritten as fewer files; in table, team, date order."""
    if target_bytes < 1 or min_files < 2:
        raise ValueError(f"compaction needs target_bytes >= 1 and min_files >= 2, got {target_bytes} and {min_files}")
    lake.check_layout()
    with lake.engine.connect() as conn:
        found = manifest.small_files(conn, below=target_bytes, table=None if table is None else lake.table(table).name,
                                     team=team)
    partitions = []
    for (name, team_id, day), rows in groupby(found, key=lambda r: (r.table_name, r.team_id, r.lake_date)):
        if name not in lake.tables or name in PROJECTED:
            continue  # a table this build does not know, or a projected one (rewritten per suite by every pass)
        small = tuple(SmallFile(r.path, r.rows, r.bytes, r.schema_version, r.checksum) for r in rows)
        p = Partition(name, team_id, day, small)
        if len(small) >= min_files and _pieces(p, target_bytes) < len(small):
            partitions.append(p)
    return partitions


def _pieces(p: Partition, target_bytes: int) -> int:
    """How many files of at most about ``target_bytes`` the partition's rows need."""
    return max(1, math.ceil(p.bytes / target_bytes))


def rewrite(lake: Lake, p: Partition, *, target_bytes: int = TARGET_BYTES) -> Compaction:
    """Read ``p``'s files in one scan and stage their rows, sorted, as few new files (unnamed yet).

    Files of an older schema version are read as the current one and rewritten at it. A missing or
    corrupt file, or one whose bytes changed since they were written (its sha256), raises
    :class:`~assay.core.errors.EvidenceError` naming it, having staged nothing.
    """
    lt = lake.table(p.table)
    for small in p.files:
        found = integrity.problem(lake, LakeFile(lt.name, small.path, p.team_id, p.date, small.rows, small.bytes,
                                                 small.version, checksum=small.checksum), full=True)
        if found is not None:
            raise found.error()
    scan = lake.scan_files(lt.name, [(lake.address(small.path), small.version) for small in p.files])
    query = scan.select(lt.arrow_schema.names).sort(sort_keys(lake, lt.name))
    until = (date.fromisoformat(p.date) + timedelta(days=1)).isoformat()
    rows = lake.collect(query, lt.name, FileFilter(teams=[p.team_id], since=p.date, until=until))
    if rows.height != p.rows:
        raise EvidenceError(
            f"{lt.name} team_id={p.team_id} date={p.date}: the manifest counts {p.rows} rows in {len(p.files)} "
            f"files but they hold {rows.height}: they changed after they were written; restore them from a backup"
        )
    per_file = max(1, math.ceil(rows.height / _pieces(p, target_bytes)))
    written = tuple(
        lake.stage(lt.name, rows.slice(start, per_file), team_id=p.team_id, date=p.date)
        for start in range(0, rows.height, per_file)
    )
    return Compaction(f"compaction-{new_id()}", p, written)


def swap(lake: Lake, c: Compaction, *, now: datetime | None = None) -> bool:
    """Retire ``c``'s old files and name its new ones in one catalog transaction; False if refused.

    Refused (nothing changes, the new files stay unnamed for vacuum) when any old file is no longer
    live: another compaction of the partition swapped first, and naming these files would double rows.
    """
    old = [f.path for f in c.partition.files]
    failpoint("compact.staged")
    with lake.engine.connect() as conn, conn.begin() as txn:
        if manifest.retire(conn, old, by=c.compaction_id, now=now or datetime.now(UTC)) != len(old):
            txn.rollback()
            return False
        lake.commit(conn, c.written, origin="compaction", ref=c.compaction_id)
        failpoint("compact.recorded")
    return True


def compact(
    lake: Lake, *, table: str | None = None, team: str | None = None, target_bytes: int = TARGET_BYTES,
    min_files: int = 2,
) -> dict[str, int]:
    """Compact every partition :func:`plan` picks (of ``table`` and ``team``, or all); return a summary.

    The summary counts the ``partitions`` compacted, the partitions ``refused`` (a concurrent
    compaction swapped them first), the ``files_in`` retired and ``files_out`` written, the ``rows``
    they hold, and ``bytes_in`` / ``bytes_out``. Running it again with nothing to gain does nothing.
    """
    summary = dict.fromkeys(("partitions", "refused", "files_in", "files_out", "rows", "bytes_in", "bytes_out"), 0)
    for p in plan(lake, table=table, team=team, target_bytes=target_bytes, min_files=min_files):
        c = rewrite(lake, p, target_bytes=target_bytes)
        if not swap(lake, c):
            summary["refused"] += 1
            continue
        summary["partitions"] += 1
        summary["files_in"] += len(p.files)
        summary["files_out"] += len(c.written)
        summary["rows"] += p.rows
        summary["bytes_in"] += p.bytes
        summary["bytes_out"] += sum(f.bytes for f in c.written)
    return summary
