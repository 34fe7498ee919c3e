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
