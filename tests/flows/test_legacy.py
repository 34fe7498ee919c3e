"""`assay legacy import`: four legacy lineages imported once, one-way, as history, through the real CLI.

The exports are the fixtures under ``tests/fixtures/legacy/`` (the chat lane reads the Hamming voice
export: it lives in the same tables, its rows told apart by a ``chat-`` prefix on their ids); the
Parquet variant is written here from the CSV with pyarrow. What was written is read back through
``assay.connect()`` (the lake and the catalog) and the catalog itself.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import jsonschema
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

import assay as assay_pkg
from assay.core.document_models import validate
from assay.core.settings import Settings
from assay.storage.catalog import tables as t

from readme_blocks import assert_walked
from command_line import assay

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "legacy"
BUNDLE = ROOT / "flows" / "demo" / "bundle.yaml"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "assay.legacy.json").read_text())
EXPORT = {"prompt_test": "prompt_test", "simulation_v2": "simulation_v2", "hamming_voice": "hamming_voice",
          "chat_lane": "hamming_voice"}

# lineage -> case-key prefix, suites, runs, {legacy result id: (met, value, executed)}
EXPECTED = {
    "prompt_test": ("legacy-pt-", 2, 3, {
        "ptres-1": (True, 0.92, True), "ptres-2": (False, 0.41, True), "ptres-3": (True, None, True),
        "ptres-4": (True, 0.88, True), "ptres-5": (True, 0.75, True), "ptres-6": (None, None, False)}),
    "simulation_v2": ("legacy-sim-", 2, 2, {
        "sim-x-1": (True, 0.9, True), "sim-x-2": (False, 0.3, True), "sim-x-3": (None, None, False)}),
    "hamming_voice": ("legacy-hv-", 1, 1, {
        "hv-cr-1": (True, 0.92, True), "hv-cr-2": (False, 0.4, True), "hv-cr-3": (None, None, False)}),
    "chat_lane": ("legacy-hc-", 1, 1, {"chat-cr-1": (True, 1.0, True), "chat-cr-2": (False, 0.55, True)}),
}
CASES = {"prompt_test": 3, "simulation_v2": 3, "hamming_voice": 2, "chat_lane": 2}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the demo bundle loaded (its teams own the history); copied by each test."""
    home = tmp_path_factory.mktemp("legacy") / "home"
    assay("init", home=home)
    assay("load", str(BUNDLE), home=home)
    return home


