"""Creating runs and reading the run ledger.

A run is a suite crossed with the criteria versions current at its start: creating one snapshots
every case it will execute (content + hash) and stamps, per consumer, the criteria version it will be
judged under. The criteria are resolved against the suite's assertions first; one that does not
resolve stops the run before any runner is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec, resolve
from assay.core.errors import AmbiguousError, ConfigError, NotFoundError
from assay.core.ids import content_hash, new_id
from assay.core.names import listed
from assay.core.runner import AssertionSpec, CaseSpec, RunJob

from . import tables as t
from .names import check_team, ls_hint, suite_names


@dataclass(frozen=True)
class RunRow:
    """A run as stored in the ledger."""

    run_id: str
    suite_id: str
    team_id: str
    suite_key: str
    runner: str
    status: str
    status_reason: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    deadline_at: datetime | None
    created_at: datetime
    finalised_at: datetime | None
    outcome: str | None
    case_count: int
    case_runs: int
    evaluations: int
    lake_date: str
    provider_ref: str | None
    repeat: int = 1
    """Replays of each case the run started with."""
    budget: int | None = None
    """The most replays escalation may give an undecided case; None: no escalation."""

    def to_dict(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in self.__dict__.items()}

    @property
    def awaiting_vendor(self) -> bool:
        """Submitted to an asynchronous runner's vendor and waiting for its results (no lease held)."""
        return self.status == "running" and self.lease_owner is None and self.provider_ref is not None


def _now() -> datetime:
    return datetime.now(UTC)


def find_suite(conn: sa.Connection, suite: str, team: str | None = None) -> sa.Row:
    """A suite by ``team/suite`` key, bare key (when unambiguous) or id."""
    if "/" in suite and team is None:
        team, suite = suite.split("/", 1)
    q = sa.select(t.suites).where(sa.or_(t.suites.c.suite_key == suite, t.suites.c.suite_id == suite))
    if team:
        q = q.where(t.suites.c.team_id == team)
    rows = conn.execute(q).all()
    if not rows:
        raise NotFoundError("suite", f"{team}/{suite}" if team else suite, ls_hint("suites"),
                            known=suite_names(conn))
    if len(rows) > 1:
        teams = ", ".join(f"{r.team_id}/{r.suite_key}" for r in rows)
        raise AmbiguousError(f"suite {suite!r} names {len(rows)} suites: name one of {teams}")
    return rows[0]


def suite_assertion_keys(conn: sa.Connection, suite_id: str) -> set[str]:
    """Assertion keys of a suite: its own, and those of its cases."""
    a, sc = t.assertions, t.suite_cases
    case_ids = sa.select(sc.c.case_id).where(sc.c.suite_id == suite_id)
    q = sa.select(a.c.assertion_key).where(sa.or_(a.c.suite_id == suite_id, a.c.case_id.in_(case_ids))).distinct()
    return set(conn.execute(q).scalars())


def suite_mechanisms(conn: sa.Connection, suite_id: str) -> set[str]:
    """The mechanisms of a suite's assertions (its own and its cases'), each assertion at its latest version."""
    a, sc = t.assertions, t.suite_cases
    case_ids = sa.select(sc.c.case_id).where(sc.c.suite_id == suite_id)
    q = (sa.select(a.c.owner, a.c.assertion_key, a.c.mechanism)
         .where(sa.or_(a.c.suite_id == suite_id, a.c.case_id.in_(case_ids))).order_by(a.c.version))
    latest = {(owner, key): mechanism for owner, key, mechanism in conn.execute(q)}
    return set(latest.values())


HISTORY_RUNNER_PREFIX = "legacy:"
"""The runner of imported history (``legacy:<lineage>``): runs that arrived final, with their verdicts as
opaque results; there is nothing of ours to judge in them."""
HISTORY_TAG = "legacy"
"""The tag on every suite of imported history: its runs arrived final, and it has nothing to run."""


def history_runs(conn: sa.Connection, run_ids: Sequence[str]) -> list[str]:
    """Those of ``run_ids`` that are imported history (:data:`HISTORY_RUNNER_PREFIX`)."""
    r = t.runs
    q = sa.select(r.c.run_id).where(r.c.run_id.in_(list(run_ids)), r.c.runner.startswith(HISTORY_RUNNER_PREFIX))
    return list(conn.execute(q).scalars())


COVERAGE_COLUMNS = ("run_id", "status", "status_reason", "case_count", "case_runs")
"""What a verdict needs to know of a run's coverage (:func:`assay.transforms.verdicts.with_coverage`)."""


def run_coverage(conn: sa.Connection, run_ids: Sequence[str]) -> list[sa.Row]:
    """Per run: its status and why, the cases in its snapshot, the case runs it stored."""
    r = t.runs
    return list(conn.execute(sa.select(*(r.c[c] for c in COVERAGE_COLUMNS)).where(r.c.run_id.in_(list(run_ids)))))


