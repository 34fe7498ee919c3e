"""Per-table commit logs vs our manifest: commit and read figures for Delta Lake, Iceberg and ours.

Three lakes take the same reports, one commit each. A report is one file's worth of case-run-like rows
(string ids, booleans, floats, UTC timestamps; 10,000 rows by default) for one run, partitioned by
team and date:

- ``manifest``: our design, minimal: write the Parquet file, then in ONE SQLite transaction record
  the report's acceptance (a unique request id) and the manifest rows naming the file and its run.
  A read asks the manifest for the run's paths, then ``pl.scan_parquet(paths)``.
- ``delta``: Delta Lake through ``deltalake`` (delta-rs): ``write_deltalake(mode="append")`` per
  report; a read is ``pl.scan_delta(...).filter(run_id)`` (log replay from the last checkpoint, then
  file skipping on the log's column statistics).
- ``iceberg``: Iceberg through pyiceberg's SQL catalog on SQLite: ``load_table().append()`` per report;
  a read is ``load_table().scan(row_filter=EqualTo("run_id", ...)).to_arrow()``.

Each lake first receives ``--history`` commits (one run each), then ``--repeats`` more are timed: the
commit latency is their median (and their maximum, reported beside it). Reads
open the table afresh (a new catalog connection or table load) and fetch one run's rows, for
``--repeats`` runs spread over the history. The page cache is warm: these are metadata costs, not disk.

pyiceberg 0.12 copies the whole table metadata (every snapshot) on each commit, so its commit time
grows with the number of snapshots; it gets a shorter history by default (``--iceberg-history``) so
that one run stays under ~3 minutes on 2 cores. ``--iceberg-history 1000`` measures it at 1,000
commits (~15 minutes on a busy 2-core machine); ``--iceberg-keep-snapshots K`` expires all but the
newest K snapshots every 50 commits, the maintenance an Iceberg operator would run (and time travel
beyond K commits is gone).

Run: ``python -m bench.lake_alternatives [OUT.json]`` (JSON to stdout without OUT). Delta and Iceberg
need the optional extra: ``pip install -e '.[alternatives]'``; ``--systems manifest`` runs without it.
Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from .common import machine, workdir

__all__ = ["SYSTEMS", "main", "measure", "report_rows"]

PARTITIONS = ["team_id", "date"]
INSTALL_HINT = "pip install -e '.[alternatives]'  (deltalake and pyiceberg[sql-sqlite], pinned in pyproject.toml)"


def report_rows(run: int, rows: int) -> pa.Table:
    """One report of run ``run``: ``rows`` case-run-like rows, all in the run's team/date partition."""
    i = pl.col("i")
    return pl.DataFrame({"i": pl.int_range(rows, eager=True)}).select(
        run_id=pl.lit(f"run-{run:06d}"),
        request_id=pl.lit(f"req-{run:06d}"),
        case_run_id=pl.format("cr-{}-{}", pl.lit(run), i),
        case_key=pl.format("case-{}", i % 50),
        status=pl.when(i.hash(run) % 100 == 0).then(pl.lit("failed")).otherwise(pl.lit("executed")),
        passed=i.hash(run + 1) % 3 != 0,
        duration_ms=(i.hash(run + 2) % 600_000).cast(pl.Float64) / 10,
        cost_usd=pl.when(i.hash(run + 3) % 50 == 0).then(None).otherwise((i.hash(run + 4) % 4000) / 10_000),
        turns=(i.hash(run + 5) % 12 + 2).cast(pl.Int32),
        started_at=pl.lit(datetime(2026, 11, 1, tzinfo=UTC)) + pl.duration(hours=run, seconds=i),
        reported_at=pl.lit(datetime(2026, 11, 1, tzinfo=UTC)) + pl.duration(hours=run + 1),
        team_id=pl.lit(f"team-{run % 4}"),
        date=pl.lit(f"2026-11-{1 + run // 100 % 28:02d}"),
    ).to_arrow()


def _bytes_under(*paths: Path) -> int:
    return sum(f.stat().st_size for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())


class Lake(Protocol):
    """What the measurement needs of a lake: commit one report, read one run, say its metadata size."""

    def commit(self, run: int, table: pa.Table) -> None: ...
    def read(self, run_id: str) -> int: ...
    def metadata_bytes(self) -> int: ...