@pytest.fixture
def home(loaded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(loaded, copy)
    return copy


def imported(lineage: str, export: Path, home: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    doc = json.loads(assay("legacy", "import", lineage, str(export), *extra, "--json", home=home, extra_env=env).stdout)
    validate(doc)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return doc


def catalog_counts(home: Path, url: str | None = None) -> dict[str, int]:
    """Rows per catalog table, the lake manifest (``lake_files``) included."""
    engine = sa.create_engine(url or f"sqlite:///{home / 'catalog.db'}")
    try:
        with engine.connect() as conn:
            return {name: conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
                    for name, table in t.metadata.tables.items()}
    finally:
        engine.dispose()


def lake_rows(home: Path, lineage: str, url: str | None = None) -> dict[str, list[tuple]]:
    """What the lake and the catalog hold of ``lineage``'s runs, through ``assay.connect()``."""
    con = assay_pkg.connect(Settings(home=home, catalog_url=url))
    runner = f"legacy:{lineage}"
    q = {
        "runs": f"SELECT run_id, status, request_id FROM runs WHERE runner = '{runner}'",
        "case_runs": f"SELECT source_ref, status, case_key, len(transcript) FROM case_runs WHERE runner = '{runner}'",
        "results": "SELECT c.source_ref, r.met, r.value, r.evaluator, r.assertion_key, r.mechanism, r.reason "
                   "FROM assertion_results r JOIN case_runs c USING (case_run_id) "
                   f"WHERE c.runner = '{runner}'",
        "outcomes": f"SELECT o.trigger FROM outcomes o JOIN runs r USING (run_id) WHERE r.runner = '{runner}'",
        "criteria": f"SELECT * FROM run_criteria JOIN runs USING (run_id) WHERE runner = '{runner}'",
    }
    try:
        return {name: sorted(con.sql(sql).fetchall(), key=repr) for name, sql in q.items()}
    finally:
        con.close()


@pytest.mark.parametrize("lineage", list(EXPECTED))
def test_each_lineage_imports_as_history_with_one_opaque_result_per_legacy_result(lineage: str, home: Path) -> None:
    prefix, suites, runs, results = EXPECTED[lineage]
    doc = imported(lineage, FIXTURES / EXPORT[lineage], home)
    assert doc["imported"] == {"cases": CASES[lineage], "suites": suites, "runs": runs, "case_runs": len(results),
                               "results": len(results)}
    got = lake_rows(home, lineage)
    assert len(got["runs"]) == runs and {r[2] for r in got["runs"]} == {
        f"legacy:{lineage}:{i}" for i in _legacy_ids(lineage, "runs")}
    assert sorted(r[0] for r in got["case_runs"]) == sorted(results)
    assert all(r[2].startswith(prefix) for r in got["case_runs"])
    assert {r[0]: r[1] == "executed" for r in got["case_runs"]} == {k: v[2] for k, v in results.items()}
    # exactly one result per legacy result: the opaque verdict, never one per check the blob lists
    assert sorted(r[0] for r in got["results"]) == sorted(results)
    for source, met, value, evaluator, key, mechanism, reason in got["results"]:
        assert (met, value if value is None else round(value, 6)) == results[source][:2], source
        assert (evaluator, key, mechanism) == (f"legacy:{lineage}", "legacy_verdict", "legacy.verdict")
        assert isinstance(json.loads(reason), dict)
    assert [o[0] for o in got["outcomes"]] == ["import"] * len(results)
    assert got["criteria"] == []  # legacy runs were never read under our criteria


def _legacy_ids(lineage: str, role: str) -> list[str]:
    file = {"prompt_test": "prompt_test_", "simulation_v2": "simulation_v2_"}.get(lineage)
    name = f"{file}{role}.csv" if file else {"runs": "hamming_test_runs.csv", "cases": "hamming_test_cases.csv"}[role]
    ids = [line.split(",")[0] for line in (FIXTURES / EXPORT[lineage] / name).read_text().splitlines()[1:]]
    if lineage in ("hamming_voice", "chat_lane"):
        ids = [i for i in ids if i.startswith("chat-") == (lineage == "chat_lane")]
    return ids


def test_importing_again_writes_nothing_and_a_grown_export_only_what_is_new(home: Path, tmp_path: Path) -> None:
    export = tmp_path / "export"
    shutil.copytree(FIXTURES / "prompt_test", export)
    imported("prompt_test", export, home)
    before = catalog_counts(home)
    files = sorted(p for p in (home / "lake").rglob("*.parquet"))

    again = assay("legacy", "import", "prompt_test", str(export), home=home, columns=80).stdout
    assert "already imported: 3 cases, 3 runs" in again
    assert catalog_counts(home) == before and sorted((home / "lake").rglob("*.parquet")) == files

    # the export grew (one case, one run with two results), and arrives as Parquet this time
    _append(export / "prompt_test_cases.csv", "ptc-104,acme-plumbing,call-7f3b11,Gas smell,Caller smells gas,"
                                              "Tell them to leave and call the gas line,2026-09-01T08:00:00Z")
    _append(export / "prompt_test_runs.csv", "ptr-9004,acme-plumbing,cfg-acme-v43,completed,blueprint-publish,"
                                             "2026-09-02T10:00:00Z,2026-09-02T10:02:00Z")
    _append(export / "prompt_test_results.csv",
            'ptres-7,ptr-9004,ptc-104,completed,"{""passed"": false, ""score"": 0.2}",,2026-09-02T10:01:00Z',
            'ptres-8,ptr-9004,ptc-101,completed,"{""passed"": true, ""score"": 1}",,2026-09-02T10:01:30Z')
    for csv in export.glob("*.csv"):
        pq.write_table(pacsv.read_csv(csv), csv.with_suffix(".parquet"))
        csv.unlink()
    grown = imported("prompt_test", export, home)
    assert grown["imported"] == {"cases": 1, "suites": 1, "runs": 1, "case_runs": 2, "results": 2}
    assert grown["already_imported"] == {"cases": 3, "runs": 3}
    after = catalog_counts(home)
    assert {k: after[k] - before[k] for k in ("cases", "suites", "runs", "run_cases", "assertions")} == {
        "cases": 1, "suites": 1, "runs": 1, "run_cases": 2, "assertions": 1}
    results = {r[0]: r[1:3] for r in lake_rows(home, "prompt_test")["results"]}
    assert len(results) == 8 and results["ptres-7"] == (False, 0.2) and results["ptres-8"] == (True, 1.0)


def _append(file: Path, *lines: str) -> None:
    file.write_text(file.read_text() + "".join(f"{line}\n" for line in lines))


def test_the_voice_and_chat_lanes_split_the_shared_hamming_tables(home: Path) -> None:
    voice = imported("hamming_voice", FIXTURES / "hamming_voice", home)
    chat = imported("chat_lane", FIXTURES / "hamming_voice", home)
    assert (voice["skipped_rows"], chat["skipped_rows"]) == (5, 6)  # each lane leaves the other's rows
    every = [line.split(",")[0] for line in (FIXTURES / "hamming_voice" / "hamming_call_results.csv")
             .read_text().splitlines()[1:]]
    sources = {lane: sorted(r[0] for r in lake_rows(home, lane)["case_runs"]) for lane in ("hamming_voice", "chat_lane")}
    assert sources["chat_lane"] == sorted(i for i in every if i.startswith("chat-"))
    assert sources["hamming_voice"] == sorted(i for i in every if not i.startswith("chat-"))
    listed = assay("ls", "suites", "--team", "northside-hvac", "--json", home=home).stdout
    keys = {s["key"] for s in json.loads(listed)["suites"]}
    assert {"legacy-hv-agent-nh-voice", "legacy-hc-agent-nh-voice"} <= keys


def test_bad_exports_fail_clearly_and_write_nothing(home: Path, tmp_path: Path) -> None:
    before = catalog_counts(home)
    missing = tmp_path / "missing"
    shutil.copytree(FIXTURES / "prompt_test", missing)
    results = missing / "prompt_test_results.csv"
    results.write_text(results.read_text().replace("status,verdict,error", "status,outcome,error", 1))
    proc = assay("legacy", "import", "prompt_test", str(missing), home=home, check=1)
    assert "prompt_test_results.csv: missing required column(s) verdict" in proc.stderr
    assert "unknown column(s) outcome" in proc.stderr and "nothing imported" in proc.stderr

    bad = tmp_path / "bad"
    shutil.copytree(FIXTURES / "prompt_test", bad)
    for name, old, new in (
        ("prompt_test_cases.csv", "ptc-102,acme-plumbing,call-7f3a02,", "ptc-102,acme-plumbing,,"),
        ("prompt_test_runs.csv", "ptr-9002,acme-plumbing,cfg-acme-v42,", "ptr-9002,acme-plumbing,,"),
        ("prompt_test_results.csv", '""passed"": true, ""score"": 0.75,', '""passed"": true ""score"": 0.75,'),
        ("prompt_test_results.csv", '{""passed"": true, ""score"": 0.88,', '{""passed"": ""yes"", ""score"": 0.88,'),
    ):
        file = bad / name
        assert old in file.read_text()
        file.write_text(file.read_text().replace(old, new, 1))
    err = assay("legacy", "import", "prompt_test", str(bad), home=home, check=1).stderr
    assert "prompt_test_cases.csv: row 2, column 'call_id': empty, and it is required (every prompt_test case " \
           "comes from a real call)" in err
    assert "prompt_test_runs.csv: row 2, column 'assistant_config_id': empty, and it is required (every " \
           "prompt_test run targets a config)" in err
    assert "prompt_test_results.csv: row 5, column 'verdict': unreadable JSON" in err
    assert "Traceback" not in err
    # a readable blob that does not read as a verdict is named too, once the files parse
    bad_json = bad / "prompt_test_results.csv"
    bad_json.write_text(bad_json.read_text().replace('""passed"": true ""score""', '""passed"": true, ""score""'))
    for name in ("prompt_test_cases.csv", "prompt_test_runs.csv"):
        shutil.copy(FIXTURES / "prompt_test" / name, bad / name)
    err = assay("legacy", "import", "prompt_test", str(bad), home=home, check=1).stderr
    assert "prompt_test_results.csv: row 4, column 'verdict': unreadable verdict blob: 'passed' must be true, " \
           "false or null, not 'yes'" in err
    assert catalog_counts(home) == before
    assert not list((home / "lake").rglob("*.parquet"))


@pytest.mark.parametrize("step", ["legacy.staged", "legacy.recorded"])
def test_an_import_killed_before_it_commits_leaves_nothing_and_imports_whole_later(failpoint_kill, home: Path,
                                                                                   step: str) -> None:
    before = catalog_counts(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")} | {"ASSAY_HOME": str(home)}
    failpoint_kill(step, [sys.executable, "-m", "assay.flows.cli", "legacy", "import", "simulation_v2",
                          str(FIXTURES / "simulation_v2")], env=env)
    after = catalog_counts(home)
    assert after.pop("lake_staged") > before.pop("lake_staged")  # the dead writer's leases: vacuum drops them lapsed
    assert after == before  # no row, and no lake file named
    doc = imported("simulation_v2", FIXTURES / "simulation_v2", home)
    assert doc["imported"]["runs"] == 2 and doc["already_imported"] == {"cases": 0, "runs": 0}
    assert len(lake_rows(home, "simulation_v2")["results"]) == 3


def test_imported_history_reads_like_any_run_and_is_never_judged(home: Path) -> None:
    doc = imported("prompt_test", FIXTURES / "prompt_test", home)
    run = doc["runs"][0]
    shown = assay("runs", "show", run, home=home, columns=80).stdout
    assert "via legacy:prompt_test" in shown and "imported history: prompt_test run ptr-9001" in shown
    assert "(import)" in shown
    assert "no stamped criteria" in assay("verdicts", run, "--cases", home=home).stdout
    assert "legacy-pt-cfg-acme-v41" in assay("ls", "--team", "acme-plumbing", home=home, columns=80).stdout
    case_run = json.loads(assay("query", f"SELECT case_run_id FROM case_runs WHERE run_id = '{run}' AND source_ref = "
                                          "'ptres-2'", "--format", "json", home=home).stdout)[0]["case_run_id"]
    drill = assay("show", case_run, home=home).stdout
    assert "legacy_verdict" in drill and "legacy:prompt_test" in drill and "no price given" in drill

    before = catalog_counts(home)
    refused = assay("judge", run, home=home, check=1).stderr
    assert refused.startswith(f"error: imported history: nothing to judge in {run}")
    assert "imported history: nothing to judge" in assay("rejudge", "--suite", "acme-plumbing/legacy-pt-cfg-acme-v41",
                                                         home=home, check=1).stderr
    assert "imported legacy history" in assay("run", "acme-plumbing/legacy-pt-cfg-acme-v41", home=home, check=1).stderr
    assert catalog_counts(home) == before

    # a re-judge of a whole team judges its own runs and leaves the imported ones as they are
    ours = json.loads(assay("run", "acme-plumbing/main-line", "--json", home=home).stdout)["run"]["run_id"]
    legacy_before = lake_rows(home, "prompt_test")
    rejudged = json.loads(assay("rejudge", "--team", "acme-plumbing", "--force", "--json", home=home).stdout)
    assert rejudged["runs"] == 1 and ours
    assert lake_rows(home, "prompt_test") == legacy_before


@pytest.mark.postgres
def test_an_import_on_postgresql(tmp_path: Path, module_postgres_url: str) -> None:
    home = tmp_path / "home"
    env = {"ASSAY_CATALOG_URL": module_postgres_url}
    assay("init", home=home, extra_env=env)
    assay("load", str(BUNDLE), home=home, extra_env=env)
    doc = imported("hamming_voice", FIXTURES / "hamming_voice", home, env=env)
    assert doc["imported"] == {"cases": 2, "suites": 1, "runs": 1, "case_runs": 3, "results": 3}
    got = lake_rows(home, "hamming_voice", module_postgres_url)
    assert {r[0]: (r[1], r[2]) for r in got["results"]} == {
        "hv-cr-1": (True, 0.92), "hv-cr-2": (False, 0.4), "hv-cr-3": (None, None)}
    before = catalog_counts(home, module_postgres_url)
    again = imported("hamming_voice", FIXTURES / "hamming_voice", home, env=env)
    assert again["imported"]["runs"] == 0 and again["already_imported"] == {"cases": 2, "runs": 1}
    assert catalog_counts(home, module_postgres_url) == before


def test_the_readme_legacy_history_block_runs_as_written(readme_walk, tmp_path: Path) -> None:
    heading = "## Legacy history"
    assert_walked(heading, readme_walk(heading, tmp_path / "home"))
