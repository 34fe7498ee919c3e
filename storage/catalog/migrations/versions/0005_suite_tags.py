"""Suite tags: labels that pick suites out for scheduled work (the nightly sweep's ``nightly``).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # every suite loaded before tags existed has none; the default fills them on SQLite and PostgreSQL alike
    op.add_column("suites", sa.Column("tags", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("suites", "tags")  # SQLite drops a column in place (3.35 on), as PostgreSQL does
