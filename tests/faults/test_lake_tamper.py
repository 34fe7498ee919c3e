"""A listed lake file tampered with: its team's readers are refused by name, another team's never notice.

One workspace (the demo: two teams, a run each, judged, re-scored with ``--materialise`` and projected) is
built per catalog database; each case tampers with one team's file of one lake table, checks, and puts the
file back. The kinds of tampering and the check that catches each:

- ``truncated`` (the tail cut off), ``deleted``: the size check, on every read;
- ``garbage`` (random bytes of the same size): the footer check, on every read;
- ``swapped`` (a valid file of the same table, rows and size, written for another path): the footer's
  ``assay.file``, on every read;
- ``rewritten`` (one value changed, written again, uncompressed, as a valid file with the same footer): the
  size check, on every read;
- forged (``met`` flipped in ``current_results`` or ``assertion_results``, written again with the same size
  and footer): only the sha256 of ``assay lake verify`` (readers see the forged value until it is restored).

Asserted each time: the tampered team's readers (``Lake.read``, a DuckDB query of that team) fail naming the
file, another team's ``report --team`` and query answer as before, and ``assay lake verify`` lists the file.
"""

from __future__ import annotations

import json

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.flows import operations as ops
from assay.flows import rescoring
from assay.flows.demo import DEMO, SUITES
from assay.flows.projection_flows import project_all
from assay.flows.report import resolve_scope, write_report
from assay.flows.workspace import open_workspace
from assay.storage.lake import FileFilter, manifest
from assay.storage.lake.integrity import FILE_KEY, LakeFileError
from assay.storage.lake.store import ROW_GROUP_ROWS
from assay.storage.query import QueryError, connect, run

BAD, OTHER = "northside-hvac", "acme-plumbing"
"""The team whose file is tampered with (it has a file of every table), and one that must not notice."""
TABLES = ("case_runs", "runner_evaluations", "outcomes", "assertion_results", "current_results", "run_key_counts",
          "verdicts", "run_verdicts", "case_verdicts", "behaviour_stats", "evaluator_pairs", "run_costs")
KINDS = ("truncated", "deleted", "garbage", "swapped", "rewritten")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """A demo workspace with every lake table written for both teams; its home and environment."""
    root = tmp_path_factory.mktemp("tamper")
    catalog = (f"sqlite:///{root / 'catalog.db'}" if request.param == "sqlite"
               else request.getfixturevalue("module_postgres_url"))
    env = {"ASSAY_HOME": str(root / "home"), "ASSAY_CATALOG_URL": catalog}
    (root / "home").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("ASSAY_") and k != "ASSAY_TEST_POSTGRES_URL"]:
            mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        ws = open_workspace(create=True)
        ops.load(ws, str(DEMO / "bundle.yaml"))
        for suite in SUITES:
            ops.run_to_final(ws, suite)
            rescoring.rescore(ws, suite, "nightly_sweep", materialise=True)
        project_all(ws)
        ws.close()
    yield root / "home", env


@pytest.fixture
def ws(home: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch):
    for key in [k for k in os.environ if k.startswith("ASSAY_") and k != "ASSAY_TEST_POSTGRES_URL"]:
        monkeypatch.delenv(key)
    for key, value in home[1].items():
        monkeypatch.setenv(key, value)
    workspace = open_workspace()
    yield workspace
    workspace.close()


