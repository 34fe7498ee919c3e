"""The full check (``Lake.verify``, and compaction before it rewrites files): a file whose bytes no longer
hash to the sha256 its manifest row records is named, and compaction refuses to copy it into a new file.

A file whose bytes changed with its size and footer intact is simulated by changing the recorded sha256:
the same mismatch, without depending on how a rewritten file compresses (tests/faults/test_lake_tamper.py
forges real files).
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from lake_kit import case_runs, list_file, manifest_paths, plant

from assay.core.errors import EvidenceError
from assay.storage.catalog import tables as catalog
from assay.storage.lake import Lake
from assay.storage.lake.compact import compact


def write(lake: Lake, n: int) -> list[str]:
    return [lake.write("case_runs", case_runs(3, prefix=f"p{i}", run_id=f"run-{i}"), team_id="team-a",
                       date="2024-05-06", origin="report", ref=f"run-{i}:q") for i in range(n)]


def record_other_checksum(lake: Lake, address: str) -> str:
    relative = address[len(lake.root) + 1:]
    with lake.engine.begin() as conn:
        conn.execute(catalog.lake_files.update().where(catalog.lake_files.c.path == relative).values(checksum="0" * 64))
    return relative


def test_a_clean_lake_verifies_and_every_written_file_has_its_checksum(lake: Lake) -> None:
    write(lake, 2)
    assert lake.verify() == []
    with lake.engine.connect() as conn:
        sums = conn.execute(sa.select(catalog.lake_files.c.checksum)).scalars().all()
    assert len(sums) == 2 and all(len(s) == 64 for s in sums)


def test_a_file_listed_before_checksums_verifies_on_size_footer_and_columns(lake: Lake) -> None:
    lake.check_layout(creating=True)
    listed = list_file(lake, plant(lake, "case_runs", case_runs(2)))  # no checksum recorded, no assay.file
    assert lake.verify() == [] and lake.read("case_runs").height == 2
    with open(lake.path(listed.path), "ab") as grown:
        grown.write(b"x")
    (found,) = lake.verify()
    assert found.path == listed.path and "bytes where the manifest records" in found.what


def test_verify_names_a_file_whose_bytes_no_longer_match_and_compaction_refuses_it(lake: Lake) -> None:
    files = write(lake, 3)
    changed = record_other_checksum(lake, files[1])
    assert lake.read("case_runs").height == 9  # size and footer still match: readers are not stopped
    (found,) = lake.verify(team="team-a")
    assert found.path == changed and "has changed since it was written: its sha256" in found.what
    assert lake.verify(team="team-b") == []
    before = manifest_paths(lake.engine)
    with pytest.raises(EvidenceError, match=rf"{changed} \(case_runs, team team-a, date 2024-05-06\) has changed"):
        compact(lake)
    assert manifest_paths(lake.engine) == before  # nothing swapped
    with lake.engine.connect() as conn:  # and nothing staged: no lease was taken
        assert conn.execute(sa.select(sa.func.count()).select_from(catalog.lake_staged)).scalar_one() == 0
