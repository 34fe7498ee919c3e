"""Keeping the lake tidy: vacuuming files nobody reads, and listing a lake written before the manifest.

- :func:`vacuum` deletes files the manifest does not name (a crashed or refused writer's, ``_staging``
  leftovers) once they are older than the grace period and no live lease covers them (a writer still at
  work between staging and committing holds one), and retired files (superseded by a compaction,
  or by a judging pass rewriting the re-score state) once their grace period has passed. A reader that
  listed a retired file a moment before still finds it.
- :func:`migrate` lists the files of a lake written in the earlier layout (no manifest) in the
  catalog, de-duplicating once on each table's natural key, and marks the lake as listed.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from assay.core.errors import EvidenceError, SchemaVersionError
from assay.core.failpoints import failpoint

from . import manifest
from .manifest import LakeFile
from .store import MARKER, STAGING, VERSION_KEY, Lake

__all__ = ["migrate", "vacuum"]

_PART = re.compile(r"(?P<table>[a-z_]+)/team_id=(?P<team>[^/]+)/date=(?P<date>[^/]+)/part-[0-9a-f]{32}\.parquet")


def _modified(info: dict[str, Any]) -> datetime:
    """When a listed file was last written, from a local (``mtime``), object-store or in-memory listing.

    An in-memory file (``memory://``) only says when it was ``created``: lake files are never changed.
    """
    if "mtime" in info:
        return datetime.fromtimestamp(float(info["mtime"]), UTC)
    stamp = info.get("LastModified") or info.get("last_modified") or info.get("created")
    if isinstance(stamp, int | float):
        return datetime.fromtimestamp(float(stamp), UTC)
    if isinstance(stamp, datetime):
        return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    raise EvidenceError(f"cannot tell when {info.get('name')} was written; listing gave {sorted(info)}")


def _listing(lake: Lake) -> dict[str, dict[str, Any]]:
    """Every file under the lake's root (relative path -> listing info), except the layout marker."""
    if not lake.fs.exists(lake.root):
        return {}
    found = lake.fs.find(lake.root, detail=True)
    return {name[len(lake.root) + 1 :]: info for name, info in found.items() if not name.endswith(MARKER)}


def vacuum(lake: Lake, *, grace_seconds: float, now: datetime | None = None) -> dict[str, int]:
    """Delete what no reader will open again; returns how many files of each kind were deleted.

    ``retired``: files a compaction or a judging pass (the re-score state, copy on write) superseded more
    than ``grace_seconds`` ago (their manifest rows are
    dropped first, so a crash in between leaves only unnamed files, which the next vacuum deletes).
    ``unnamed``: files no manifest row names and no live lease covers, written more than ``grace_seconds``
    ago. Lapsed leases are dropped first, in a transaction of their own: a writer committing afterwards
    finds its lease gone and is refused (:meth:`Lake.commit`), so a file is never both deleted and named.
    """
    now = now or datetime.now(UTC)
    cutoff = now - timedelta(seconds=grace_seconds)
    with lake.engine.begin() as conn:
        retired = manifest.retired_before(conn, cutoff)
        manifest.forget(conn, retired)
    failpoint("vacuum.forgotten")
    for path in retired:
        if lake.fs.exists(lake.path(path)):
            lake.fs.rm(lake.path(path))
    with lake.engine.begin() as conn:
        leased = manifest.leased(conn, now=now)
    with lake.engine.connect() as conn:
        named = manifest.named_paths(conn)
    kept = named | leased | {f"{STAGING}/{_part(path)}.tmp" for path in leased}
    unnamed = [rel for rel, info in _listing(lake).items()
               if rel not in kept and (rel.endswith(".parquet") or rel.startswith(STAGING)) and _modified(info) < cutoff]
    for rel in unnamed:
        lake.fs.rm(lake.path(rel))
    return {"retired": len(retired), "unnamed": len(unnamed)}


def _part(path: str) -> str:
    """The ``<hex>`` of ``.../part-<hex>.parquet``: a staged file's temporary name is ``_staging/<hex>.tmp``."""
    return path.rsplit("/part-", 1)[-1].removesuffix(".parquet")


def migrate(lake: Lake) -> dict[str, dict[str, int]]:
    """List an earlier lake's files in the manifest, de-duplicating once; then mark the lake as listed.

    Each table's rows are read once; where a natural key appears more than once (a retried write of
    the earlier layout), the row every earlier reader kept (smallest ``first_by``, then file path)
    stays. Files holding no losing row are listed as they are; the others are rewritten without the
    losing rows, and the originals are left unnamed for :func:`vacuum`. Returns, per table, how many
    files were listed and rewritten and how many duplicate rows were dropped. Running it on a lake that
    is already listed does nothing.
    """
    if lake.fs.exists(lake.path(MARKER)):
        return {}
    lake.accept_layout()  # the files this writes are in the new layout already
    files_of: dict[str, list[str]] = {}
    for rel in sorted(_listing(lake)):
        match = _PART.fullmatch(rel)
        if match and match["table"] in lake.tables:
            files_of.setdefault(match["table"], []).append(rel)
    report: dict[str, dict[str, int]] = {}
    listed: list[LakeFile] = []
    for table, paths in files_of.items():
        kept, counts = _deduplicated(lake, table, paths)
        listed += kept
        report[table] = counts
    with lake.engine.begin() as conn:
        lake.commit(conn, listed, origin="migration", ref="assay lake migrate")
    lake.fs.pipe_file(lake.path(MARKER), json.dumps({"format": "assay.lake", "migrated_at": datetime.now(UTC).isoformat()}).encode())
    return report


def _version(lake: Lake, table: str, rel: str) -> int:
    t = lake.table(table)
    meta = lake.footer(lake.path(rel)).metadata or {}
    found = meta.get(VERSION_KEY, b"").decode()
    if found not in {str(v) for v in t.known_versions}:
        raise SchemaVersionError(lake.address(rel), found or None, t.known_versions)
    return int(found)


def _deduplicated(lake: Lake, table: str, paths: list[str]) -> tuple[list[LakeFile], dict[str, int]]:
    t = lake.table(table)
    frames = []
    for rel in paths:
        version = _version(lake, table, rel)
        match = _PART.fullmatch(rel)
        assert match is not None
        source = lake.path(rel) if lake.local else pa.BufferReader(lake.fs.cat_file(lake.path(rel)))
        frame = pl.from_arrow(pq.read_table(source))
        for name, (value, _) in t.added_since(version).items():
            frame = frame.with_columns(pl.lit(value).cast(pl.from_arrow(t.arrow_schema.empty_table())[name].dtype).alias(name))
        for name in t.widened_since(version):  # struct fields added since: read null
            frame = frame.with_columns(pl.col(name).cast(pl.from_arrow(t.arrow_schema.empty_table())[name].dtype))
        frames.append(frame.select(t.arrow_schema.names).with_columns(
            _file=pl.lit(rel), _team=pl.lit(match["team"]), _date=pl.lit(match["date"]), _version=pl.lit(version)))
    rows = pl.concat(frames)
    winner = pl.col("_file").sort_by(t.first_by, "_file").first().over(t.natural_key)
    rows = rows.with_columns(_keep=pl.col("_file") == winner)
    losing_files = set(rows.filter(~pl.col("_keep"))["_file"].unique().to_list())
    listed: list[LakeFile] = []
    for rel in paths:
        mine = rows.filter(pl.col("_file") == rel)
        team, date = mine["_team"][0], mine["_date"][0]
        if rel in losing_files:
            kept = mine.filter("_keep").select(t.arrow_schema.names)
            if kept.height:
                listed.append(lake.stage(table, kept, team_id=team, date=date))
            continue
        runs = tuple(sorted(mine["run_id"].unique().to_list())) if "run_id" in mine.columns else ()
        size = lake.fs.size(lake.path(rel))
        listed.append(LakeFile(table, rel, team, date, mine.height, size, int(mine["_version"][0]), runs))
    counts = {"files": len(listed), "rewritten": len(losing_files), "duplicates_dropped": rows.height - rows["_keep"].sum()}
    return listed, counts
