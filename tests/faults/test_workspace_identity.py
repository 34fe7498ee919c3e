"""A workspace is identified, not inferred from a folder: the catalog names its workspace and lake (`assay init`),
and a mistyped ``ASSAY_HOME`` beside a shared catalog is refused before anything is written, on SQLite and
PostgreSQL alike.

The shared catalog is the ``catalog_url`` fixture's: a SQLite file outside both homes, or the test's own
PostgreSQL schema. The mistyped commands run as real processes, so Prefect is imported as a user's command
imports it (it makes its home inside ``ASSAY_HOME`` when it is).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from command_line import assay

from assay.flows.demo import DEMO
from assay.storage.catalog.engine import create_catalog_engine, migrate

SUITE = "acme-plumbing/main-line"


def _counts(catalog_url: str) -> dict[str, int]:
    """What the catalog holds of runs and evidence."""
    engine = create_catalog_engine(catalog_url)
    try:
        with engine.connect() as conn:
            return {table: conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()
                    for table in ("runs", "run_reports", "lake_files", "workspace")}
    finally:
        engine.dispose()


def _process_env(home: Path, catalog_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    return env | {"ASSAY_HOME": str(home), "ASSAY_CATALOG_URL": catalog_url, "NO_COLOR": "1", "COLUMNS": "400"}


def test_a_mistyped_home_beside_a_shared_catalog_writes_nothing(catalog_url: str, tmp_path: Path,
                                                                 assay_process) -> None:
    shared = {"ASSAY_CATALOG_URL": catalog_url}
    real, typo = tmp_path.resolve() / "real", tmp_path.resolve() / "typo"
    assay("init", home=real, extra_env=shared)
    assay("load", str(DEMO / "bundle.yaml"), home=real, extra_env=shared)
    assay("run", SUITE, home=real, extra_env=shared)
    before = _counts(catalog_url)
    assert before["runs"] == 1 and before["lake_files"] > 0 and before["workspace"] == 1
    env = _process_env(typo, catalog_url)

    # the home does not exist: refused at once, and nothing (Prefect included) creates it
    for args in (("runs", "list"), ("run", SUITE), ("reap",), ("verdicts", SUITE)):
        done = assay_process(*args, env=env, check=1)
        assert f"ASSAY_HOME {typo} does not exist" in done.stderr, done.stderr
        assert not typo.exists(), f"assay {' '.join(args)} created {sorted(typo.rglob('*'))}"

    # the folder exists (made by hand): the catalog says whose it is, and the lake given is not that one
    typo.mkdir()
    for args in (("run", SUITE), ("runs", "list"), ("init",)):
        done = assay_process(*args, env=env, check=1)
        message = done.stderr
        assert f"whose lake is {real / 'lake'}, not {typo / 'lake'}" in message, message
        assert "point ASSAY_HOME (or ASSAY_LAKE_URL) at the lake the catalog names" in message, message
        assert catalog_url.split("?")[0].rsplit("/", 1)[-1] in message, message  # the catalog, named
        assert not (typo / "lake").exists() and not (typo / "prefect").exists(), sorted(typo.rglob("*"))
    assert _counts(catalog_url) == before

    # the real workspace reads every run and its evidence, as before
    (run,) = json.loads(assay("runs", "list", "--json", home=real, extra_env=shared).stdout)["runs"]
    assay("rejudge", "--run", run["run_id"], home=real, extra_env=shared)
    assert "publish_gate" in assay("verdicts", run["run_id"], home=real, extra_env=shared).stdout


def test_init_records_the_workspace_once_and_refuses_another_lake(catalog_url: str, tmp_path: Path) -> None:
    shared = {"ASSAY_CATALOG_URL": catalog_url}
    home = tmp_path.resolve() / "home"
    assay("init", home=home, extra_env=shared)
    first = _identity(catalog_url)
    assay("init", home=home, extra_env=shared)  # the same settings: nothing changes
    assert _identity(catalog_url) == first

    other = tmp_path.resolve() / "elsewhere" / "lake"
    done = assay("init", home=home, extra_env=shared | {"ASSAY_LAKE_URL": str(other)}, check=1)
    assert f"belongs to workspace {first[0]}, whose lake is {home / 'lake'}, not {other}" in done.stderr, done.stderr
    assert not other.exists() and _identity(catalog_url) == first
    done = assay("runs", "list", home=home, extra_env=shared | {"ASSAY_LAKE_URL": f"file://{other}"}, check=1)
    assert f"not {other}" in done.stderr, done.stderr
    assay("runs", "list", home=home, extra_env=shared | {"ASSAY_LAKE_URL": f"file://{home / 'lake'}/"})  # one lake


def _identity(catalog_url: str) -> tuple[str, str]:
    engine = create_catalog_engine(catalog_url)
    try:
        with engine.connect() as conn:
            return tuple(conn.execute(sa.text("SELECT workspace_id, lake_url FROM workspace")).one())
    finally:
        engine.dispose()


def test_a_workspace_folder_moves_whole(tmp_path: Path) -> None:
    """The embedded default (catalog and lake both in ASSAY_HOME) records its lake relative to the catalog's
    folder: a copied or moved workspace opens where it lands, and its copy's lake is its own."""
    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    assert _identity(f"sqlite:///{home / 'catalog.db'}")[1] == "lake"
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    shutil.rmtree(home)
    assay("run", SUITE, home=moved)
    assert (moved / "lake").is_dir() and not home.exists()


@pytest.mark.parametrize("args", [("--help",), ("runs", "--help"), ("runs",), ("run", "--help"), ("version",)])
def test_help_and_the_version_need_no_workspace(tmp_path: Path, args: tuple[str, ...]) -> None:
    missing = tmp_path / "missing"
    done = assay(*args, extra_env={"ASSAY_HOME": str(missing)}, check=None)
    assert done.returncode in (0, 2) and "does not exist" not in done.stderr, done  # `assay runs`: help, exit 2
    assert done.stdout.strip() and not missing.exists()


def test_an_older_catalog_gets_its_identity_at_init(catalog_url: str, tmp_path: Path) -> None:
    engine = create_catalog_engine(catalog_url)
    try:
        migrate(engine, "0010")  # the catalog of an Assay from before workspaces were identified
    finally:
        engine.dispose()
    shared = {"ASSAY_CATALOG_URL": catalog_url}
    home = tmp_path / "home"
    home.mkdir()
    assert "run `assay init`" in assay("runs", "list", home=home, extra_env=shared, check=1).stderr
    assay("init", home=home, extra_env=shared)
    assert _identity(catalog_url)[1] in ("home/lake", str(home / "lake"))
    assay("runs", "list", home=home, extra_env=shared)