FINALISED_RUN_SCHEMA = {
    "run_id": pl.String, "created_at": pl.Datetime("us", "UTC"), "team_id": pl.String, "lake_date": pl.String,
    "status": pl.String, "status_reason": pl.String, "case_count": pl.Int64, "case_runs": pl.Int64,
    "stamped": pl.String, "stamped_version": pl.Int64, "runner": pl.String,
}
"""A re-score's view of a finalised run: when and where it was made (and by which runner), its coverage, and
what was stamped on it."""


def finalised_runs(conn: sa.Connection, suite_id: str, consumer: str,
                   run_ids: Sequence[str] | None = None) -> pl.DataFrame:
    """The suite's finalised runs (all, or those of ``run_ids``), oldest first, as a frame of
    :data:`FINALISED_RUN_SCHEMA`: id, created_at, team, lake date, coverage (:data:`COVERAGE_COLUMNS`),
    and the verdict stamped for ``consumer`` with its criteria version (both null where ``consumer``
    stamped nothing; the verdict alone is null while a stamp awaits its verdict).

    One query, its rows taken from the driver's cursor and built into the frame column by column: on a
    suite of twenty thousand runs, converting each row's timestamp in Python costs more than the query
    (SQLite's text is parsed by Polars).
    """
    r, rc = t.runs, t.run_criteria
    as_text = conn.dialect.name == "sqlite"  # naive UTC as SQLAlchemy writes it: 2026-10-01 12:00:00.000000
    created = sa.type_coerce(r.c.created_at, sa.String) if as_text else r.c.created_at
    q = (
        sa.select(r.c.run_id, created.label("created_at"), r.c.team_id, r.c.lake_date,
                  *(r.c[c] for c in COVERAGE_COLUMNS[1:]), rc.c.verdict, rc.c.version, r.c.runner)
        .outerjoin(rc, sa.and_(rc.c.run_id == r.c.run_id, rc.c.consumer_key == consumer))
        .where(r.c.suite_id == suite_id, r.c.finalised_at.is_not(None))
    )
    if run_ids is not None:
        q = q.where(r.c.run_id.in_(list(run_ids)))
    result = conn.execute(q.order_by(r.c.created_at, r.c.run_id))
    try:  # the driver's tuples: no column here needs SQLAlchemy's conversions, and its Row objects cost a third of the read
        rows = result.cursor.fetchall()
    finally:
        result.close()
    if not as_text:
        return pl.DataFrame(rows, schema=list(FINALISED_RUN_SCHEMA.items()), orient="row")
    frame = pl.DataFrame(rows, schema=list({**FINALISED_RUN_SCHEMA, "created_at": pl.String}.items()), orient="row")
    return frame.with_columns(pl.col("created_at").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us")
                              .dt.replace_time_zone("UTC"))


def current_criteria(conn: sa.Connection, suite_id: str) -> list[sa.Row]:
    """The latest criteria version of each consumer for a suite."""
    c = t.criteria
    latest = (
        sa.select(c.c.consumer_key, sa.func.max(c.c.version).label("version"))
        .where(c.c.suite_id == suite_id)
        .group_by(c.c.consumer_key)
        .subquery()
    )
    q = sa.select(c).join(latest, sa.and_(c.c.consumer_key == latest.c.consumer_key, c.c.version == latest.c.version))
    return list(conn.execute(q.where(c.c.suite_id == suite_id).order_by(c.c.consumer_key)))


