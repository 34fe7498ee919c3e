"""Projection marks: how far each incremental projection of the lake has read.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projection_marks",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("through_file_id", sa.Integer(), nullable=False),
        sa.Column("through_at", sa.DateTime(), nullable=False),
        sa.Column("recent", sa.JSON(), nullable=False),
        sa.Column("passes", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_projection_marks")),
    )


def downgrade() -> None:
    op.drop_table("projection_marks")
