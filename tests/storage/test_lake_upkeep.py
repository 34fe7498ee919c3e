"""Keeping the lake tidy: vacuum deletes only what no reader will open again; migrate lists an earlier lake once.

Each test runs on a SQLite catalog, and on PostgreSQL too when ``ASSAY_TEST_POSTGRES_URL`` is set.
"""

from __future__ import annotations

import os
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import sqlalchemy as sa
from lake_kit import GOLDEN, T0, case_runs, evaluations, everything, manifest_paths, plant, seen

from assay.core.errors import SchemaVersionError
from assay.storage.catalog import tables as catalog
from assay.storage.lake import FileFilter, Lake, LakeLayoutError, manifest
from assay.storage.lake.store import MARKER, STAGING
from assay.storage.lake.upkeep import migrate, vacuum
from assay.storage.query import connect

HOUR = 3600


def _age(lake: Lake, relative: str, seconds: float) -> None:
    """Make a local file look written ``seconds`` ago."""
    then = datetime.now(UTC).timestamp() - seconds
    os.utime(lake.path(relative), (then, then))


def _relative(lake: Lake, address: str) -> str:
    return address.removeprefix(lake.root + "/")


def _retire(lake: Lake, relative: str, ago: float) -> None:
    with lake.engine.begin() as conn:
        assert manifest.retire(conn, [relative], by="compaction-1", now=datetime.now(UTC) - timedelta(seconds=ago)) == 1


def _linked_runs(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(catalog.lake_file_runs)).scalar_one()


# -- vacuum ---------------------------------------------------------------------------------------
def test_vacuum_deletes_unnamed_and_long_retired_files_after_the_grace_period_and_nothing_else(lake: Lake) -> None:
    live, old_retired, new_retired = (
        _relative(lake, lake.write("case_runs", case_runs(1, prefix=run, run_id=run), team_id="team-a",
                                   date="2024-05-06", origin="report", ref=f"{run}:q1"))
        for run in ("run-1", "run-2", "run-3")
    )
    _retire(lake, old_retired, ago=2 * HOUR)
    _retire(lake, new_retired, ago=60)
    old_unnamed, new_unnamed = plant(lake, "case_runs", case_runs(1, prefix="crashed")), plant(lake, "case_runs", case_runs(1))
    old_staged, new_staged = (f"{STAGING}/{uuid.uuid4().hex}.tmp" for _ in range(2))
    for leftover in (old_staged, new_staged):
        Path(lake.path(leftover)).write_bytes(b"PAR1 half a file")
    for relative in (live, old_retired, new_retired, old_unnamed, old_staged):
        _age(lake, relative, 3 * HOUR)
    untouched = Path(lake.path(live)).read_bytes(), os.stat(lake.path(live)).st_mtime_ns
    assert seen(lake) == ["run-1-0"]
    assert _linked_runs(lake.engine) == 3

    assert vacuum(lake, grace_seconds=HOUR) == {"retired": 1, "unnamed": 2}
    assert everything(Path(lake.root)) == sorted([
        MARKER, STAGING, new_staged, "case_runs", "case_runs/team_id=team-a", "case_runs/team_id=team-a/date=2024-05-06",
        live, new_retired, new_unnamed,
    ])
    assert manifest_paths(lake.engine) == sorted([live, new_retired]) and _linked_runs(lake.engine) == 2
    assert manifest_paths(lake.engine, live=True) == [live]

    later = datetime.now(UTC) + timedelta(hours=2)
    assert vacuum(lake, grace_seconds=HOUR, now=later) == {"retired": 1, "unnamed": 2}
    assert [p for p in everything(Path(lake.root)) if not p.startswith(live)] == [
        MARKER, STAGING, "case_runs", "case_runs/team_id=team-a", "case_runs/team_id=team-a/date=2024-05-06"]
    assert manifest_paths(lake.engine) == [live] and _linked_runs(lake.engine) == 1
    assert (Path(lake.path(live)).read_bytes(), os.stat(lake.path(live)).st_mtime_ns) == untouched
    assert seen(lake) == ["run-1-0"]
    assert vacuum(lake, grace_seconds=0, now=later) == {"retired": 0, "unnamed": 0}


def test_vacuum_tells_the_age_of_files_on_an_in_memory_filesystem(memory_lake: Lake) -> None:
    live = memory_lake.write("case_runs", case_runs(2), team_id="team-a", date="2024-05-06", origin="report", ref="r:q")
    unnamed = plant(memory_lake, "case_runs", case_runs(1, prefix="crashed"))
    assert vacuum(memory_lake, grace_seconds=HOUR) == {"retired": 0, "unnamed": 0}
    assert vacuum(memory_lake, grace_seconds=HOUR, now=datetime.now(UTC) + timedelta(hours=2)) == {"retired": 0, "unnamed": 1}
    assert not memory_lake.fs.exists(memory_lake.path(unnamed)) and memory_lake.fs.exists(live)
    assert sorted(memory_lake.scan("case_runs").collect()["case_run_id"]) == ["cr-0", "cr-1"]


# -- migrate --------------------------------------------------------------------------------------
def _rows(ids: list[str], runner: str, at: datetime) -> pl.DataFrame:
    """Case runs ``ids`` of run-1 as ``runner`` reported them at ``at``."""
    return case_runs(len(ids)).with_columns(
        case_run_id=pl.Series(ids), runner=pl.lit(runner), reported_at=pl.lit(at).dt.cast_time_unit("us")
    )


