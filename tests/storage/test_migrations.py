"""Migrations are the only way the schema changes: they match the table definitions, both ways."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from assay.storage.catalog.engine import migrate
from assay.storage.catalog.tables import metadata


def _diff(engine: sa.Engine) -> list:
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(ctx, metadata)


def test_migrations_create_exactly_the_declared_tables(engine: sa.Engine) -> None:
    assert _diff(engine) == []


def test_downgrade_to_base_and_up_again(engine: sa.Engine) -> None:
    from alembic import command
    from alembic.config import Config

    from assay.storage.catalog.engine import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    assert set(sa.inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate(engine)
    assert _diff(engine) == []


def test_head_names_the_newest_revision(engine: sa.Engine) -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from assay.storage.catalog.engine import HEAD, MIGRATIONS, current_revision

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(cfg).get_heads() == [HEAD] and current_revision(engine) == HEAD


def test_suites_stored_before_tags_have_none(catalog_url: str) -> None:
    from datetime import datetime

    from assay.storage.catalog.engine import HEAD, create_catalog_engine, current_revision
    from assay.storage.catalog.tables import suites

    engine = create_catalog_engine(catalog_url)
    try:
        migrate(engine, "0004")
        now = datetime(2026, 1, 1)
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO teams (team_id, name, created_at) VALUES ('t', 'T', :now)"), {"now": now})
            conn.execute(sa.text(
                "INSERT INTO suites (suite_id, team_id, suite_key, name, target_kind, target, target_hash, created_at, "
                "updated_at) VALUES ('s1', 't', 'main', 'Main', 'config', '{}', 'h', :now, :now)"), {"now": now})
        migrate(engine)
        assert current_revision(engine) == HEAD == "0008"
        with engine.connect() as conn:  # no tags, and no repeat plan: each case runs once
            assert conn.execute(sa.select(suites.c.suite_id, suites.c.tags, suites.c.repeat)).all() == [("s1", [], None)]
    finally:
        engine.dispose()