class ManifestLake:
    """Parquet files + a SQLite manifest: our design reduced to its commit and its read."""

    SCHEMA = """
        CREATE TABLE reports (request_id TEXT PRIMARY KEY, run_id TEXT NOT NULL, accepted_at TEXT NOT NULL);
        CREATE TABLE lake_files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, rows INTEGER NOT NULL,
                                 bytes INTEGER NOT NULL, added_by TEXT NOT NULL, removed_at TEXT);
        CREATE TABLE lake_file_runs (run_id TEXT NOT NULL, file_id INTEGER NOT NULL REFERENCES lake_files(id),
                                     PRIMARY KEY (run_id, file_id));
    """

    def __init__(self, root: Path) -> None:
        self.root, self.db = root, root / "catalog.db"
        self.lock_seconds: list[float] = []
        """How long each commit held SQLite's write lock (the metadata transaction only)."""
        con = self._connect()
        con.executescript(self.SCHEMA)
        con.close()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.db, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")  # the catalog engine's settings
        con.execute("PRAGMA synchronous=NORMAL")
        return con

    def commit(self, run: int, table: pa.Table) -> None:
        team, date = table["team_id"][0].as_py(), table["date"][0].as_py()
        folder = self.root / "lake" / "case_runs" / f"team_id={team}" / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{uuid.uuid4().hex}.parquet"
        pq.write_table(table.drop_columns(PARTITIONS), path)  # invisible: no manifest row names it yet
        con = self._connect()
        start = time.perf_counter()
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO reports VALUES (?, ?, ?)", (table["request_id"][0].as_py(), f"run-{run:06d}",
                                                             datetime.now(UTC).isoformat()))
        file_id = con.execute("INSERT INTO lake_files (path, rows, bytes, added_by) VALUES (?, ?, ?, 'report')",
                              (str(path.relative_to(self.root)), table.num_rows, path.stat().st_size)).lastrowid
        con.execute("INSERT INTO lake_file_runs VALUES (?, ?)", (f"run-{run:06d}", file_id))
        con.execute("COMMIT")
        self.lock_seconds.append(time.perf_counter() - start)
        con.close()

    def read(self, run_id: str) -> int:
        con = self._connect()
        paths = [str(self.root / p) for (p,) in con.execute(
            "SELECT path FROM lake_files JOIN lake_file_runs ON file_id = id WHERE run_id = ? AND removed_at IS NULL",
            (run_id,))]
        con.close()
        return pl.scan_parquet(paths).filter(pl.col("run_id") == run_id).collect().height

    def metadata_bytes(self) -> int:
        return _bytes_under(*self.root.glob("catalog.db*"))


class DeltaLake:
    """A Delta table written and read with deltalake (delta-rs)."""

    def __init__(self, root: Path) -> None:
        from deltalake import write_deltalake

        self.root, self.uri, self._write = root, str(root / "case_runs"), write_deltalake

    def commit(self, run: int, table: pa.Table) -> None:
        self._write(self.uri, table, mode="append", partition_by=PARTITIONS)

    def read(self, run_id: str) -> int:
        return pl.scan_delta(self.uri).filter(pl.col("run_id") == run_id).collect().height

    def metadata_bytes(self) -> int:
        return _bytes_under(self.root / "case_runs" / "_delta_log")


class IcebergLake:
    """An Iceberg table in pyiceberg's SQL catalog (SQLite), partitioned by identity(team_id), identity(date)."""

    def __init__(self, root: Path, keep_snapshots: int | None = None) -> None:
        from pyiceberg.catalog.sql import SqlCatalog

        self.root, self.keep = root, keep_snapshots
        self.catalog = SqlCatalog("bench", uri=f"sqlite:///{root / 'catalog.db'}", warehouse=root.as_uri())
        self.catalog.create_namespace("lake")
        table = self.catalog.create_table("lake.case_runs", schema=report_rows(0, 1).schema)
        with table.update_spec() as spec:
            for column in PARTITIONS:
                spec.add_identity(column)
        self.commits = 0

    def commit(self, run: int, table: pa.Table) -> None:
        self.catalog.load_table("lake.case_runs").append(table)
        self.commits += 1
        if self.keep is not None and self.commits % 50 == 0:
            self._expire()

    def _expire(self) -> None:
        table = self.catalog.load_table("lake.case_runs")
        old = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)[: -self.keep or None]
        if old:
            table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()

    def read(self, run_id: str) -> int:
        from pyiceberg.expressions import EqualTo

        return self.catalog.load_table("lake.case_runs").scan(row_filter=EqualTo("run_id", run_id)).to_arrow().num_rows

    def metadata_bytes(self) -> int:
        return _bytes_under(*self.root.glob("catalog.db*"), *self.root.rglob("metadata"))


SYSTEMS: dict[str, tuple[str, str | None]] = {
    "manifest": ("Parquet + SQLite manifest (ours)", None),
    "delta": ("Delta Lake (deltalake)", "deltalake"),
    "iceberg": ("Iceberg (pyiceberg SQL catalog, SQLite)", "pyiceberg"),
}
"""Measurable systems: name -> (label, the package it needs beyond the main dependencies)."""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _reports(first: int, count: int, rows: int) -> Iterator[tuple[int, pa.Table]]:
    for run in range(first, first + count):
        yield run, report_rows(run, rows)  # built before the clock starts


