"""Stamped verdicts: each consumer's verdict is stamped on run_criteria when the run finalises.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_SQLITE_TRIGGER = (
    "CREATE TRIGGER run_criteria_frozen BEFORE UPDATE ON run_criteria WHEN OLD.verdict IS NOT NULL "
    "BEGIN SELECT RAISE(ABORT, 'run is finalised and frozen'); END"
)
_PG_TRIGGER = (
    "CREATE TRIGGER run_criteria_frozen BEFORE UPDATE ON run_criteria FOR EACH ROW "
    "WHEN (OLD.verdict IS NOT NULL) EXECUTE FUNCTION assay_refuse_frozen()"
)


def upgrade() -> None:
    with op.batch_alter_table("run_criteria") as batch:
        batch.add_column(sa.Column("verdict", sa.String(length=8), nullable=True))
        batch.add_column(sa.Column("verdict_reason", sa.Text(), nullable=True))
        batch.create_check_constraint("verdict", "verdict IN ('pass', 'fail', 'error')")
    op.execute(_PG_TRIGGER if op.get_bind().dialect.name == "postgresql" else _SQLITE_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS run_criteria_frozen ON run_criteria")
    else:
        op.execute("DROP TRIGGER IF EXISTS run_criteria_frozen")
    with op.batch_alter_table("run_criteria") as batch:
        batch.drop_constraint("verdict", type_="check")
        batch.drop_column("verdict_reason")
        batch.drop_column("verdict")
