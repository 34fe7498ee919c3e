"""Initial catalog: definitions, the run ledger, and the triggers that make versions immutable.

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 20:44:23.009813
"""

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('consumers',
    sa.Column('consumer_key', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('consumer_key', name=op.f('pk_consumers'))
    )
    op.create_table('teams',
    sa.Column('team_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('team_id', name=op.f('pk_teams'))
    )
    op.create_table('cases',
    sa.Column('case_id', sa.String(length=32), nullable=False),
    sa.Column('team_id', sa.String(length=64), nullable=False),
    sa.Column('case_key', sa.String(length=64), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('content', sa.JSON(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('source_recipe_id', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['team_id'], ['teams.team_id'], name=op.f('fk_cases_team_id_teams')),
    sa.PrimaryKeyConstraint('case_id', name=op.f('pk_cases')),
    sa.UniqueConstraint('team_id', 'case_key', name='uq_cases_team_key')
    )
    op.create_table('suites',
    sa.Column('suite_id', sa.String(length=32), nullable=False),
    sa.Column('team_id', sa.String(length=64), nullable=False),
    sa.Column('suite_key', sa.String(length=64), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('target_kind', sa.String(length=16), nullable=False),
    sa.Column('target', sa.JSON(), nullable=False),
    sa.Column('target_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint("target_kind IN ('config', 'call_set')", name=op.f('ck_suites_target_kind')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.team_id'], name=op.f('fk_suites_team_id_teams')),
    sa.PrimaryKeyConstraint('suite_id', name=op.f('pk_suites')),
    sa.UniqueConstraint('team_id', 'suite_key', name='uq_suites_team_key')
    )
    op.create_table('assertions',
    sa.Column('assertion_id', sa.String(length=32), nullable=False),
    sa.Column('team_id', sa.String(length=64), nullable=False),
    sa.Column('case_id', sa.String(length=32), nullable=True),
    sa.Column('suite_id', sa.String(length=32), nullable=True),
    sa.Column('owner', sa.String(length=40), nullable=False),
    sa.Column('assertion_key', sa.String(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('mechanism', sa.String(length=64), nullable=False),
    sa.Column('params', sa.JSON(), nullable=False),
    sa.Column('role', sa.String(length=64), nullable=True),
    sa.Column('description', sa.Text(), server_default='', nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint("owner = CASE WHEN case_id IS NOT NULL THEN 'case:' || case_id ELSE 'suite:' || suite_id END", name=op.f('ck_assertions_owner_matches')),
    sa.CheckConstraint('(case_id IS NULL) <> (suite_id IS NULL)', name=op.f('ck_assertions_case_or_suite')),
    sa.CheckConstraint('version >= 1', name=op.f('ck_assertions_version_positive')),
    sa.ForeignKeyConstraint(['case_id'], ['cases.case_id'], name=op.f('fk_assertions_case_id_cases')),
    sa.ForeignKeyConstraint(['suite_id'], ['suites.suite_id'], name=op.f('fk_assertions_suite_id_suites')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.team_id'], name=op.f('fk_assertions_team_id_teams')),
    sa.PrimaryKeyConstraint('assertion_id', name=op.f('pk_assertions')),
    sa.UniqueConstraint('owner', 'assertion_key', 'version', name='uq_assertions_owner_key_version')
    )
    op.create_table('criteria',
    sa.Column('criteria_id', sa.String(length=32), nullable=False),
    sa.Column('suite_id', sa.String(length=32), nullable=False),
    sa.Column('consumer_key', sa.String(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('spec_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint('version >= 1', name=op.f('ck_criteria_version_positive')),
    sa.ForeignKeyConstraint(['consumer_key'], ['consumers.consumer_key'], name=op.f('fk_criteria_consumer_key_consumers')),
    sa.ForeignKeyConstraint(['suite_id'], ['suites.suite_id'], name=op.f('fk_criteria_suite_id_suites')),
    sa.PrimaryKeyConstraint('criteria_id', name=op.f('pk_criteria')),
    sa.UniqueConstraint('suite_id', 'consumer_key', 'version', name='uq_criteria_suite_consumer_version')
    )
    op.create_table('runs',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('suite_id', sa.String(length=32), nullable=False),
    sa.Column('team_id', sa.String(length=64), nullable=False),
    sa.Column('runner', sa.String(length=64), nullable=False),
    sa.Column('provider', sa.String(length=64), nullable=True),
    sa.Column('provider_ref', sa.Text(), nullable=True),
    sa.Column('request_id', sa.String(length=128), nullable=True),
    sa.Column('status', sa.String(length=16), server_default='pending', nullable=False),
    sa.Column('status_reason', sa.Text(), nullable=True),
    sa.Column('lease_owner', sa.String(length=128), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(), nullable=True),
    sa.Column('deadline_at', sa.DateTime(), nullable=True),
    sa.Column('claimed_at', sa.DateTime(), nullable=True),
    sa.Column('last_report_at', sa.DateTime(), nullable=True),
    sa.Column('finalised_at', sa.DateTime(), nullable=True),
    sa.Column('outcome', sa.String(length=16), nullable=True),
    sa.Column('case_count', sa.Integer(), server_default='0', nullable=False),
    sa.Column('case_runs', sa.Integer(), server_default='0', nullable=False),
    sa.Column('evaluations', sa.Integer(), server_default='0', nullable=False),
    sa.Column('lake_date', sa.String(length=10), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.CheckConstraint("(finalised_at IS NULL) = (status NOT IN ('completed', 'error', 'timed_out'))", name=op.f('ck_runs_final_pair')),
    sa.CheckConstraint("status IN ('pending', 'running', 'released', 'completed', 'error', 'timed_out')", name=op.f('ck_runs_status')),
    sa.CheckConstraint('(lease_owner IS NULL) = (lease_expires_at IS NULL)', name=op.f('ck_runs_lease_pair')),
    sa.ForeignKeyConstraint(['suite_id'], ['suites.suite_id'], name=op.f('fk_runs_suite_id_suites')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.team_id'], name=op.f('fk_runs_team_id_teams')),
    sa.PrimaryKeyConstraint('run_id', name=op.f('pk_runs')),
    sa.UniqueConstraint('request_id', name=op.f('uq_runs_request_id'))
    )
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.create_index('ix_runs_open', ['finalised_at', 'lease_expires_at'], unique=False)
        batch_op.create_index('ix_runs_suite', ['suite_id', 'created_at'], unique=False)

    op.create_table('suite_cases',
    sa.Column('suite_id', sa.String(length=32), nullable=False),
    sa.Column('case_id', sa.String(length=32), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['case_id'], ['cases.case_id'], name=op.f('fk_suite_cases_case_id_cases')),
    sa.ForeignKeyConstraint(['suite_id'], ['suites.suite_id'], name=op.f('fk_suite_cases_suite_id_suites')),
    sa.PrimaryKeyConstraint('suite_id', 'case_id', name=op.f('pk_suite_cases'))
    )
    op.create_table('rejected_reports',
    sa.Column('rejected_id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('request_id', sa.String(length=128), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('received_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.run_id'], name=op.f('fk_rejected_reports_run_id_runs')),
    sa.PrimaryKeyConstraint('rejected_id', name=op.f('pk_rejected_reports'))
    )
    with op.batch_alter_table('rejected_reports', schema=None) as batch_op:
        batch_op.create_index('ix_rejected_reports_run', ['run_id'], unique=False)

    op.create_table('run_cases',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('case_id', sa.String(length=32), nullable=False),
    sa.Column('case_key', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('snapshot', sa.JSON(), nullable=False),
    sa.Column('snapshot_hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['case_id'], ['cases.case_id'], name=op.f('fk_run_cases_case_id_cases')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.run_id'], name=op.f('fk_run_cases_run_id_runs')),
    sa.PrimaryKeyConstraint('run_id', 'case_id', name=op.f('pk_run_cases'))
    )
    op.create_table('run_criteria',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('consumer_key', sa.String(length=64), nullable=False),
    sa.Column('criteria_id', sa.String(length=32), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['consumer_key'], ['consumers.consumer_key'], name=op.f('fk_run_criteria_consumer_key_consumers')),
    sa.ForeignKeyConstraint(['criteria_id'], ['criteria.criteria_id'], name=op.f('fk_run_criteria_criteria_id_criteria')),
    sa.ForeignKeyConstraint(['run_id'], ['runs.run_id'], name=op.f('fk_run_criteria_run_id_runs')),
    sa.PrimaryKeyConstraint('run_id', 'consumer_key', name=op.f('pk_run_criteria'))
    )
    op.create_table('run_reports',
    sa.Column('run_id', sa.String(length=32), nullable=False),
    sa.Column('request_id', sa.String(length=128), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('case_runs', sa.Integer(), nullable=False),
    sa.Column('evaluations', sa.Integer(), nullable=False),
    sa.Column('files', sa.JSON(), nullable=False),
    sa.Column('received_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.run_id'], name=op.f('fk_run_reports_run_id_runs')),
    sa.PrimaryKeyConstraint('run_id', 'request_id', name=op.f('pk_run_reports'))
    )


    _install_triggers()


def downgrade() -> None:
    _drop_triggers()

    op.drop_table('run_reports')
    op.drop_table('run_criteria')
    op.drop_table('run_cases')
    with op.batch_alter_table('rejected_reports', schema=None) as batch_op:
        batch_op.drop_index('ix_rejected_reports_run')

    op.drop_table('rejected_reports')
    op.drop_table('suite_cases')
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_index('ix_runs_suite')
        batch_op.drop_index('ix_runs_open')

    op.drop_table('runs')
    op.drop_table('criteria')
    op.drop_table('assertions')
    op.drop_table('suites')
    op.drop_table('cases')
    op.drop_table('teams')
    op.drop_table('consumers')



# Assertions and criteria only gain versions; a finalised run is frozen. The database refuses the
# change itself, so no code path (ours or a hand-written SQL session) can rewrite history.
_SQLITE_TRIGGERS = {
    "assertions_immutable": "BEFORE UPDATE ON assertions BEGIN SELECT RAISE(ABORT, 'assertions are immutable: write a new version'); END",
    "assertions_undeletable": "BEFORE DELETE ON assertions BEGIN SELECT RAISE(ABORT, 'assertions are immutable: write a new version'); END",
    "criteria_immutable": "BEFORE UPDATE ON criteria BEGIN SELECT RAISE(ABORT, 'criteria are immutable: write a new version'); END",
    "criteria_undeletable": "BEFORE DELETE ON criteria BEGIN SELECT RAISE(ABORT, 'criteria are immutable: write a new version'); END",
    "runs_frozen": "BEFORE UPDATE ON runs WHEN OLD.finalised_at IS NOT NULL BEGIN SELECT RAISE(ABORT, 'run is finalised and frozen'); END",
}

_PG_FUNCTIONS = """
CREATE FUNCTION assay_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '% are immutable: write a new version', TG_TABLE_NAME; END $$;
CREATE FUNCTION assay_refuse_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'run is finalised and frozen'; END $$;
"""
_PG_TRIGGERS = {
    "assertions_immutable": "BEFORE UPDATE OR DELETE ON assertions FOR EACH ROW EXECUTE FUNCTION assay_refuse_change()",
    "criteria_immutable": "BEFORE UPDATE OR DELETE ON criteria FOR EACH ROW EXECUTE FUNCTION assay_refuse_change()",
    "runs_frozen": "BEFORE UPDATE ON runs FOR EACH ROW WHEN (OLD.finalised_at IS NOT NULL) EXECUTE FUNCTION assay_refuse_frozen()",
}


def _install_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTIONS)
        for name, body in _PG_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
    else:
        for name, body in _SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")


def _drop_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, body in _PG_TRIGGERS.items():
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {body.split(' ON ')[1].split()[0]}")
        op.execute("DROP FUNCTION IF EXISTS assay_refuse_change(); DROP FUNCTION IF EXISTS assay_refuse_frozen();")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