def measure(lake: Lake, history: int, rows: int, repeats: int) -> dict[str, Any]:
    """Commit ``history`` reports, then time ``repeats`` more commits and ``repeats`` one-run reads."""
    build = [_timed(lambda: lake.commit(run, t))[0] for run, t in _reports(0, history, rows)]
    commits = [_timed(lambda: lake.commit(run, t))[0] for run, t in _reports(history, repeats, rows)]
    reads = []
    for k in range(repeats):
        run_id = f"run-{(2 * k + 1) * history // (2 * repeats):06d}"
        seconds, got = _timed(lambda: lake.read(run_id))
        if got != rows:
            raise AssertionError(f"{type(lake).__name__}: read {got} rows of {run_id}, expected {rows}")
        reads.append(seconds)
    early = build[: min(50, len(build))] or commits
    return {
        "history_commits": history, "rows_per_commit": rows,
        "commit_median_s": round(statistics.median(commits), 4), "commit_max_s": round(max(commits), 4),
        "commit_first50_median_s": round(statistics.median(early), 4),
        "history_build_s": round(sum(build), 1),
        "read_one_run_median_s": round(statistics.median(reads), 4),
        "metadata_bytes": lake.metadata_bytes(),
    }


def _open(name: str, root: Path, args: argparse.Namespace) -> Lake:
    root.mkdir(parents=True)
    if name == "manifest":
        return ManifestLake(root)
    if name == "delta":
        return DeltaLake(root)
    return IcebergLake(root, args.iceberg_keep_snapshots)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.lake_alternatives", description=__doc__.split("\n")[0])
    p.add_argument("out", nargs="?", help="write the figures as JSON here (default: stdout, table on stderr)")
    p.add_argument("--systems", default="manifest,delta,iceberg", help="comma-separated: " + ", ".join(SYSTEMS))
    p.add_argument("--history", type=int, default=1000, help="commits before measuring (default 1000)")
    p.add_argument("--iceberg-history", type=int, default=300,
                   help="Iceberg's history (default 300: pyiceberg's commit slows as snapshots accumulate)")
    p.add_argument("--iceberg-keep-snapshots", type=int, default=None, metavar="K",
                   help="expire all but the newest K Iceberg snapshots every 50 commits (default: never)")
    p.add_argument("--rows", type=int, default=10_000, help="rows per report (default 10000)")
    p.add_argument("--repeats", type=int, default=15, help="timed commits and reads per system (default 15)")
    p.add_argument("--keep", action="store_true", help="keep the lakes under bench/.work/lake_alternatives")
    args = p.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        p.error(f"unknown system(s) {unknown}; choose from {list(SYSTEMS)}")
    too_small = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                 if k in ("history", "iceberg_history", "rows", "repeats", "iceberg_keep_snapshots")
                 and v is not None and v < 1]
    if too_small:
        p.error(f"{', '.join(too_small)}: must be at least 1")
    return args


def _missing(systems: list[str]) -> list[str]:
    import importlib.util

    return [pkg for s in systems if (pkg := SYSTEMS[s][1]) and importlib.util.find_spec(pkg) is None]


def main(argv: list[str] | None = None) -> int:
    """Measure the chosen systems, print a table, write the JSON document; 2 if a package is missing."""
    args = _arguments(argv)
    if missing := _missing(args.systems):
        print(f"missing {', '.join(missing)}: install the extra with\n  {INSTALL_HINT}\n"
              "or measure only our design with --systems manifest", file=sys.stderr)
        return 2
    work = workdir("lake_alternatives")
    results = []
    for name in args.systems:
        history = args.iceberg_history if name == "iceberg" else args.history
        print(f"{name}: {history} commits of {args.rows:,} rows, then {args.repeats} timed ...",
              file=sys.stderr, flush=True)
        lake = _open(name, work / name, args)
        figures = measure(lake, history, args.rows, args.repeats)
        if isinstance(lake, ManifestLake):
            figures["lock_hold_median_s"] = round(statistics.median(lake.lock_seconds), 5)
        figures["data_bytes"] = _bytes_under(work / name) - figures["metadata_bytes"]
        results.append({"system": name, "label": SYSTEMS[name][0], **figures})
    if not args.keep:
        shutil.rmtree(work)
    doc = {
        "schema": "assay.bench.lake_alternatives", "revision": 1, "machine": machine(),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.lake_alternatives " + " ".join(sys.argv[1:] if argv is None else argv),
        "versions": _versions(args.systems), "iceberg_keep_snapshots": args.iceberg_keep_snapshots,
        "results": results,
    }
    table = _table(results)
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
        print(table + f"\nwrote {args.out}")
    else:
        print(table, file=sys.stderr)
        print(json.dumps(doc, indent=2))
    return 0


def _versions(systems: list[str]) -> dict[str, str]:
    from importlib.metadata import version

    extra = [pkg for s in systems if (pkg := SYSTEMS[s][1])]
    return {pkg: version(pkg) for pkg in ["polars", "pyarrow", *extra]}


def _table(results: list[dict[str, Any]]) -> str:
    head = f"{'system':<42}{'history':>8}{'commit ms':>11}{'max ms':>9}{'first 50':>10}{'read ms':>9}{'meta KiB':>10}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r['label']:<42}{r['history_commits']:>8}{r['commit_median_s'] * 1000:>11.1f}"
                     f"{r['commit_max_s'] * 1000:>9.1f}{r['commit_first50_median_s'] * 1000:>10.1f}"
                     f"{r['read_one_run_median_s'] * 1000:>9.1f}{r['metadata_bytes'] / 1024:>10.0f}")
    lines.append(f"medians of timed commits/reads after `history` commits; first 50 = median of the first 50 "
                 f"history commits; {machine()}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
