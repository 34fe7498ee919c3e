"""The run ledger: leases (claim, renew, release), reports, finalisation and the reaper.

Every lease operation is one compare-and-set UPDATE whose WHERE clause states the precondition, so
it is atomic on SQLite and PostgreSQL alike: of N processes racing to claim a run, exactly one
UPDATE matches. A report writes its evidence files first (invisible), then in one short transaction
takes the run's row lock with such an UPDATE (only the live lease holder's matches), records the
request id (a repeat is a no-op) and names the files in the lake's manifest.

A report into a finalised run is dropped loudly: logged, counted, and kept in ``rejected_reports`` as a
bounded summary (its request id, counts, first rows, and the hash and size of its payload:
:mod:`.rejected`), so a refused 10,000-call report is a row of kilobytes, not megabytes.

An asynchronous run (a vendor that answers hours later) waits at the vendor as ``running`` with a
``provider_ref`` and **no lease**: :meth:`CatalogLedger.submitted` stores the reference and gives the
lease back in one compare-and-set. Nobody of ours holds it while the vendor works, so the reaper never
finds it lease-expired; only its deadline ends it (the reaper, or :meth:`CatalogLedger.time_out`). A
collector claims it for one poll, renews while it works, and either reports and releases it or hands it
back (:meth:`CatalogLedger.hand_back`). A collector that dies holding it leaves a lapsed lease that the
next collector takes over; the reaper leaves such a run to its deadline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from assay.core.errors import LeaseError, NotFoundError, RunFinalisedError
from assay.core.evidence import Report
from assay.core.failpoints import failpoint
from assay.core.redact import redact_report
from assay.core.runner import Lease, Receipt

from ..evidence import assemble
from ..lake import Lake, LakeFile
from . import tables as t
from .rejected import rejected_summary
from .scratch import CatalogScratchBook

log = logging.getLogger(__name__)
runs = t.runs

# Lease statements are built once with bind parameters: a lease cycle is then three round trips
# with no statement construction (see bench/leases.py).
_RUN, _OWNER, _NOW = sa.bindparam("b_run"), sa.bindparam("b_owner"), sa.bindparam("b_now", type_=t.UtcDateTime())
_EXPIRES = sa.bindparam("b_expires", type_=t.UtcDateTime())
_CLAIM = (
    runs.update()
    .where(
        runs.c.run_id == _RUN,
        runs.c.finalised_at.is_(None),
        sa.or_(runs.c.deadline_at.is_(None), runs.c.deadline_at > _NOW),
        sa.or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at < _NOW, runs.c.lease_owner == _OWNER),
    )
    .values(lease_owner=_OWNER, lease_expires_at=_EXPIRES, claimed_at=_NOW, status="running", status_reason=None)
)
_HOLDING = (
    runs.c.run_id == _RUN,
    runs.c.lease_owner == _OWNER,
    runs.c.lease_expires_at >= _NOW,
    runs.c.finalised_at.is_(None),
)
# Renewing and reporting also need the deadline not to have passed: a lease taken before the deadline
# must not carry the run past it (a handed-back or submitted run is ended by the deadline anyway).
_LIVE = (*_HOLDING, sa.or_(runs.c.deadline_at.is_(None), runs.c.deadline_at > _NOW))
_RENEW = runs.update().where(*_LIVE).values(lease_expires_at=_EXPIRES)
_TOUCH = runs.update().where(*_LIVE).values(last_report_at=_NOW)
_RELEASABLE = runs.update().where(runs.c.run_id == _RUN, runs.c.lease_owner == _OWNER, runs.c.finalised_at.is_(None))
_RELEASE = _RELEASABLE.values(lease_owner=None, lease_expires_at=None, status="released")
_RELEASE_WITH_ERROR = _RELEASABLE.values(
    lease_owner=None, lease_expires_at=None, status="error", status_reason=sa.bindparam("b_reason"), finalised_at=_NOW
)
_AWAIT = dict(lease_owner=None, lease_expires_at=None, status="running", status_reason=sa.bindparam("b_reason"))
_SUBMITTED = runs.update().where(*_HOLDING).values(
    **_AWAIT, provider=sa.bindparam("b_provider"), provider_ref=sa.bindparam("b_ref")
)
_HAND_BACK = runs.update().where(*_HOLDING, runs.c.provider_ref.is_not(None)).values(**_AWAIT)


def _now() -> datetime:
    return datetime.now(UTC)


def _seen(run_id: str, request_id: str) -> sa.Select:
    """Whether the run already holds the report with this request id."""
    return sa.select(sa.literal(1)).where(t.run_reports.c.run_id == run_id, t.run_reports.c.request_id == request_id)


@dataclass(frozen=True)
class StagedReport:
    """A report whose evidence files are written but not yet named in the manifest (invisible)."""

    report: Report
    """The report, redacted."""
    files: list[LakeFile]
    now: datetime
    """When it was staged: its rows' ``received_at`` and the moment its lease is checked against."""
    duplicate: bool = False
    """The run already held this request id when it was staged: nothing was written."""


