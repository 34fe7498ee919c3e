"""Lake integrity: checksums of listed files, and leases on staged files.

``lake_files.checksum`` is the sha256 of a file's bytes as written (null for files listed before it);
``lake_staged`` holds a lease per staged file, so vacuum leaves a slow writer's files alone until its
commit names them or the lease lapses.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("lake_files", sa.Column("checksum", sa.String(length=64), nullable=True))
    op.create_table(
        "lake_staged",
        sa.Column("path", sa.String(length=512), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("path", name=op.f("pk_lake_staged")),
    )
    op.create_index("ix_lake_staged_expires", "lake_staged", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_lake_staged_expires", table_name="lake_staged")
    op.drop_table("lake_staged")
    with op.batch_alter_table("lake_files") as batch:
        batch.drop_column("checksum")
