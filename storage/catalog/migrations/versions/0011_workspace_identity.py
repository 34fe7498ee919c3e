"""Workspace identity: the catalog names the workspace and the lake it belongs to.

One row, written by `assay init` (an older catalog gets it when `assay init` upgrades it): its
workspace id and the lake its manifest lists files of.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workspace",
        sa.Column("slot", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("workspace_id", sa.String(length=32), nullable=False),
        sa.Column("lake_url", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("slot = 1", name=op.f("ck_workspace_one_row")),
        sa.PrimaryKeyConstraint("slot", name=op.f("pk_workspace")),
    )


def downgrade() -> None:
    op.drop_table("workspace")
