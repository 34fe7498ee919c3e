"""The lake's manifest: which Parquet files make up each lake table, and the judging passes behind them.

A lake file is visible exactly when a row of ``lake_files`` names it; the row is written in the same
transaction as what makes the file true (a report's acceptance, a judging pass, a compaction).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lake_files",
        sa.Column("file_id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("table_name", sa.String(length=64), nullable=False),
        sa.Column("team_id", sa.String(length=64), nullable=False),
        sa.Column("lake_date", sa.String(length=10), nullable=False),
        sa.Column("path", sa.String(length=512), nullable=False),
        sa.Column("rows", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("origin_ref", sa.String(length=200), nullable=False),
        sa.Column("added_at", sa.DateTime(), nullable=False),
        sa.Column("removed_at", sa.DateTime(), nullable=True),
        sa.Column("removed_by", sa.String(length=128), nullable=True),
        sa.CheckConstraint(
            "origin IN ('report', 'judging', 'rescore', 'compaction', 'migration')", name=op.f("ck_lake_files_origin")
        ),
        sa.PrimaryKeyConstraint("file_id", name=op.f("pk_lake_files")),
        sa.UniqueConstraint("path", name=op.f("uq_lake_files_path")),
    )
    op.create_index("ix_lake_files_partition", "lake_files", ["table_name", "team_id", "lake_date"])
    op.create_index("ix_lake_files_removed", "lake_files", ["removed_at"])
    op.create_table(
        "lake_file_runs",
        sa.Column("file_id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["file_id"], ["lake_files.file_id"], name=op.f("fk_lake_file_runs_file_id_lake_files"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("file_id", "run_id", name=op.f("pk_lake_file_runs")),
    )
    op.create_index("ix_lake_file_runs_run", "lake_file_runs", ["run_id"])
    op.create_table(
        "judging_passes",
        sa.Column("pass_id", sa.String(length=32), nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("judge", sa.String(length=128), nullable=True),
        sa.Column("outcomes", sa.Integer(), nullable=False),
        sa.Column("results", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("pass_id", name=op.f("pk_judging_passes")),
    )
    op.create_table(
        "lake_names",
        sa.Column("code", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_lake_names")),
    )


def downgrade() -> None:
    op.drop_table("lake_names")
    op.drop_table("judging_passes")
    op.drop_index("ix_lake_file_runs_run", table_name="lake_file_runs")
    op.drop_table("lake_file_runs")
    op.drop_index("ix_lake_files_removed", table_name="lake_files")
    op.drop_index("ix_lake_files_partition", table_name="lake_files")
    op.drop_table("lake_files")
