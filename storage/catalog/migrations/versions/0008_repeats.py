"""Repeats: a suite's repeat plan, and each run's replays per case and escalation budget.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a suite loaded before repeats existed runs each case once; so did every run before them
    op.add_column("suites", sa.Column("repeat", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("repeat", sa.Integer(), nullable=False, server_default="1"))
    op.add_column("runs", sa.Column("budget", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "budget")
    op.drop_column("runs", "repeat")
    op.drop_column("suites", "repeat")
