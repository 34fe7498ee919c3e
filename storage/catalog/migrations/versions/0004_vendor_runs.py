"""What vendor runners and our judge keep: scratch objects, the judge's cache and agreement figures,
and the mapping of assertions onto a vendor's own slots.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scratch_objects",
        sa.Column("scratch_id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("runner", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("vendor_id", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_scratch_objects_run_id_runs")),
        sa.PrimaryKeyConstraint("scratch_id", name=op.f("pk_scratch_objects")),
        sa.UniqueConstraint("name", name=op.f("uq_scratch_objects_name")),
    )
    op.create_index("ix_scratch_objects_open", "scratch_objects", ["deleted_at", "run_id"])
    op.create_table(
        "judge_cache",
        sa.Column("cache_key", sa.String(length=64), nullable=False),
        sa.Column("assertion_id", sa.String(length=32), nullable=False),
        sa.Column("evidence_hash", sa.String(length=64), nullable=False),
        sa.Column("judge_model", sa.String(length=128), nullable=False),
        sa.Column("prompt_version", sa.Integer(), nullable=False),
        sa.Column("met", sa.Boolean(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("rationale", sa.Text(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("cache_key", name=op.f("pk_judge_cache")),
    )
    op.create_table(
        "judge_agreements",
        sa.Column("agreement_id", sa.String(length=32), nullable=False),
        sa.Column("judge_model", sa.String(length=128), nullable=False),
        sa.Column("prompt_version", sa.Integer(), nullable=False),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("labels_sha256", sa.String(length=64), nullable=False),
        sa.Column("items", sa.Integer(), nullable=False),
        sa.Column("undetermined", sa.Integer(), nullable=False),
        sa.Column("agreement", sa.Float(), nullable=True),
        sa.Column("kappa", sa.Float(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("agreement_id", name=op.f("pk_judge_agreements")),
    )
    op.create_table(
        "vendor_mappings",
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("assertion_id", sa.String(length=32), nullable=False),
        sa.Column("runner", sa.String(length=64), nullable=False),
        sa.Column("vendor_ref", sa.String(length=200), nullable=False),
        sa.Column("vendor_name", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name=op.f("fk_vendor_mappings_run_id_runs")),
        sa.ForeignKeyConstraint(
            ["assertion_id"], ["assertions.assertion_id"], name=op.f("fk_vendor_mappings_assertion_id_assertions")
        ),
        sa.PrimaryKeyConstraint("run_id", "assertion_id", name=op.f("pk_vendor_mappings")),
    )


def downgrade() -> None:
    op.drop_table("vendor_mappings")
    op.drop_table("judge_agreements")
    op.drop_table("judge_cache")
    op.drop_index("ix_scratch_objects_open", table_name="scratch_objects")
    op.drop_table("scratch_objects")
