"""Suite runners: the runners a suite declares, which play it when no runner is named.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # every suite loaded before runners could be declared declares none: its target's default runner plays it
    op.add_column("suites", sa.Column("runners", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("suites", "runners")
