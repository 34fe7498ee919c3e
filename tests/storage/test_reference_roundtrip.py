"""One reference table with every type the lake uses, round-tripped Polars -> Parquet -> Polars and DuckDB.

A seeded generator stands in for a property-testing library: each seed is a different batch with
nulls everywhere they are allowed, tz-aware timestamps, nested lists of structs (null, empty, with
null members), unicode, special floats and, for some seeds, a string of about 1 MB.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

from assay.core.evidence import case_run_schema
from assay.storage.catalog.engine import create_catalog_engine, migrate
from assay.storage.lake import Lake, LakeTable, lake_table
from assay.storage.query import connect

_CORE = case_run_schema()
REFERENCE: LakeTable = lake_table(
    "reference",
    1,
    pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("reported_at", pa.timestamp("us", tz="UTC"), nullable=False),
            *(pa.field(name, kind) for name, kind in {
                "text": pa.string(), "big": pa.string(), "number": pa.float64(), "count": pa.int64(),
                "flag": pa.bool_(), "at": pa.timestamp("us", tz="UTC"),
                "transcript": _CORE.field("transcript").type, "tool_calls": _CORE.field("tool_calls").type,
            }.items()),
        ]
    ),
    natural_key=["key"],
)
UNICODE = ["", "plain", "héllo wörld", "日本語のテキスト", "🧪🚀 emoji", "עברית RTL", "e\u0301 combining",
           "tab\tnew\nline", "quotes ' \" \\ and ,;", "\u2028line separator", "ß→SS", "a\u0000b"]
FLOATS = [0.0, -0.0, 1.5, -1e300, 1e-300, math.inf, -math.inf, math.nan, 123456789.123456]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _maybe(rng: random.Random, value: Any, nulls: float = 0.25) -> Any:
    return None if rng.random() < nulls else value


def _instant(rng: random.Random) -> datetime:
    return EPOCH + timedelta(microseconds=rng.randrange(0, 130 * 365 * 86400 * 10**6))


def _turns(rng: random.Random) -> list[dict[str, Any] | None] | None:
    if rng.random() < 0.2:
        return None
    return [
        _maybe(rng, {"role": _maybe(rng, rng.choice(["caller", "agent", "system"])), "text": _maybe(rng, rng.choice(UNICODE)),
                     "t": _maybe(rng, rng.choice(FLOATS))}, 0.1)
        for _ in range(rng.randrange(0, 4))
    ]


def _calls(rng: random.Random) -> list[dict[str, Any] | None] | None:
    if rng.random() < 0.2:
        return None
    return [
        {"name": rng.choice(UNICODE), "arguments": _maybe(rng, '{"q": "ü"}'), "result": _maybe(rng, "[1, 2]"),
         "is_error": _maybe(rng, rng.random() < 0.5), "t": _maybe(rng, rng.uniform(0, 100))}
        for _ in range(rng.randrange(0, 3))
    ]


def reference_rows(seed: int) -> pl.DataFrame:
    """A batch of 1-6 reference rows; seeds divisible by 3 carry a ~1 MB unicode string."""
    rng = random.Random(seed)
    rows = []
    for i in range(rng.randrange(1, 7)):
        big = None
        if seed % 3 == 0 and i == 0:
            big = "".join(rng.choice(UNICODE) for _ in range(50)) * 20_000
            big = big[: 1_000_000]
        rows.append(
            {
                "key": f"k{seed:03d}-{i}",
                "reported_at": _instant(rng),
                "text": _maybe(rng, rng.choice(UNICODE)),
                "big": big if big is not None else _maybe(rng, rng.choice(UNICODE) * rng.randrange(1, 50)),
                "number": _maybe(rng, rng.choice(FLOATS)),
                "count": _maybe(rng, rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randrange(-1000, 1000)])),
                "flag": _maybe(rng, rng.random() < 0.5),
                "at": _maybe(rng, _instant(rng)),
                "transcript": _turns(rng),
                "tool_calls": _calls(rng),
            }
        )
    schema = pl.from_arrow(REFERENCE.arrow_schema.empty_table()).schema  # type: ignore[union-attr]
    return pl.DataFrame(rows, schema=schema)


def test_the_generator_covers_what_it_claims() -> None:
    frames = [reference_rows(seed) for seed in range(12)]
    rows = pl.concat(frames)
    assert all(rows[c].null_count() > 0 for c in REFERENCE.arrow_schema.names if c not in ("key", "reported_at"))
    assert rows["big"].str.len_chars().max() == 1_000_000
    assert rows["number"].is_nan().any() and rows["number"].is_infinite().any()
    assert (rows["transcript"].list.len() == 0).any()
    assert rows["transcript"].explode().is_null().sum() > rows["transcript"].is_null().sum()


@pytest.mark.parametrize("seed", range(12))
def test_every_type_round_trips_through_parquet_polars_and_duckdb(tmp_path: Path, seed: int) -> None:
    engine = create_catalog_engine(f"sqlite:///{tmp_path / 'catalog.db'}")
    migrate(engine)
    lake = Lake(str(tmp_path / "lake"), engine, tables={"reference": REFERENCE})
    written = reference_rows(seed)
    lake.write("reference", written, team_id="team-a", date="2024-02-29", origin="migration", ref="test")
    expected = written.with_columns(team_id=pl.lit("team-a"), date=pl.lit("2024-02-29")).sort("key")

    from_polars = lake.scan("reference").collect().sort("key")
    assert_frame_equal(from_polars, expected)

    from_duckdb = connect(lake).sql("select * from reference order by key").pl()
    assert_frame_equal(from_duckdb, expected)
    assert from_duckdb.schema["at"] == pl.Datetime("us", "UTC")
