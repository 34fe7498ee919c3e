"""Connecting to the catalog and bringing its schema up to date.

SQLite (the embedded default) runs in WAL mode with foreign keys on, and every transaction begins
``IMMEDIATE`` so two writers queue on the lock instead of failing when a read upgrades to a write.
PostgreSQL is used as it comes. Both are migrated by the same Alembic revisions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event

from assay.core.errors import ConfigError, ImmutableError

MIGRATIONS = Path(__file__).parent / "migrations"

IMMUTABLE_MARKERS = ("are immutable", "is finalised and frozen")


def create_catalog_engine(url: str) -> sa.Engine:
    """An engine for ``url``; SQLite files get their folder, WAL, foreign keys and a busy timeout."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConfigError(f"ASSAY_CATALOG_URL {url!r} is not a database URL: {exc}") from None
    if parsed.get_backend_name() != "sqlite":
        if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in ("", "psycopg2"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return sa.create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(parsed, connect_args={"timeout": 60})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _sqlite_begin)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.close()


def _sqlite_begin(conn) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE")


HEAD = "0012"
"""The newest revision (a test checks it is Alembic's head): a catalog already there is not migrated again."""


def migrate(engine: sa.Engine, revision: str = "head") -> None:
    """Apply Alembic revisions up to ``revision`` (idempotent); a catalog already at :data:`HEAD` costs one query."""
    if revision == "head" and current_revision(engine) == HEAD:
        return
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def current_revision(engine: sa.Engine) -> str | None:
    """The catalog's Alembic revision, or None for an empty catalog."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def insert_ignoring_duplicates(conn: sa.Connection, table: sa.Table, keys: list[str]) -> sa.Insert:
    """``INSERT`` into ``table`` that skips rows whose ``keys`` already exist, even when two writers race."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - the catalog runs on SQLite or PostgreSQL
        raise NotImplementedError(f"the catalog supports SQLite and PostgreSQL, not {dialect}")
    return insert(table).on_conflict_do_nothing(index_elements=keys)


@contextmanager
def refusing_changes() -> Iterator[None]:
    """Turn the database's refusal of an in-place change (a trigger) into :class:`ImmutableError`."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        text = str(exc.orig)
        if any(marker in text for marker in IMMUTABLE_MARKERS):
            raise ImmutableError(text.strip().splitlines()[0]) from None
        raise
