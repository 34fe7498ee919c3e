"""Migrations are the only way the schema changes: they match the table definitions, both ways."""

from __future__ import annotations

import pytest
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
        assert current_revision(engine) == HEAD == "0012"
        with engine.connect() as conn:  # no tags, no repeat plan (each case runs once), no declared runners
            stored = sa.select(suites.c.suite_id, suites.c.tags, suites.c.repeat, suites.c.runners)
            assert conn.execute(stored).all() == [("s1", [], None, [])]
    finally:
        engine.dispose()


def _downgrade(engine: sa.Engine, revision: str) -> None:
    from alembic import command
    from alembic.config import Config

    from assay.storage.catalog.engine import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def _add_suite(engine: sa.Engine, suite_id: str, kind: str) -> None:
    from datetime import datetime

    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO suites (suite_id, team_id, suite_key, name, target_kind, target, target_hash, created_at, "
            "updated_at) VALUES (:id, 't', :key, :name, :kind, '{}', 'h', :now, :now)"),
            {"id": suite_id, "key": suite_id, "name": suite_id, "kind": kind, "now": datetime(2026, 1, 1)})


def test_exam_targets_arrive_with_0009_and_leave_with_it(catalog_url: str) -> None:
    """0009 widens the target kinds of a catalog whose suites already have cases, runs and assertions (the
    parent of other tables' rows, which a copied table could not replace); going back narrows them again."""
    from datetime import datetime

    from assay.storage.catalog.engine import create_catalog_engine, current_revision

    engine = create_catalog_engine(catalog_url)
    try:
        migrate(engine, "0008")
        now = datetime(2026, 1, 1)
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO teams (team_id, name, created_at) VALUES ('t', 'T', :now)"), {"now": now})
        _add_suite(engine, "s1", "config")
        with engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO cases (case_id, team_id, case_key, title, content, content_hash, created_at, updated_at) "
                "VALUES ('c1', 't', 'k', 'T', '{}', 'h', :now, :now)"), {"now": now})
            conn.execute(sa.text("INSERT INTO suite_cases (suite_id, case_id, position) VALUES ('s1', 'c1', 0)"))
        with pytest.raises(sa.exc.IntegrityError):
            _add_suite(engine, "x0", "exam")

        migrate(engine, "0009")
        assert current_revision(engine) == "0009"
        _add_suite(engine, "x1", "exam")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT suite_id, target_kind FROM suites ORDER BY suite_id")).all() == [
                ("s1", "config"), ("x1", "exam")]
            assert conn.execute(sa.text("SELECT suite_id, case_id FROM suite_cases")).all() == [("s1", "c1")]
        with pytest.raises(sa.exc.IntegrityError):
            _add_suite(engine, "x2", "vendor")

        with pytest.raises(RuntimeError, match="1 suite\\(s\\) target an exam"):
            _downgrade(engine, "0008")
        assert current_revision(engine) == "0009"
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM suites WHERE suite_id = 'x1'"))
        _downgrade(engine, "0008")
        assert current_revision(engine) == "0008"
        with pytest.raises(sa.exc.IntegrityError):
            _add_suite(engine, "x3", "exam")
        _add_suite(engine, "s2", "call_set")
    finally:
        engine.dispose()