@pytest.fixture
def earlier(lake: Lake) -> dict[str, str]:
    """A lake as an earlier Assay wrote it: files in the layout, no manifest, retried writes duplicated.

    ``retry`` repeats cr-2 five seconds later (after midnight, so in the next date's partition) next
    to the new cr-3; ``tie-b`` repeats cr-9 at the same moment as ``tie-a`` next to the new cr-8: the
    earliest report wins, and on a tie the smaller path.
    """
    golden = "assertion_results/team_id=team-a/date=2024-05-06/part-" + "c" * 32 + ".parquet"
    files = {
        "first": plant(lake, "case_runs", _rows(["cr-0", "cr-1", "cr-2"], "fixed", T0)),
        "retry": plant(lake, "case_runs", _rows(["cr-2", "cr-3"], "retry", T0 + timedelta(seconds=5)), date="2024-05-07"),
        "tie-a": plant(lake, "case_runs", _rows(["cr-9"], "first", T0), team="team-b", name="a" * 32),
        "tie-b": plant(lake, "case_runs", _rows(["cr-8", "cr-9"], "second", T0), team="team-b", name="b" * 32),
        "evaluations": plant(lake, "runner_evaluations", evaluations(2)),
        "golden": golden,
    }
    Path(lake.path(golden)).parent.mkdir(parents=True)
    shutil.copy(GOLDEN / "assertion_results.v1.parquet", lake.path(golden))
    return files


def test_an_earlier_lake_is_refused_by_every_reader_until_migrated(lake: Lake, earlier: dict[str, str]) -> None:
    for attempt in (
        lambda: lake.files("case_runs"), lambda: lake.scan("case_runs"), lambda: lake.read("case_runs", run_id="run-1"),
        lambda: connect(lake), lambda: Lake(lake.url, lake.engine).scan("outcomes"),
        lambda: lake.write("case_runs", case_runs(1), team_id="team-a", date="2024-05-08", origin="report", ref="r:q"),
    ):
        with pytest.raises(LakeLayoutError, match=r"holds tables \(.*case_runs.*\).*Run `assay lake migrate` once"):
            attempt()
    assert manifest_paths(lake.engine) == [] and not Path(lake.path(MARKER)).exists()


def test_migrate_lists_every_file_and_drops_each_duplicate_once(lake: Lake, earlier: dict[str, str]) -> None:
    on_disk = everything(Path(lake.root))
    assert migrate(lake) == {
        "case_runs": {"files": 4, "rewritten": 2, "duplicates_dropped": 2},
        "runner_evaluations": {"files": 1, "rewritten": 0, "duplicates_dropped": 0},
        "assertion_results": {"files": 1, "rewritten": 0, "duplicates_dropped": 0},
    }
    listed = manifest_paths(lake.engine, live=True)
    kept = [earlier[k] for k in ("first", "tie-a", "evaluations", "golden")]
    rewritten = sorted(set(listed) - set(kept))
    assert set(kept) < set(listed) and len(rewritten) == 2 and not {earlier["retry"], earlier["tie-b"]} & set(listed)
    assert sorted(p.rsplit("/", 1)[0] for p in rewritten) == sorted(earlier[k].rsplit("/", 1)[0] for k in ("retry", "tie-b"))

    fresh = Lake(lake.url, lake.engine)  # a reader that never saw the lake before
    ids = ["cr-0", "cr-1", "cr-2", "cr-3", "cr-8", "cr-9"]
    assert seen(fresh) == ids
    runner = dict(fresh.read("case_runs").select("case_run_id", "runner").iter_rows())
    assert runner == {"cr-0": "fixed", "cr-1": "fixed", "cr-2": "fixed", "cr-3": "retry", "cr-8": "second", "cr-9": "first"}
    assert fresh.read("case_runs", date="2024-05-07")["case_run_id"].to_list() == ["cr-3"]
    assert len(fresh.files("case_runs", FileFilter(runs=["run-1"]))) == 4
    assert seen(fresh, "runner_evaluations") == ["ev-0", "ev-1"]
    assert fresh.read("assertion_results")["evaluator_version"].to_list() == [1, 1]  # a v1 file, listed as v1

    assert migrate(Lake(lake.url, lake.engine)) == {}  # a second migrate changes nothing
    assert manifest_paths(lake.engine) == listed
    assert [p for p in everything(Path(lake.root)) if p not in rewritten] == sorted({*on_disk, MARKER, STAGING})

    assert vacuum(lake, grace_seconds=HOUR, now=datetime.now(UTC) + timedelta(hours=2)) == {"retired": 0, "unnamed": 2}
    assert not Path(lake.path(earlier["retry"])).exists() and not Path(lake.path(earlier["tie-b"])).exists()
    assert seen(Lake(lake.url, lake.engine)) == ids


@pytest.mark.parametrize("version", [b"99", None])
def test_migrate_refuses_a_file_of_an_unknown_version_and_lists_nothing(
    lake: Lake, earlier: dict[str, str], version: bytes | None
) -> None:
    odd = plant(lake, "case_runs", case_runs(1, prefix="odd"), team="team-c", version=version)
    with pytest.raises(SchemaVersionError) as info:
        migrate(lake)
    assert info.value.where == lake.address(odd) and info.value.found == (version.decode() if version else None)
    assert manifest_paths(lake.engine) == [] and not Path(lake.path(MARKER)).exists()
    with pytest.raises(LakeLayoutError):
        Lake(lake.url, lake.engine).scan("case_runs")