def tamper(path: Path, kind: str) -> None:
    """Change the lake file at ``path`` as ``kind`` says (see the module's docstring)."""
    data = path.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "deleted":
        path.unlink()
    elif kind == "garbage":
        path.write_bytes(random.Random(7).randbytes(len(data)))
    else:
        table = pq.read_table(path)
        meta = dict(table.schema.metadata)
        if kind == "swapped":
            meta[FILE_KEY] = meta[FILE_KEY][: -len(b".parquet") - 32] + b"0" * 32 + b".parquet"
            pq.write_table(table.replace_schema_metadata(meta), path, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        else:
            pq.write_table(_changed(table, 0).replace_schema_metadata(meta), path, compression="none")
        assert kind == "swapped" or path.stat().st_size != len(data)


def forge(path: Path) -> None:
    """Flip ``met`` in one row and write the file again as its writer did, choosing a row for which the size
    (and the footer: same rows, same ``assay.file``) stays the same."""
    data, table = path.read_bytes(), pq.read_table(path)
    for row in range(table.num_rows):
        path.write_bytes(b"")
        pq.write_table(_changed(table, row, "met"), path, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        if path.stat().st_size == len(data):
            return
    raise AssertionError(f"no single flip of met keeps {path.name} at {len(data)} bytes")


def _changed(table: pa.Table, row: int, name: str | None = None) -> pa.Table:
    """``row``'s value of ``name`` (else of the first boolean or number column) negated, or plus one."""
    name = name or next(f.name for f in table.schema if pa.types.is_boolean(f.type) or pa.types.is_integer(f.type)
                        or pa.types.is_floating(f.type))
    column = table.column(name).combine_chunks()
    value = column[row].as_py()
    changed = (not value) if pa.types.is_boolean(column.type) else (value or 0) + 1
    values = pa.concat_arrays([column.slice(0, row), pa.array([changed], column.type), column.slice(row + 1)])
    return table.set_column(table.column_names.index(name), name, values)


def counts(ws, table: str, team: str) -> int:
    return run(connect(ws.lake, catalog=True), f"SELECT count(*) FROM {table} WHERE team_id = '{team}'").rows[0][0]


@pytest.mark.parametrize(("table", "kind"), [(t, k) for t in TABLES for k in KINDS]
                         + [("current_results", "forged"), ("assertion_results", "forged")])
def test_a_tampered_file_fails_its_partitions_readers_by_name_and_no_other_teams(ws, tmp_path, table, kind) -> None:
    with ws.engine.connect() as conn:
        (victim,) = manifest.listed(conn, table, FileFilter(teams=[BAD]))
    other_rows = counts(ws, table, OTHER)
    report = write_report(ws, str(tmp_path / "before.html"), resolve_scope(ws, team=OTHER))["counts"]
    path = Path(ws.lake.path(victim.path))
    saved, stat = path.read_bytes(), path.stat()
    try:
        if kind == "forged":
            forge(path)
            assert ws.lake.read(table, FileFilter(teams=[BAD])).height == victim.rows  # the cheap check passes
        else:
            tamper(path, kind)
            with pytest.raises(LakeFileError, match=rf"{victim.path} \({table}, team {BAD}, date {victim.date}\)"):
                ws.lake.read(table, FileFilter(teams=[BAD]))
            with pytest.raises(LakeFileError, match=rf"{victim.path} \({table}, team {BAD}") as refused:
                counts(ws, table, BAD)
            assert "SELECT" not in str(refused.value) and "read_parquet" not in str(refused.value)
        assert counts(ws, table, OTHER) == other_rows
        assert write_report(ws, str(tmp_path / "after.html"), resolve_scope(ws, team=OTHER))["counts"] == report
        (found,) = ws.lake.verify()
        assert (found.path, found.table, found.team_id) == (victim.path, table, BAD)
        assert ws.lake.verify(team=OTHER) == []
        if kind == "forged":
            assert "has changed since it was written: its sha256" in found.what
    finally:
        path.write_bytes(saved)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert ws.lake.verify() == []


def test_the_commands_name_the_file_and_answer_for_another_team(ws, home, tmp_path) -> None:
    from command_line import assay

    with ws.engine.connect() as conn:
        (victim,) = manifest.listed(conn, "current_results", FileFilter(teams=[BAD]))
    path = Path(ws.lake.path(victim.path))
    saved = path.read_bytes()
    env = {"ASSAY_CATALOG_URL": home[1]["ASSAY_CATALOG_URL"]}
    try:
        tamper(path, "garbage")
        verified = assay("lake", "verify", home=home[0], extra_env=env, check=1)
        assert victim.path in verified.stdout and f"team_id={BAD}" in verified.stdout
        assert "1 of " in verified.stdout and " file(s) bad" in verified.stdout
        doc = json.loads(assay("lake", "verify", "--json", home=home[0], extra_env=env, check=1).stdout)
        assert [(b["table"], b["team_id"]) for b in doc["bad"]] == [("current_results", BAD)] and doc["checked"] > 1
        assay("lake", "verify", "--team", OTHER, home=home[0], extra_env=env, check=0)
        assay("report", "--team", OTHER, "--html", str(tmp_path / "r.html"), home=home[0], extra_env=env, check=0)
        answered = assay("query", f"SELECT count(*) AS n FROM current_results WHERE team_id = '{OTHER}'",
                         "--format", "csv", home=home[0], extra_env=env, check=0)
        assert int(answered.stdout.splitlines()[1]) > 0
        refused = assay("query", "SELECT count(*) FROM current_results", home=home[0], extra_env=env, check=1)
        assert victim.path in refused.stderr and "read_parquet" not in refused.stderr
        assert "lake verify" in refused.stderr
    finally:
        path.write_bytes(saved)


def test_a_query_error_that_is_not_the_lakes_is_still_a_query_error(ws) -> None:
    with pytest.raises(QueryError, match="query failed"):
        run(connect(ws.lake, catalog=True), "SELECT no_such_column FROM current_results")