def create_run(
    engine: sa.Engine,
    suite: str,
    runner: str,
    *,
    deadline: timedelta | None = None,
    request_id: str | None = None,
    repeat: int | None = None,
    budget: int | None = None,
) -> RunRow:
    """Create a pending run of ``suite`` for ``runner``; idempotent on ``request_id``.

    ``repeat`` (replays per case) and ``budget`` (the most replays escalation may give an undecided case)
    default to the suite's repeat plan, else one replay and no escalation."""
    now = _now()
    with engine.begin() as conn:
        if request_id is not None:
            existing = conn.execute(sa.select(t.runs.c.run_id).where(t.runs.c.request_id == request_id)).scalar()
            if existing:
                return _get(conn, existing)
        s = find_suite(conn, suite)
        keys = suite_assertion_keys(conn, s.suite_id)
        stamped = current_criteria(conn, s.suite_id)
        for row in stamped:
            resolve(row.consumer_key, CriteriaSpec.model_validate(row.spec), keys)
        cases = conn.execute(
            sa.select(t.cases, t.suite_cases.c.position)
            .join(t.suite_cases, t.suite_cases.c.case_id == t.cases.c.case_id)
            .where(t.suite_cases.c.suite_id == s.suite_id)
            .order_by(t.suite_cases.c.position)
        ).all()
        plan = dict(s.repeat or {})
        repeat = repeat if repeat is not None else plan.get("count", 1)
        budget = budget if budget is not None else plan.get("budget")
        check_repeat(repeat, budget)
        run_id = new_id()
        conn.execute(
            t.runs.insert().values(
                run_id=run_id,
                suite_id=s.suite_id,
                team_id=s.team_id,
                runner=runner,
                request_id=request_id,
                status="pending",
                deadline_at=now + deadline if deadline else None,
                case_count=len(cases),
                repeat=repeat,
                budget=budget if budget is not None and budget > repeat else None,
                lake_date=now.date().isoformat(),
                created_at=now,
            )
        )
        if cases:
            conn.execute(
                t.run_cases.insert(),
                [
                    {
                        "run_id": run_id,
                        "case_id": c.case_id,
                        "case_key": c.case_key,
                        "position": c.position,
                        "snapshot": (snap := snapshot(c)),
                        "snapshot_hash": content_hash(snap),
                    }
                    for c in cases
                ],
            )
        if stamped:
            conn.execute(
                t.run_criteria.insert(),
                [
                    {"run_id": run_id, "consumer_key": r.consumer_key, "criteria_id": r.criteria_id, "version": r.version}
                    for r in stamped
                ],
            )
        return _get(conn, run_id)


def run_budgets(conn: sa.Connection, run_ids: Sequence[str]) -> dict[str, int | None]:
    """Run id -> its escalation budget (None: no escalation)."""
    q = sa.select(t.runs.c.run_id, t.runs.c.budget).where(t.runs.c.run_id.in_(list(run_ids)))
    return {r.run_id: r.budget for r in conn.execute(q)}


def check_repeat(repeat: int, budget: int | None) -> None:
    """Refuse a repeat plan that cannot run: at least one replay, and a budget no smaller than it."""
    if repeat < 1 or repeat > MAX_REPLAYS:
        raise ConfigError(f"--repeat must be 1..{MAX_REPLAYS} replays per case, got {repeat}")
    if budget is not None and not repeat <= budget <= MAX_REPLAYS:
        raise ConfigError(f"the escalation budget must be {repeat}..{MAX_REPLAYS} replays per case (at least "
                          f"--repeat {repeat}), got {budget}")


MAX_REPLAYS = 1000
"""The most replays of one case a run may make (a budget past it is a typo, not a plan)."""


def replay_ref(n: int) -> str:
    """The ``source_ref`` of a case's ``n``-th replay (1-based): ``replay-0001``; zero-padded so text order is replay order."""
    return f"replay-{n:04d}"


def snapshot(case: sa.Row) -> dict[str, Any]:
    """The content of a case as a run executes it."""
    return {
        "case_key": case.case_key,
        "title": case.title,
        "content": case.content,
        "source_recipe_id": case.source_recipe_id,
    }


_RUN_COLUMNS = [c for c in t.runs.c if c.name in RunRow.__dataclass_fields__]


def _select_runs() -> sa.Select:
    return sa.select(*_RUN_COLUMNS, t.suites.c.suite_key).join(t.suites, t.suites.c.suite_id == t.runs.c.suite_id)


def _get(conn: sa.Connection, run_id: str) -> RunRow:
    row = conn.execute(_select_runs().where(t.runs.c.run_id == run_id)).mappings().first()
    if row is None:
        raise NotFoundError("run", run_id, "list runs with `assay runs list`")
    return RunRow(**row)


PREFIX = 6
"""The shortest run id prefix accepted for a whole id."""


def get_run(engine: sa.Engine, run_id: str) -> RunRow:
    """One run by id (a unique prefix of at least :data:`PREFIX` characters is accepted).

    A prefix no run has is an error listing the newest runs; one several runs share (or one shorter
    than the minimum) is ambiguous, listing the runs it names.
    """
    runs = t.runs
    with engine.connect() as conn:
        if conn.execute(sa.select(runs.c.run_id).where(runs.c.run_id == run_id)).first() is None:
            q = sa.select(runs.c.run_id).where(runs.c.run_id.startswith(run_id, autoescape=True))
            matches = conn.execute(q.order_by(runs.c.created_at.desc())).scalars().all()
            if len(run_id) >= PREFIX and len(matches) == 1:
                run_id = matches[0]
            elif matches:
                raise AmbiguousError(
                    f"run id prefix {run_id!r} names {len(matches)} runs: {listed(matches)}; give more characters"
                    if len(matches) > 1 else
                    f"run id prefix {run_id!r} is too short: give {PREFIX}+ characters (it starts {matches[0]})")
            else:
                newest = list(conn.execute(sa.select(runs.c.run_id).order_by(runs.c.created_at.desc()).limit(3)).scalars())
                if not newest:
                    raise NotFoundError("run", run_id, "there are no runs yet: `assay run TEAM/SUITE` starts one")
                raise NotFoundError("run", run_id, "list runs with `assay runs list`", known=newest, known_as="newest runs")
        return _get(conn, run_id)


