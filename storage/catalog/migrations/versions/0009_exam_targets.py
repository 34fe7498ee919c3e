"""Exam targets: a suite may run against a coding-agent exam (``target_kind`` ``exam``).

Revision ID: 0009
Revises: 0008

SQLite cannot alter a CHECK constraint, and batch mode's copy of the table cannot be used here: ``suites``
is the parent of ``suite_cases``, ``runs``, ``criteria`` and ``assertions``, so dropping it with foreign
keys on fails, and they cannot be turned off inside the migration's transaction. The constraint is
rewritten in the stored schema instead, as SQLite documents for changing a CHECK constraint (ALTER TABLE,
"making other kinds of table schema changes"); widening it holds every existing row.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_NAME = "ck_suites_target_kind"
_NARROW = "target_kind IN ('config', 'call_set')"
_WIDE = "target_kind IN ('config', 'call_set', 'exam')"


def upgrade() -> None:
    _replace_check(_NARROW, _WIDE)


def downgrade() -> None:
    exams = op.get_bind().execute(sa.text("SELECT COUNT(*) FROM suites WHERE target_kind = 'exam'")).scalar()
    if exams:
        raise RuntimeError(f"{exams} suite(s) target an exam, which revision 0008 cannot hold; nothing was changed")
    _replace_check(_WIDE, _NARROW)


def _replace_check(old: str, new: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint(op.f(_NAME), "suites", type_="check")
        op.create_check_constraint(op.f(_NAME), "suites", new)
        return
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar()
    bind.exec_driver_sql("PRAGMA writable_schema=ON")
    try:
        changed = bind.execute(
            sa.text("UPDATE sqlite_master SET sql = replace(sql, :old, :new) "
                    "WHERE type = 'table' AND name = 'suites' AND instr(sql, :old) > 0"),
            {"old": old, "new": new},
        ).rowcount
        if changed != 1:
            raise RuntimeError(f"the suites table does not declare {old!r}; the catalog's schema was changed by hand")
        bind.exec_driver_sql(f"PRAGMA schema_version={int(version) + 1}")
    finally:
        bind.exec_driver_sql("PRAGMA writable_schema=OFF")
