"""Leases on staged lake files: a writer paused between staging and committing, against vacuum.

A staged file is protected by a lease (``lake_staged``) from before it is written until the commit names
it. With the lease live, vacuum keeps the file (and its ``_staging`` temporary file) however old it is, and
the commit succeeds; with the lease lapsed, vacuum may take the file and the commit is refused with nothing
recorded. A commit also refuses a staged file that changed before it (tests/faults/test_staging_leases.py
runs a report and a judging pass end to end).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from lake_kit import case_runs, manifest_paths, seen

from assay.core.errors import EvidenceError
from assay.storage.catalog import tables as t
from assay.storage.lake import Lake, store
from assay.storage.lake.upkeep import vacuum

GRACE = 60.0
PAUSED = timedelta(minutes=10)
"""Past the grace period, within the lease."""
LAPSED = timedelta(hours=2)
"""Past the lease (an hour by default) too."""


def leases(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return sorted(conn.execute(sa.select(t.lake_staged.c.path)).scalars())


def stage(lake: Lake):
    return lake.stage("case_runs", case_runs(3), team_id="team-a", date="2024-05-06")


def commit(lake: Lake, staged) -> None:
    with lake.engine.begin() as conn:
        lake.commit(conn, [staged], origin="report", ref="run-1:q1")


def test_a_live_lease_keeps_a_paused_writers_file_and_its_commit_names_it(lake: Lake) -> None:
    staged = stage(lake)
    assert leases(lake.engine) == [staged.path]
    assert vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + PAUSED) == {"retired": 0, "unnamed": 0}
    commit(lake, staged)
    assert seen(lake) == ["cr-0", "cr-1", "cr-2"]
    assert leases(lake.engine) == []  # the commit dropped it
    assert vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + LAPSED)["unnamed"] == 0  # named: kept for good


def test_a_lapsed_lease_lets_vacuum_delete_the_file_and_the_commit_is_refused(lake: Lake) -> None:
    staged = stage(lake)
    assert vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + LAPSED) == {"retired": 0, "unnamed": 1}
    assert not os.path.exists(lake.path(staged.path))
    with pytest.raises(EvidenceError, match=rf"{staged.path} .*is missing.*nothing was recorded: stage the rows again"):
        commit(lake, staged)
    assert manifest_paths(lake.engine) == [] and lake.read("case_runs").height == 0
    assert leases(lake.engine) == []


def test_a_lapsed_lease_refuses_the_commit_even_before_vacuum_deletes_the_file(lake: Lake) -> None:
    # vacuum dropped the lapsed lease but the file was too young to delete: a later vacuum would take it, so
    # naming it now could name a file that disappears
    staged = stage(lake)
    assert vacuum(lake, grace_seconds=3 * 3600, now=datetime.now(UTC) + LAPSED)["unnamed"] == 0
    assert os.path.exists(lake.path(staged.path))
    with pytest.raises(EvidenceError, match=rf"lease on staged lake file \S*{staged.path} lapsed"):
        commit(lake, staged)
    assert manifest_paths(lake.engine) == []


def test_a_renewed_lease_outlasts_the_first_one(lake: Lake) -> None:
    staged = stage(lake)
    lake.lease_seconds = 3 * 3600  # a long writer renews as it goes
    lake.renew_staged([staged])
    assert vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + LAPSED)["unnamed"] == 0
    commit(lake, staged)
    assert lake.read("case_runs").height == 3


def test_renewing_a_lapsed_lease_says_to_stage_again(lake: Lake) -> None:
    staged = stage(lake)
    vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + LAPSED)
    with pytest.raises(EvidenceError, match=rf"{staged.path} lapsed.*stage its rows again"):
        lake.renew_staged([staged])


def test_a_live_lease_covers_the_staging_file_while_it_is_written(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    seen_during: dict[str, object] = {}
    real = store._write_bytes

    def slow(path: str, body: pa.Buffer) -> None:  # the writer stalls half way through its file
        with open(path, "wb") as out:
            out.write(body.to_pybytes()[: body.size // 2])
        os.utime(path, (0, 0))  # and the half-written file looks old
        seen_during["vacuum"] = vacuum(lake, grace_seconds=GRACE, now=datetime.now(UTC) + PAUSED)
        seen_during["kept"] = os.path.exists(path)
        real(path, body)

    monkeypatch.setattr(store, "_write_bytes", slow)
    commit(lake, stage(lake))
    assert seen_during == {"vacuum": {"retired": 0, "unnamed": 0}, "kept": True}
    assert seen(lake) == ["cr-0", "cr-1", "cr-2"]


@pytest.mark.parametrize("change", ["truncated", "swapped"])
def test_a_staged_file_changed_before_its_commit_is_refused_by_name(lake: Lake, change: str) -> None:
    staged, other = stage(lake), stage(lake)  # the same rows: only the footer's own path differs
    path = Path(lake.path(staged.path))
    if change == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
        expected = "bytes where the manifest records"
    else:  # another valid lake file of the same size and rows in its place
        path.write_bytes(Path(lake.path(other.path)).read_bytes())
        expected = "is a copy of another lake file"
    with pytest.raises(EvidenceError, match=rf"{staged.path} .*{expected}.*stage the rows again"):
        commit(lake, staged)
    assert manifest_paths(lake.engine) == []
