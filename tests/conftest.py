"""Shared fixtures: a catalog on each database, a lake, settings pointing at a temp home, a Prefect server.

PostgreSQL tests need ``ASSAY_TEST_POSTGRES_URL`` (e.g.
``postgresql+psycopg://assay:assay@127.0.0.1:5432/assay_test``). Without it they skip with a message;
with ``ASSAY_REQUIRE_POSTGRES=1`` (set by CI) a missing or unreachable server is a failure instead
(``tests/tools.py`` declares every such tool).
Each PostgreSQL test gets its own schema, dropped afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from assay.storage.catalog.engine import create_catalog_engine, migrate

# S3 stand-in: the `moto_server` and `s3_lake` fixtures live in tests/s3.py; the Prefect servers, in
# tests/prefect_api.py; the external tools (PostgreSQL, Chromium), in tests/tools.py; the two tiers (fast
# and end-to-end), the sleep budget and the per-file time table, in tests/tiers.py.
pytest_plugins = ["pytester", "s3", "prefect_api", "tools", "tiers", "command_line", "readme_blocks"]


def _postgres_base_url() -> str:
    """The PostgreSQL server the tests may use (``tools.need``), checked to answer."""
    from tools import POSTGRES_ENV, TOOLS, need  # a plug-in of this file: imported once it is registered

    url = need("postgres")
    try:
        engine = sa.create_engine(url)
        with engine.connect():
            pass
        engine.dispose()
    except sa.exc.OperationalError as exc:
        TOOLS["postgres"].missing(f"the server at {POSTGRES_ENV} is unreachable: {exc.orig}")
    return url


@contextmanager
def _private_schema() -> Iterator[str]:
    """A URL whose connections use a fresh, private schema, dropped when the block ends."""
    base = _postgres_base_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose connections use a fresh, private schema (dropped afterwards)."""
    with _private_schema() as url:
        yield url


@pytest.fixture(scope="module")
def module_postgres_url() -> Iterator[str]:
    """The same, shared by one test module (for installations a module builds once)."""
    with _private_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty (unmigrated) catalog, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def engine(catalog_url: str) -> Iterator[sa.Engine]:
    """A migrated catalog engine on each database."""
    eng = create_catalog_engine(catalog_url)
    migrate(eng)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def prefect_harness() -> None:
    """One Prefect server for the whole test run: flows called in this process report to it
    (``prefect_api.harness``: the in-process command line shares it)."""
    from prefect_api import harness  # a plug-in of this file: imported once it is registered

    harness()


@pytest.fixture
def assay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ASSAY_HOME in a temp dir, with no other ASSAY_ setting leaking in from the environment."""
    for key in list(os.environ):
        if key.startswith("ASSAY_") and key not in ("ASSAY_TEST_POSTGRES_URL", "ASSAY_LIVE_TESTS") and not key.startswith("ASSAY_REQUIRE_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()  # only `assay init` and the demo create a workspace's home
    monkeypatch.setenv("ASSAY_HOME", str(home))
    return home
