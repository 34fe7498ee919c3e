"""The catalog's tables (SQLAlchemy Core). Alembic revisions create them; this module names them.

Definitions (teams, consumers, cases, suites, suite_cases, assertions, criteria) and the run ledger
(runs, run_cases with the snapshot of each case a run executes, run_criteria with the criteria
version stamped per consumer at start, run_reports, rejected_reports). Assertions and criteria are immutable: the
migration installs triggers that refuse an UPDATE, so a change must be a new version. A finalised
run is frozen the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.types import TypeDecorator

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(TypeDecorator):
    """A timestamp stored as naive UTC and read back tz-aware; refuses naive input."""

    impl = sa.DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a tz-aware timestamp")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


def _now() -> datetime:
    return datetime.now(UTC)


def _ref(name: str, target: str, *, size: int = 32, nullable: bool = False, primary_key: bool = False) -> sa.Column:
    """A foreign-key column ``name`` referring to ``target`` (``table.column``)."""
    return sa.Column(name, sa.String(size), sa.ForeignKey(target), nullable=nullable, primary_key=primary_key)


def _created() -> sa.Column:
    return sa.Column("created_at", UtcDateTime(), nullable=False, default=_now)


def _editable(id_column: str, key_column: str) -> list[sa.Column]:
    """The id, owning team and team-unique key of a definition a team edits (a case, a suite)."""
    return [
        sa.Column(id_column, sa.String(32), primary_key=True),
        _ref("team_id", "teams.team_id", size=64),
        sa.Column(key_column, sa.String(64), nullable=False),
    ]


def _versioned(hash_column: str, *owner: str, constraint: str) -> list[sa.SchemaItem]:
    """An immutable, versioned definition's version (>= 1, unique per owner), content hash and creation time."""
    return [
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column(hash_column, sa.String(64), nullable=False),
        _created(),
        sa.UniqueConstraint(*owner, "version", name=constraint),
        sa.CheckConstraint("version >= 1", name="version_positive"),
    ]


def _stamps() -> list[sa.Column]:
    return [_created(), sa.Column("updated_at", UtcDateTime(), nullable=False, default=_now)]


teams = sa.Table(
    "teams",
    metadata,
    sa.Column("team_id", sa.String(64), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    _created(),
)

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("consumer_key", sa.String(64), primary_key=True),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    _created(),
)

