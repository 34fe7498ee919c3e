"""Shared fixtures: a catalog on each database, a lake, settings pointing at a temp home, a Prefect test server.

PostgreSQL tests need ``ASSAY_TEST_POSTGRES_URL`` (e.g.
``postgresql+psycopg://assay:assay@127.0.0.1:5432/assay_test``). Without it they skip with a message;
with ``ASSAY_REQUIRE_POSTGRES=1`` (set by CI) a missing or unreachable server is a failure instead.
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

# S3 stand-in: the `moto_server` and `s3_lake` fixtures live in tests/s3.py; the Prefect server the tests'
# commands share, in tests/prefect_api.py.
pytest_plugins = ["s3", "prefect_api"]

PG_ENV = "ASSAY_TEST_POSTGRES_URL"
PG_HINT = (
    f"PostgreSQL catalog tests skipped: set {PG_ENV}=postgresql+psycopg://USER:PASSWORD@HOST:5432/DB "
    "to run them (ASSAY_REQUIRE_POSTGRES=1 makes a missing server a failure)"
)


def _postgres_base_url() -> str:
    url = os.environ.get(PG_ENV)
    required = os.environ.get("ASSAY_REQUIRE_POSTGRES") == "1"
    if not url:
        if required:
            pytest.fail(f"ASSAY_REQUIRE_POSTGRES=1 but {PG_ENV} is not set")
        pytest.skip(PG_HINT)
    try:
        engine = sa.create_engine(url)
        with engine.connect():
            pass
        engine.dispose()
    except sa.exc.OperationalError as exc:
        if required:
            pytest.fail(f"PostgreSQL at {PG_ENV} is unreachable: {exc.orig}")
        pytest.skip(f"{PG_HINT} (server unreachable: {exc.orig})")
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
def prefect_harness():
    """One Prefect test server for the whole test run: flows called in this process report to it."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def assay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ASSAY_HOME in a temp dir, with no other ASSAY_ setting leaking in from the environment."""
    for key in list(os.environ):
        if key.startswith("ASSAY_") and key not in (PG_ENV, "ASSAY_REQUIRE_POSTGRES", "ASSAY_LIVE_TESTS"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()  # only `assay init` and the demo create a workspace's home
    monkeypatch.setenv("ASSAY_HOME", str(home))
    return home