def list_runs(engine: sa.Engine, *, suite: str | None = None, team: str | None = None, limit: int = 50) -> list[RunRow]:
    """Newest runs first, optionally of one suite or team."""
    q = _select_runs().order_by(t.runs.c.created_at.desc()).limit(limit)
    with engine.connect() as conn:
        if suite:
            q = q.where(t.runs.c.suite_id == find_suite(conn, suite, team).suite_id)
        elif team:
            q = q.where(t.runs.c.team_id == check_team(conn, team))
        return [RunRow(**r) for r in conn.execute(q).mappings()]


def run_details(engine: sa.Engine, run_id: str, lake: Any = None) -> dict[str, Any]:
    """A run with its lease, stamped criteria and verdicts, accepted and rejected reports and, given the
    lake, its judging: :func:`.run_view.run_details`."""
    from .run_view import run_details as details

    return details(engine, run_id, lake)


def job_for_run(engine: sa.Engine, run_id: str) -> RunJob:
    """What a runner needs to execute a run: the suite's target and the snapshotted cases."""
    run = get_run(engine, run_id)
    with engine.connect() as conn:
        suite = conn.execute(sa.select(t.suites).where(t.suites.c.suite_id == run.suite_id)).one()
        cases = conn.execute(
            sa.select(t.run_cases).where(t.run_cases.c.run_id == run.run_id).order_by(t.run_cases.c.position)
        ).all()
    from .assertions import current_assertions

    a = t.assertions
    with engine.connect() as conn:
        current = {r["assertion_id"] for r in current_assertions(conn, run.suite_id, [c.case_id for c in cases])}
        rows = conn.execute(sa.select(a).where(a.c.assertion_id.in_(current)).order_by(a.c.owner, a.c.assertion_key)).all() if current else []
    assertions = tuple(
        AssertionSpec(assertion_id=r.assertion_id, key=r.assertion_key, version=r.version, mechanism=r.mechanism,
                      params=dict(r.params), role=r.role, case_id=r.case_id, description=r.description)
        for r in rows
    )
    return RunJob(
        run_id=run.run_id,
        team_id=run.team_id,
        suite_key=suite.suite_key,
        target_kind=suite.target_kind,
        target=suite.target,
        cases=tuple(CaseSpec(case_id=c.case_id, case_key=c.case_key, content=c.snapshot,
                             source_ref=replay_ref(n) if run.repeat > 1 else "")
                    for c in cases for n in range(1, run.repeat + 1)),
        deadline_at=run.deadline_at,
        assertions=assertions,
    )


def outstanding_runs(engine: sa.Engine, now: datetime) -> list[RunRow]:
    """Asynchronous runs still open, oldest first: waiting at the vendor (a provider reference and no live
    lease: nobody holds it, or its collector's lease lapsed), or collected and released but not yet final."""
    r = t.runs
    free = sa.or_(r.c.lease_owner.is_(None), r.c.lease_expires_at < now)
    q = _select_runs().where(
        r.c.finalised_at.is_(None), r.c.provider_ref.is_not(None),
        sa.or_(r.c.status == "released", sa.and_(r.c.status == "running", free)),
    ).order_by(r.c.created_at, r.c.run_id)
    with engine.connect() as conn:
        return [RunRow(**row) for row in conn.execute(q).mappings()]


def record_vendor_mappings(engine: sa.Engine, run_id: str, runner: str, mapping: dict[str, tuple[str, str | None]]) -> int:
    """Keep how a run's assertions were sent into a vendor's own slots (assertion id -> vendor id, name then)."""
    if not mapping:
        return 0
    vm = t.vendor_mappings
    with engine.begin() as conn:
        known = set(conn.execute(sa.select(vm.c.assertion_id).where(vm.c.run_id == run_id)).scalars())
        rows = [{"run_id": run_id, "assertion_id": aid, "runner": runner, "vendor_ref": ref, "vendor_name": name,
                 "created_at": _now()} for aid, (ref, name) in sorted(mapping.items()) if aid not in known]
        if rows:
            conn.execute(vm.insert(), rows)
    return len(rows)


def vendor_mappings(engine: sa.Engine, run_id: str) -> dict[str, tuple[str, str | None]]:
    """A run's assertions as sent to a vendor: assertion id -> (vendor id, its name then)."""
    vm = t.vendor_mappings
    with engine.connect() as conn:
        rows = conn.execute(sa.select(vm.c.assertion_id, vm.c.vendor_ref, vm.c.vendor_name).where(vm.c.run_id == run_id))
        return {r.assertion_id: (r.vendor_ref, r.vendor_name) for r in rows}