cases = sa.Table(
    "cases",
    metadata,
    *_editable("case_id", "case_key"),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("content", sa.JSON, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("source_recipe_id", sa.String(64), nullable=True),
    *_stamps(),
    sa.UniqueConstraint("team_id", "case_key", name="uq_cases_team_key"),
)

suites = sa.Table(
    "suites",
    metadata,
    *_editable("suite_id", "suite_key"),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("target_kind", sa.String(16), nullable=False),
    sa.Column("target", sa.JSON, nullable=False),
    sa.Column("target_hash", sa.String(64), nullable=False),
    sa.Column("tags", sa.JSON, nullable=False, default=list, server_default="[]",
              doc="The suite's tags, a sorted JSON list (`nightly`: the nightly sweep re-runs it)."),
    sa.Column("runners", sa.JSON, nullable=False, default=list, server_default="[]",
              doc="The runners the suite declares, a JSON list in its order: each one plays the suite when no "
                  "runner is named (`assay run`, the nightly sweep, the deployments); empty: the target's default."),
    sa.Column("repeat", sa.JSON, nullable=True,
              doc="The suite's repeat plan, `{count, budget}`: replays per case, and the most an undecided case "
                  "may reach by escalation; null: each case runs once."),
    *_stamps(),
    sa.UniqueConstraint("team_id", "suite_key", name="uq_suites_team_key"),
    sa.CheckConstraint("target_kind IN ('config', 'call_set', 'exam')", name="target_kind"),
)

suite_cases = sa.Table(
    "suite_cases",
    metadata,
    _ref("suite_id", "suites.suite_id", primary_key=True),
    _ref("case_id", "cases.case_id", primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
)

assertions = sa.Table(
    "assertions",
    metadata,
    sa.Column("assertion_id", sa.String(32), primary_key=True),
    _ref("team_id", "teams.team_id", size=64),
    _ref("case_id", "cases.case_id", nullable=True),
    _ref("suite_id", "suites.suite_id", nullable=True),
    sa.Column("owner", sa.String(40), nullable=False),
    sa.Column("assertion_key", sa.String(64), nullable=False),
    sa.Column("mechanism", sa.String(64), nullable=False),
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("role", sa.String(64), nullable=True),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    *_versioned("content_hash", "owner", "assertion_key", constraint="uq_assertions_owner_key_version"),
    sa.CheckConstraint("(case_id IS NULL) <> (suite_id IS NULL)", name="case_or_suite"),
    sa.CheckConstraint(
        "owner = CASE WHEN case_id IS NOT NULL THEN 'case:' || case_id ELSE 'suite:' || suite_id END",
        name="owner_matches",
    ),
)

criteria = sa.Table(
    "criteria",
    metadata,
    sa.Column("criteria_id", sa.String(32), primary_key=True),
    _ref("suite_id", "suites.suite_id"),
    sa.Column("spec", sa.JSON, nullable=False),
    _ref("consumer_key", "consumers.consumer_key", size=64),
    *_versioned("spec_hash", "suite_id", "consumer_key", constraint="uq_criteria_suite_consumer_version"),
)

RUN_STATUSES = ("pending", "running", "released", "completed", "error", "timed_out")
FINAL_STATUSES = ("completed", "error", "timed_out")

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    _ref("suite_id", "suites.suite_id"),
    _ref("team_id", "teams.team_id", size=64),
    sa.Column("runner", sa.String(64), nullable=False),
    sa.Column("provider", sa.String(64), nullable=True),
    sa.Column("provider_ref", sa.Text, nullable=True),
    sa.Column("request_id", sa.String(128), nullable=True, unique=True),
    sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
    sa.Column("status_reason", sa.Text, nullable=True),
    sa.Column("lease_owner", sa.String(128), nullable=True),
    sa.Column("lease_expires_at", UtcDateTime(), nullable=True),
    sa.Column("deadline_at", UtcDateTime(), nullable=True),
    sa.Column("claimed_at", UtcDateTime(), nullable=True),
    sa.Column("last_report_at", UtcDateTime(), nullable=True),
    sa.Column("finalised_at", UtcDateTime(), nullable=True),
    sa.Column("outcome", sa.String(16), nullable=True),
    sa.Column("case_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("repeat", sa.Integer, nullable=False, server_default="1",
              doc="Replays of each case the run started with (each replay is a case run)."),
    sa.Column("budget", sa.Integer, nullable=True,
              doc="The most replays escalation may give an undecided case; null: no escalation."),
    sa.Column("case_runs", sa.Integer, nullable=False, server_default="0"),
    sa.Column("evaluations", sa.Integer, nullable=False, server_default="0"),
    sa.Column("lake_date", sa.String(10), nullable=False),
    _created(),
    sa.CheckConstraint(
        "status IN ('pending', 'running', 'released', 'completed', 'error', 'timed_out')", name="status"
    ),
    sa.CheckConstraint("(lease_owner IS NULL) = (lease_expires_at IS NULL)", name="lease_pair"),
    sa.CheckConstraint(
        "(finalised_at IS NULL) = (status NOT IN ('completed', 'error', 'timed_out'))", name="final_pair"
    ),
)
sa.Index("ix_runs_open", runs.c.finalised_at, runs.c.lease_expires_at)
sa.Index("ix_runs_suite", runs.c.suite_id, runs.c.created_at)

run_cases = sa.Table(
    "run_cases",
    metadata,
    _ref("run_id", "runs.run_id", primary_key=True),
    _ref("case_id", "cases.case_id", primary_key=True),
    sa.Column("case_key", sa.String(64), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("snapshot", sa.JSON, nullable=False),
    sa.Column("snapshot_hash", sa.String(64), nullable=False),
)

run_criteria = sa.Table(
    "run_criteria",
    metadata,
    _ref("run_id", "runs.run_id", primary_key=True),
    _ref("consumer_key", "consumers.consumer_key", size=64, primary_key=True),
    _ref("criteria_id", "criteria.criteria_id"),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("verdict", sa.String(8), nullable=True),
    sa.Column("verdict_reason", sa.Text, nullable=True),
    sa.CheckConstraint("verdict IN ('pass', 'fail', 'error')", name="verdict"),
)

run_reports = sa.Table(
    "run_reports",
    metadata,
    _ref("run_id", "runs.run_id", primary_key=True),
    sa.Column("request_id", sa.String(128), primary_key=True),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("case_runs", sa.Integer, nullable=False),
    sa.Column("evaluations", sa.Integer, nullable=False),
    sa.Column("files", sa.JSON, nullable=False),
    sa.Column("received_at", UtcDateTime(), nullable=False, default=_now),
)

rejected_reports = sa.Table(
    "rejected_reports",
    metadata,
    sa.Column("rejected_id", sa.Integer, primary_key=True, autoincrement=True),
    _ref("run_id", "runs.run_id"),
    sa.Column("request_id", sa.String(128), nullable=False),
    sa.Column("owner", sa.String(128), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("received_at", UtcDateTime(), nullable=False, default=_now),
)
sa.Index("ix_rejected_reports_run", rejected_reports.c.run_id)

# --- the lake's table metadata: which Parquet files make up each lake table ------------------------

FILE_ORIGINS = ("report", "judging", "rescore", "compaction", "migration")
"""What added a lake file: an accepted report, a judging pass, a materialised re-score, a compaction,
or ``assay lake migrate`` (a lake written before the manifest)."""

lake_files = sa.Table(
    "lake_files",
    metadata,
    sa.Column("file_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("table_name", sa.String(64), nullable=False),
    sa.Column("team_id", sa.String(64), nullable=False),
    sa.Column("lake_date", sa.String(10), nullable=False),
    sa.Column("path", sa.String(512), nullable=False, unique=True),
    sa.Column("rows", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("origin_ref", sa.String(200), nullable=False),
    sa.Column("added_at", UtcDateTime(), nullable=False),
    sa.Column("removed_at", UtcDateTime(), nullable=True),
    sa.Column("removed_by", sa.String(128), nullable=True),
    sa.Column("checksum", sa.String(64), nullable=True),
    sa.CheckConstraint(
        "origin IN ('report', 'judging', 'rescore', 'compaction', 'migration')", name="origin"
    ),
)
sa.Index("ix_lake_files_partition", lake_files.c.table_name, lake_files.c.team_id, lake_files.c.lake_date)
sa.Index("ix_lake_files_removed", lake_files.c.removed_at)

lake_file_runs = sa.Table(
    "lake_file_runs",
    metadata,
    sa.Column("file_id", sa.Integer, sa.ForeignKey("lake_files.file_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run_id", sa.String(32), primary_key=True),
)
sa.Index("ix_lake_file_runs_run", lake_file_runs.c.run_id)

lake_staged = sa.Table(
    "lake_staged",
    metadata,
    sa.Column("path", sa.String(512), primary_key=True),
    sa.Column("expires_at", UtcDateTime(), nullable=False),
)
"""Leases on staged lake files: vacuum leaves a file alone while its lease lasts (the commit drops the row)."""
sa.Index("ix_lake_staged_expires", lake_staged.c.expires_at)

judging_passes = sa.Table(
    "judging_passes",
    metadata,
    sa.Column("pass_id", sa.String(32), primary_key=True),
    sa.Column("trigger", sa.String(16), nullable=False),
    sa.Column("judge", sa.String(128), nullable=True),
    sa.Column("outcomes", sa.Integer, nullable=False),
    sa.Column("results", sa.Integer, nullable=False),
    _created(),
)

lake_names = sa.Table(
    "lake_names",
    metadata,
    sa.Column("code", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("name", sa.Text, nullable=False),
)
"""The names behind the 64-bit codes the lake's re-score state stores (assertion keys, evaluators)."""

# --- what runners and our judge leave behind them --------------------------------------------------

scratch_objects = sa.Table(
    "scratch_objects",
    metadata,
    sa.Column("scratch_id", sa.String(32), primary_key=True),
    _ref("run_id", "runs.run_id"),
    sa.Column("runner", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(64), nullable=False),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("vendor_id", sa.String(200), nullable=True),
    _created(),
    sa.Column("deleted_at", UtcDateTime(), nullable=True),
    sa.Column("last_error", sa.Text, nullable=True),
)
"""A vendor object a runner creates for one run (a scratch assistant, an agent). The row is written
*before* the vendor is asked to create it (``name`` is unique, so a crash between the two still
leaves a name to find it by), ``vendor_id`` once the vendor answers, ``deleted_at`` once it is gone."""
sa.Index("ix_scratch_objects_open", scratch_objects.c.deleted_at, scratch_objects.c.run_id)

judge_cache = sa.Table(
    "judge_cache",
    metadata,
    sa.Column("cache_key", sa.String(64), primary_key=True),
    sa.Column("assertion_id", sa.String(32), nullable=False),
    sa.Column("evidence_hash", sa.String(64), nullable=False),
    sa.Column("judge_model", sa.String(128), nullable=False),
    sa.Column("prompt_version", sa.Integer, nullable=False),
    sa.Column("met", sa.Boolean, nullable=False),
    sa.Column("value", sa.Float, nullable=True),
    sa.Column("rationale", sa.Text, nullable=False),
    sa.Column("tokens_in", sa.Integer, nullable=False),
    sa.Column("tokens_out", sa.Integer, nullable=False),
    sa.Column("cost_usd", sa.Float, nullable=True),
    _created(),
)
"""Our judge's verdicts by (assertion version, evidence hash, judge model, prompt version): re-judging an
unchanged pair reads this row and sends nothing. Only verdicts are cached, never errors."""

judge_agreements = sa.Table(
    "judge_agreements",
    metadata,
    sa.Column("agreement_id", sa.String(32), primary_key=True),
    sa.Column("judge_model", sa.String(128), nullable=False),
    sa.Column("prompt_version", sa.Integer, nullable=False),
    sa.Column("labels", sa.Text, nullable=False),
    sa.Column("labels_sha256", sa.String(64), nullable=False),
    sa.Column("items", sa.Integer, nullable=False),
    sa.Column("undetermined", sa.Integer, nullable=False),
    sa.Column("agreement", sa.Float, nullable=True),
    sa.Column("kappa", sa.Float, nullable=True),
    sa.Column("details", sa.JSON, nullable=False),
    _created(),
)
"""Each measurement of our judge against a labelled set: agreement rate and Cohen's kappa."""

vendor_mappings = sa.Table(
    "vendor_mappings",
    metadata,
    _ref("run_id", "runs.run_id", primary_key=True),
    _ref("assertion_id", "assertions.assertion_id", primary_key=True),
    sa.Column("runner", sa.String(64), nullable=False),
    sa.Column("vendor_ref", sa.String(200), nullable=False),
    sa.Column("vendor_name", sa.Text, nullable=True),
    _created(),
)
"""How a run's assertions were sent to a vendor's own slots (Hamming's selected assertions): the
vendor's id and the name it had then, so a renamed vendor assertion is detected, never mis-joined."""

projection_marks = sa.Table(
    "projection_marks",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("through_file_id", sa.Integer, nullable=False),
    sa.Column("through_at", UtcDateTime(), nullable=False),
    sa.Column("recent", sa.JSON, nullable=False),
    sa.Column("passes", sa.Integer, nullable=False),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)
"""How far each incremental projection (the fleet tables) has read: every lake file up to
``through_file_id`` and every catalog change (finalisation, criteria version) before ``through_at`` is in it;
``recent`` lists the file, run and criteria ids of the last few minutes before ``through_at`` that it read,
so a writer that committed late (a smaller id, an earlier time) is still found, and nothing is read twice."""

workspace = sa.Table(
    "workspace",
    metadata,
    sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("workspace_id", sa.String(32), nullable=False),
    sa.Column("lake_url", sa.Text, nullable=False),
    _created(),
    sa.CheckConstraint("slot = 1", name="one_row"),
)
"""The one workspace this catalog belongs to (``slot`` is always 1): its id and the lake whose files its
manifest lists (a local path absolute, or relative to a SQLite catalog file's folder when inside it, so a
workspace folder moves whole), written by `assay init`. Every command checks the lake it was
given against it (:mod:`.workspace_identity`): a mistyped ``ASSAY_HOME`` beside a shared catalog is refused."""

from .template_tables import template_cases, template_groups, templates  # noqa: E402,F401 - the same metadata
