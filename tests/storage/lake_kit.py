"""Builders shared by the lake's tests: rows of each table, files planted by hand, and listing them.

- :func:`case_runs` and :func:`evaluations` build valid rows the way a runner's report carries them;
- :func:`plant` writes a file in the lake's layout straight through PyArrow, bypassing the manifest
  (a crashed writer's file, an earlier Assay's file, a golden file); :func:`list_file` then names a
  planted file in the manifest, as a writer's commit would;
- :func:`seen` is what every reader sees; :func:`everything` and :func:`manifest_paths` say what is
  on disk and what the catalog names.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from assay.core.evidence import CaseRun, Evaluation, Report, ToolCall, Turn
from assay.storage.catalog import tables as catalog
from assay.storage.lake import TABLES, Lake, LakeFile
from assay.storage.query import connect

__all__ = [
    "GOLDEN", "T0", "case_runs", "evaluations", "everything", "file_rows", "list_file", "manifest_paths", "plant", "seen",
]

GOLDEN = Path(__file__).parent / "golden"
T0 = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)


def case_runs(n: int = 3, *, prefix: str = "cr", run_id: str = "run-1", reported_at: datetime = T0) -> pl.DataFrame:
    """``n`` case-run rows of ``run_id`` with everything filled in, built the way a small runner reports them."""
    runs = [
        CaseRun(
            case_id=f"case-{i}",
            status="error" if i % 3 == 2 else "executed",
            error="vendor timeout" if i % 3 == 2 else None,
            transcript=[Turn(role="caller", text=f"hello {i}", t=0.0, end_t=1.2), Turn(role="agent", text="hi ✓", t=1.5)],
            tool_calls=[ToolCall(name="lookup", arguments={"q": i}, result={"ok": True}, t=1.0)],
            cost_usd=0.01 * i,
            vendor_cost=None if i == 0 else 40.0 * i,
            vendor_cost_unit=None if i == 0 else "credits",
            duration_ms=1000.0 + i,
            started_at=T0 - timedelta(minutes=1),
            evaluations=[Evaluation(name="polite", evaluator="fixed:scorer", verdict="pass", score=0.5,
                                    scale_min=0.0, scale_max=1.0)],
        )
        for i in range(n)
    ]
    core = pl.from_arrow(Report.from_case_runs("q1", runs).case_runs)
    assert isinstance(core, pl.DataFrame)
    return core.with_columns(
        case_run_id=pl.Series([f"{prefix}-{i}" for i in range(n)]),
        run_id=pl.lit(run_id),
        suite_id=pl.lit("suite-1"),
        case_key=pl.col("case_id"),
        runner=pl.lit("fixed"),
        request_id=pl.lit("q1"),
        case_snapshot=pl.lit('{"prompt": "hi"}'),
        case_snapshot_hash=pl.lit("abc123"),
        reported_at=pl.lit(reported_at).dt.cast_time_unit("us"),
    )


def evaluations(n: int = 2, *, score: float = 0.5) -> pl.DataFrame:
    """``n`` runner-evaluation rows on a 0..1 scale."""
    return pl.DataFrame(
        {
            "evaluation_id": [f"ev-{i}" for i in range(n)],
            "case_run_id": [f"cr-{i}" for i in range(n)],
            "run_id": "run-1",
            "request_id": "q1",
            "reported_at": T0,
            "case_id": [f"case-{i}" for i in range(n)],
            "source_ref": "",
            "name": "polite",
            "evaluator": "fixed:scorer",
            "verdict": "pass",
            "score": score,
            "scale_min": 0.0,
            "scale_max": 1.0,
            "rationale": None,
            "raw": '{"label": "good"}',
            "met": True,
            "value": score,
        },
        schema_overrides={"rationale": pl.String},
    )


def plant(
    lake: Lake,
    table: str,
    rows: pl.DataFrame | pa.Table,
    *,
    team: str = "team-a",
    date: str = "2024-05-06",
    version: bytes | None = b"current",
    name: str | None = None,
) -> str:
    """Write ``rows`` as ``<table>/team_id=<team>/date=<date>/part-<hex>.parquet`` with PyArrow alone.

    The file carries ``assay.table`` and (unless ``version`` is None) ``assay.schema_version`` in its
    metadata, as the lake's writers always did (``b"current"``: the table's current version); no manifest
    row names it. Returns its relative path.
    """
    if version == b"current":
        version = str(TABLES[table].version).encode()
    arrow = rows.to_arrow() if isinstance(rows, pl.DataFrame) else rows
    metadata = {b"assay.table": table.encode(), **({b"assay.schema_version": version} if version else {})}
    arrow = arrow.select(TABLES[table].arrow_schema.names).cast(TABLES[table].arrow_schema).replace_schema_metadata(metadata)
    relative = f"{table}/team_id={team}/date={date}/part-{name or uuid.uuid4().hex}.parquet"
    lake.fs.makedirs(lake.path(relative).rsplit("/", 1)[0], exist_ok=True)
    with lake.fs.open(lake.path(relative), "wb") as out:
        pq.write_table(arrow, out)
    return relative


def file_rows(lake: Lake, relative: str) -> pa.Table:
    """The rows inside one lake file, as PyArrow reads it (no partition columns)."""
    with lake.fs.open(lake.path(relative), "rb") as f:
        return pq.read_table(f)


def list_file(lake: Lake, relative: str, *, version: int | None = None, origin: str = "migration") -> LakeFile:
    """Name a planted file in the manifest (in a transaction of its own), as a writer's commit would;
    ``version`` defaults to the table's current one."""
    table, team, date, _ = relative.split("/")
    version = TABLES[table].version if version is None else version
    rows = file_rows(lake, relative)
    runs = tuple(sorted(set(rows.column("run_id").to_pylist()))) if "run_id" in rows.column_names else ()
    listed = LakeFile(table, relative, team.removeprefix("team_id="), date.removeprefix("date="), rows.num_rows,
                      lake.fs.size(lake.path(relative)), version, runs)
    with lake.engine.begin() as conn:
        lake.commit(conn, [listed], origin=origin, ref="planted by a test")
    return listed


def manifest_paths(engine: sa.Engine, *, live: bool = False) -> list[str]:
    """The paths the manifest names (only the live ones with ``live``), sorted."""
    q = sa.select(catalog.lake_files.c.path)
    if live:
        q = q.where(catalog.lake_files.c.removed_at.is_(None))
    with engine.connect() as conn:
        return sorted(conn.execute(q).scalars())


def everything(root: Path) -> list[str]:
    """Every file and folder under ``root``, relative to it, sorted (``[]`` if it does not exist)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def seen(lake: Lake, table: str = "case_runs") -> list[str]:
    """The natural keys of ``table`` every reader sees (sorted, duplicates kept).

    ``Lake.scan``, ``Lake.read`` and a DuckDB connection over the same lake must agree, or this fails.
    """
    key = TABLES[table].natural_key[0]
    by_scan, by_read = sorted(lake.scan(table).collect()[key]), sorted(lake.read(table)[key])
    by_duckdb = [k for (k,) in connect(lake).sql(f"select {key} from {table} order by {key}").fetchall()]
    assert by_scan == by_read == by_duckdb, {"scan": by_scan, "read": by_read, "duckdb": by_duckdb}
    return by_scan
