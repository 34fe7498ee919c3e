"""The hostile-input campaign: every generated bad bundle and call set is refused clearly, and nothing is written.

Each input of :data:`hostile.CORPUS` goes through the real load path (``load_bundle``, the function
behind ``assay load``) on SQLite and PostgreSQL alike; a few go through the command line for the exit
code. "Clear" means a :class:`BundleError` naming the bundle's file and the reason; "nothing written"
means every catalog row is as it was and no file appeared in the workspace.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from hostile import CAPS, CORPUS, attempt, campaign, catalog_state, files_under, seed

from assay.storage.catalog.engine import create_catalog_engine

BY_NAME = {h.name: h for h in CORPUS}


def test_the_corpus_is_large_and_named_uniquely() -> None:
    assert len(CORPUS) >= 80
    assert len(BY_NAME) == len(CORPUS)


def test_every_hostile_input_is_refused_clearly_and_writes_nothing(
    engine: sa.Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole corpus on one catalog per database (one migration, not a hundred); every failure is listed."""
    for key, value in CAPS.items():
        monkeypatch.setenv(key, value)
    seed(tmp_path, engine)
    outcomes = [attempt(h, tmp_path / "corpus", engine) for h in CORPUS]
    assert [(o.name, o.message) for o in outcomes if not o.clear] == []
    assert [o.name for o in outcomes if o.written] == []


def test_the_campaign_reports_its_figures() -> None:
    figures = campaign()
    assert figures["tried"] == len(CORPUS) >= 80
    assert figures["clear_errors"] == figures["tried"], figures["unclear"]
    assert figures["written_anyway"] == 0


CLI_CASES = ["yaml-alias-bomb-in-world", "symlink-to-dev-zero", "json-20000-brackets", "config-etc-passwd",
             "call-set-cost-nan", "nul-in-title-json"]  # fmt: skip


def _assay(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(CAPS, ASSAY_HOME=str(home), COLUMNS="1000")  # wide enough that no path is wrapped
    script = Path(sys.executable).parent / "assay"
    return subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=300, check=False)


def test_assay_load_exits_non_zero_naming_the_file_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _assay(home, "init").returncode == 0
    seed_folder = tmp_path / "seed"
    from factories import base, write

    seed_folder.mkdir()
    first = _assay(home, "load", str(write(seed_folder, base())))
    assert first.returncode == 0, first.stderr
    engine = create_catalog_engine(f"sqlite:///{home / 'catalog.db'}")
    try:
        for name in CLI_CASES:
            folder = tmp_path / name / "bundle"
            folder.mkdir(parents=True)
            path = BY_NAME[name].build(folder)
            rows, files = catalog_state(engine), files_under(home)
            engine.dispose()  # no connection held open while the command writes (or does not)
            done = _assay(home, "load", str(path))
            output = done.stdout + done.stderr
            assert done.returncode != 0, (name, output)
            assert str(path) in output and BY_NAME[name].expect in output, (name, output)
            assert "Traceback" not in output, (name, output)
            assert catalog_state(engine) == rows and files_under(home) == files, name
    finally:
        engine.dispose()
