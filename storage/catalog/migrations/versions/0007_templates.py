"""Templates and template groups (starter packs), and which template made which case.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "templates",
        sa.Column("template_id", sa.String(length=32), nullable=False),
        sa.Column("template_key", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_templates_version_positive")),
        sa.PrimaryKeyConstraint("template_id", name=op.f("pk_templates")),
        sa.UniqueConstraint("template_key", "version", name="uq_templates_key_version"),
    )
    op.create_table(
        "template_groups",
        sa.Column("group_key", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("templates", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("group_key", name=op.f("pk_template_groups")),
    )
    op.create_table(
        "template_cases",
        sa.Column("case_id", sa.String(length=32), nullable=False),
        sa.Column("template_id", sa.String(length=32), nullable=False),
        sa.Column("template_key", sa.String(length=64), nullable=False),
        sa.Column("facts", sa.JSON(), nullable=False),
        sa.Column("facts_hash", sa.String(length=64), nullable=False),
        sa.Column("applied_at", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["cases.case_id"], name=op.f("fk_template_cases_case_id_cases")),
        sa.ForeignKeyConstraint(
            ["template_id"], ["templates.template_id"], name=op.f("fk_template_cases_template_id_templates")
        ),
        sa.PrimaryKeyConstraint("case_id", name=op.f("pk_template_cases")),
    )
    op.create_index("ix_template_cases_key", "template_cases", ["template_key"])
    # a template's versions are immutable, as assertions' are (0001 created the PostgreSQL function)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE TRIGGER templates_immutable BEFORE UPDATE OR DELETE ON templates "
                   "FOR EACH ROW EXECUTE FUNCTION assay_refuse_change()")
    else:
        for event, name in (("UPDATE", "templates_immutable"), ("DELETE", "templates_undeletable")):
            op.execute(f"CREATE TRIGGER {name} BEFORE {event} ON templates BEGIN "
                       "SELECT RAISE(ABORT, 'templates are immutable: write a new version'); END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS templates_immutable ON templates")
    else:
        op.execute("DROP TRIGGER IF EXISTS templates_immutable")
        op.execute("DROP TRIGGER IF EXISTS templates_undeletable")
    op.drop_index("ix_template_cases_key", table_name="template_cases")
    op.drop_table("template_cases")
    op.drop_table("template_groups")
    op.drop_table("templates")