class CatalogLedger:
    """The :class:`assay.core.runner.Ledger` backed by the catalog and the evidence lake."""

    def __init__(self, engine: sa.Engine, lake: Lake, clock=_now):
        self.engine = engine
        self.lake = lake
        self.clock = clock
        self.scratch = CatalogScratchBook(engine)
        """Where runners record the vendor objects they create (torn down at release, or by the reaper)."""

    # -- leases ---------------------------------------------------------------------------------
    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease:
        """Take the run's lease if nobody holds a live one; raise :class:`LeaseError` otherwise."""
        now = self.clock()
        expires = now + timedelta(seconds=ttl_seconds)
        with self.engine.begin() as conn:
            if conn.execute(_CLAIM, {"b_run": run_id, "b_owner": owner, "b_now": now, "b_expires": expires}).rowcount == 1:
                return Lease(run_id, owner, expires)
            raise self._why_not(conn, run_id, owner, now)

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease:
        """Extend a live lease; raise :class:`LeaseError` if it expired or was taken."""
        now = self.clock()
        expires = now + timedelta(seconds=ttl_seconds)
        params = {"b_run": lease.run_id, "b_owner": lease.owner, "b_now": now, "b_expires": expires}
        with self.engine.begin() as conn:
            if conn.execute(_RENEW, params).rowcount == 1:
                return Lease(lease.run_id, lease.owner, expires)
            raise self._why_not(conn, lease.run_id, lease.owner, now)

    def release(self, lease: Lease, *, error: str | None = None) -> None:
        """Give the lease back. With ``error`` the run is finalised as ``error`` at once."""
        now = self.clock()
        params = {"b_run": lease.run_id, "b_owner": lease.owner}
        stmt = _RELEASE if error is None else _RELEASE_WITH_ERROR
        if error is not None:
            params.update(b_reason=error, b_now=now)
        with self.engine.begin() as conn:
            if conn.execute(stmt, params).rowcount != 1:
                raise self._why_not(conn, lease.run_id, lease.owner, now)

    # -- asynchronous runs: waiting at the vendor with no lease ------------------------------------
    def submitted(self, lease: Lease, provider_ref: str, *, provider: str) -> None:
        """The vendor has the run: keep its reference and give the lease back; the run stays open, waiting."""
        self._await(_SUBMITTED, lease, b_ref=provider_ref, b_provider=provider,
                    b_reason=f"submitted to {provider}; waiting for its results")

    def hand_back(self, lease: Lease, reason: str = "the vendor is still working") -> None:
        """Give back the lease of a submitted run the vendor has not finished; it goes on waiting."""
        self._await(_HAND_BACK, lease, b_reason=reason)

    def _await(self, stmt: sa.Update, lease: Lease, **params: str) -> None:
        now = self.clock()
        with self.engine.begin() as conn:
            if conn.execute(stmt, {"b_run": lease.run_id, "b_owner": lease.owner, "b_now": now, **params}).rowcount != 1:
                raise self._why_not(conn, lease.run_id, lease.owner, now)

    def time_out(self, run_id: str, *, owner: str | None = None) -> bool:
        """Resolve one open run whose deadline has passed to ``timed_out`` (what the reaper does for all);
        False if it was not open or its deadline had not passed. With ``owner``, the run's lease holder ends
        its own run so when it stopped waiting at the deadline (its waits end a moment before it, to leave
        time to store what arrived)."""
        now = self.clock()
        due = runs.c.deadline_at <= now
        if owner is not None:
            due = sa.or_(due, sa.and_(runs.c.deadline_at.is_not(None), runs.c.lease_owner == owner))
        stmt = runs.update().where(runs.c.run_id == run_id, runs.c.finalised_at.is_(None), due).values(
            status="timed_out", status_reason="deadline_passed", finalised_at=now, lease_owner=None,
            lease_expires_at=None)
        with self.engine.begin() as conn:
            done = conn.execute(stmt).rowcount == 1
        if done:
            log.warning("run %s timed out: deadline passed", run_id)
        return done

    def finalise(
        self,
        run_id: str,
        *,
        status: str = "completed",
        verdicts: dict[str, tuple[str, str]] | None = None,
        reason: str | None = None,
    ) -> None:
        """Freeze a released run with its final status and, once judged, each consumer's verdict.

        ``verdicts`` maps consumer -> (verdict, reason) for the criteria stamped at start; the run's
        ``outcome`` becomes the most severe of them (error, then fail, then pass). Both are written in
        the same transaction as the freeze, and the database refuses any later change. ``reason`` is
        kept as the run's status reason (why a run ended ``error`` without verdicts, say).
        """
        verdicts = verdicts or {}
        outcome = next((v for v in ("error", "fail", "pass") if v in {x for x, _ in verdicts.values()}), None)
        stmt = runs.update().where(
            runs.c.run_id == run_id, runs.c.finalised_at.is_(None), runs.c.lease_owner.is_(None)
        )
        with self.engine.begin() as conn:
            for consumer, (verdict, why) in verdicts.items():
                conn.execute(
                    t.run_criteria.update()
                    .where(t.run_criteria.c.run_id == run_id, t.run_criteria.c.consumer_key == consumer)
                    .values(verdict=verdict, verdict_reason=why)
                )
            values = dict(status=status, outcome=outcome, finalised_at=self.clock())
            if reason is not None:
                values["status_reason"] = reason
            if conn.execute(stmt.values(**values)).rowcount != 1:
                raise self._why_not(conn, run_id, "(finaliser)", self.clock())

    def defer(self, run_id: str, reason: str) -> bool:
        """Leave a released run open, saying why its finalisation waits (a transient failure: a full disk,
        the judge's store unreachable). It stays ``released``, so the reaper tries it again; nothing is
        frozen for a cause that passes. False if the run is not released and open any more."""
        stmt = runs.update().where(
            runs.c.run_id == run_id, runs.c.status == "released", runs.c.finalised_at.is_(None),
            runs.c.lease_owner.is_(None),
        ).values(status_reason=reason)
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def _why_not(self, conn: sa.Connection, run_id: str, owner: str, now: datetime) -> Exception:
        row = conn.execute(sa.select(runs).where(runs.c.run_id == run_id)).first()
        if row is None:
            return NotFoundError("run", run_id)
        if row.finalised_at is not None:
            return RunFinalisedError(run_id, owner, f"the run is finalised ({row.status})")
        if row.deadline_at is not None and row.deadline_at <= now:
            return LeaseError(run_id, owner, f"the deadline passed at {row.deadline_at.isoformat()}")
        if row.lease_owner is None:
            return LeaseError(run_id, owner, "nobody holds the lease; claim it first")
        if row.lease_owner != owner:
            return LeaseError(run_id, owner, f"held by {row.lease_owner!r} until {row.lease_expires_at.isoformat()}")
        return LeaseError(run_id, owner, f"the lease expired at {row.lease_expires_at.isoformat()}")

    # -- reports --------------------------------------------------------------------------------
    def report(self, lease: Lease, report: Report) -> Receipt:
        """Store a report's evidence under a live lease. Idempotent on ``report.request_id``.

        The evidence files are written first, with no catalog lock held (:meth:`stage_report`); then one
        short transaction checks the lease (compare-and-set), records the request id and names the files
        in the lake's manifest (:meth:`commit_report`). Refused or crashed, the files stay unnamed: nobody
        reads them, and vacuum removes them. Secrets are redacted first
        (:func:`~assay.core.redact.redact_report`), so neither the lake nor a rejected report's summary
        ever holds one.
        """
        return self.commit_report(lease, self.stage_report(lease, report))

    def stage_report(self, lease: Lease, report: Report) -> StagedReport:
        """Redact, assemble and write a report's evidence files, invisible until :meth:`commit_report`
        names them. Safe to call from several threads at once: :func:`assay.core.runner.drive` writes
        the next report's files while this one commits. A report already stored writes nothing."""
        report = redact_report(report)
        now = self.clock()
        with self.engine.connect() as conn:
            if conn.execute(_seen(lease.run_id, report.request_id)).first():  # a retry of a stored report
                return StagedReport(report, [], now, duplicate=True)
            run = conn.execute(sa.select(runs).where(runs.c.run_id == lease.run_id)).first()
            cases = conn.execute(sa.select(t.run_cases).where(t.run_cases.c.run_id == lease.run_id)).all()
        if run is None:
            raise NotFoundError("run", lease.run_id)
        case_runs, evaluations = assemble(report, run, cases, now)
        staged = [self.lake.stage("case_runs", case_runs, team_id=run.team_id, date=run.lake_date)]
        if evaluations.height:
            staged.append(self.lake.stage("runner_evaluations", evaluations, team_id=run.team_id, date=run.lake_date))
        failpoint("report.staged")
        return StagedReport(report, staged, now)

    def commit_report(self, lease: Lease, staged: StagedReport) -> Receipt:
        """The report's one short transaction: the lease checked, the request id recorded, its files named."""
        report, now = staged.report, staged.now
        seen = _seen(lease.run_id, report.request_id)
        duplicate = Receipt("duplicate", reason=f"request {report.request_id} was already reported")
        if staged.duplicate:
            return duplicate
        with self.engine.connect() as conn, conn.begin() as txn:
            # Taking the row lock first means a concurrent retry of the same request waits here,
            # then sees the first one's request id below.
            held = {"b_run": lease.run_id, "b_owner": lease.owner, "b_now": now}
            if conn.execute(_TOUCH, held).rowcount != 1:
                if conn.execute(seen).first():
                    return duplicate
                refusal = self._why_not(conn, lease.run_id, lease.owner, now)
            elif conn.execute(seen).first():
                txn.rollback()
                return duplicate
            else:
                return self._store(conn, lease, report, staged.files, now)
        return self._reject(lease, report, refusal, now)

    def _store(self, conn: sa.Connection, lease: Lease, report: Report, staged: list[LakeFile], now: datetime) -> Receipt:
        n_runs, n_evals = (sum(f.rows for f in staged if f.table == name) for name in ("case_runs", "runner_evaluations"))
        conn.execute(
            runs.update()
            .where(runs.c.run_id == lease.run_id)
            .values(case_runs=runs.c.case_runs + n_runs, evaluations=runs.c.evaluations + n_evals)
        )
        conn.execute(
            t.run_reports.insert().values(
                run_id=lease.run_id, request_id=report.request_id, owner=lease.owner,
                case_runs=n_runs, evaluations=n_evals, files=[self.lake.address(f.path) for f in staged], received_at=now,
            )
        )
        self.lake.commit(conn, staged, origin="report", ref=f"{lease.run_id}:{report.request_id}")
        failpoint("report.recorded")
        return Receipt("accepted", case_runs=n_runs, evaluations=n_evals)

    def _reject(self, lease: Lease, report: Report, refusal: Exception, now: datetime) -> Receipt:
        """Keep a bounded summary of a refused report (:func:`~.rejected.rejected_summary`); a finalised run's
        late report is dropped, others raise."""
        with self.engine.begin() as conn:
            conn.execute(
                t.rejected_reports.insert().values(
                    run_id=lease.run_id, request_id=report.request_id, owner=lease.owner,
                    reason=str(refusal), payload=rejected_summary(report), received_at=now,
                )
            )
            count = conn.execute(
                sa.select(sa.func.count()).where(t.rejected_reports.c.run_id == lease.run_id)
            ).scalar_one()
        log.warning(
            "run %s: dropped report %s from %s (%d rejected so far): %s",
            lease.run_id, report.request_id, lease.owner, count, refusal,
        )
        if isinstance(refusal, RunFinalisedError):
            return Receipt("rejected", reason=str(refusal))
        raise refusal

    # -- the reaper -----------------------------------------------------------------------------
    def reap(self, pending_timeout_seconds: float = 86400.0) -> dict[str, list[str]]:
        """Resolve expired leases, passed deadlines and runs never started to ``timed_out``; run ids by reason.

        A run created but never claimed (its flow died before the runner started) has no lease to
        expire and often no deadline: past ``pending_timeout_seconds`` it is ``never_started``.
        Released runs are not ended here: they still need judging (:meth:`released`).
        """
        now = self.clock()
        open_ = runs.c.finalised_at.is_(None)
        pending_since = now - timedelta(seconds=pending_timeout_seconds)
        reasons = {
            "deadline_passed": sa.and_(open_, runs.c.deadline_at.is_not(None), runs.c.deadline_at <= now),
            # a submitted run whose collector died goes on waiting: the next collector takes it over
            "lease_expired": sa.and_(open_, runs.c.lease_expires_at.is_not(None), runs.c.lease_expires_at < now,
                                     runs.c.provider_ref.is_(None)),
            "never_started": sa.and_(open_, runs.c.status == "pending", runs.c.claimed_at.is_(None),
                                     runs.c.lease_owner.is_(None), runs.c.created_at <= pending_since),
        }
        out: dict[str, list[str]] = {}
        with self.engine.begin() as conn:
            for reason, cond in reasons.items():
                stmt = (
                    runs.update()
                    .where(cond)
                    .values(
                        status="timed_out", status_reason=reason, finalised_at=now,
                        lease_owner=None, lease_expires_at=None,
                    )
                    .returning(runs.c.run_id)
                )
                out[reason] = sorted(conn.execute(stmt).scalars())
        for reason, ids in out.items():
            for run_id in ids:
                log.warning("run %s timed out: %s", run_id, reason.replace("_", " "))
        return out

    def released(self, idle_seconds: float) -> list[str]:
        """Runs released but never finalised, idle (no claim or report) for ``idle_seconds``: their
        process died between release and finalisation. The idle time leaves a live flow, judging what it
        just released, to finish its own run."""
        since = self.clock() - timedelta(seconds=idle_seconds)
        last = sa.func.coalesce(runs.c.last_report_at, runs.c.claimed_at, runs.c.created_at)
        q = sa.select(runs.c.run_id).where(
            runs.c.status == "released", runs.c.finalised_at.is_(None), runs.c.lease_owner.is_(None), last <= since
        )
        with self.engine.connect() as conn:
            return sorted(conn.execute(q).scalars())
