"""One run, everything known of it: what ``assay runs show`` prints.

The ledger row (status and why, the lease, the deadline), the criteria stamped at its start with the
verdict stamped per consumer at finalisation, the reports accepted (with totals and the last one's
time) and those refused (each with its reason), and, when a lake is given, what judging made of its
evidence: outcomes, case runs judged, judging passes and the latest one's time.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from . import tables as t
from .runs import get_run

if TYPE_CHECKING:
    from ..lake import Lake


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def run_details(engine: sa.Engine, run_id: str, lake: Lake | None = None) -> dict[str, Any]:
    """A run (``run_id`` or a unique prefix) with its lease, stamped criteria, reports and, given the
    ``lake``, its judging."""
    run = get_run(engine, run_id)
    rc, rep, rej = t.run_criteria, t.run_reports, t.rejected_reports
    with engine.connect() as conn:
        times = conn.execute(sa.select(t.runs.c.claimed_at, t.runs.c.last_report_at)
                             .where(t.runs.c.run_id == run.run_id)).one()
        stamped = conn.execute(sa.select(rc.c.consumer_key, rc.c.version, rc.c.verdict, rc.c.verdict_reason)
                               .where(rc.c.run_id == run.run_id).order_by(rc.c.consumer_key)).all()
        reports = conn.execute(sa.select(rep.c.request_id, rep.c.owner, rep.c.case_runs, rep.c.evaluations,
                                         rep.c.received_at)
                               .where(rep.c.run_id == run.run_id).order_by(rep.c.received_at)).all()
        rejected = conn.execute(sa.select(rej.c.request_id, rej.c.owner, rej.c.reason, rej.c.received_at)
                                .where(rej.c.run_id == run.run_id).order_by(rej.c.rejected_id)).all()
    return {
        **run.to_dict(),
        "lease": {"owner": run.lease_owner, "expires_at": _iso(run.lease_expires_at),
                  "claimed_at": _iso(times.claimed_at), "last_report_at": _iso(times.last_report_at),
                  "deadline_at": _iso(run.deadline_at)},
        "criteria": {r.consumer_key: r.version for r in stamped},
        "stamped": [{"consumer": r.consumer_key, "version": r.version, "verdict": r.verdict,
                     "reason": r.verdict_reason} for r in stamped],
        "accepted": {"reports": len(reports), "case_runs": sum(r.case_runs for r in reports),
                     "evaluations": sum(r.evaluations for r in reports),
                     "last_at": _iso(reports[-1].received_at) if reports else None},
        "reports": [{**r._mapping, "received_at": _iso(r.received_at)} for r in reports],
        "rejected_reports": [{**r._mapping, "received_at": _iso(r.received_at)} for r in rejected],
        **({"judged": judging(lake, run.run_id, run.case_runs)} if lake is not None else {}),
    }


def judging(lake: Lake, run_id: str, case_runs: int) -> dict[str, Any]:
    """What judging made of a run's evidence: its outcomes, the case runs with one (of ``case_runs``
    stored), the judging passes that wrote them, and the latest pass (when, and why)."""
    import polars as pl

    outcomes = lake.read("outcomes", run_id=run_id).select("case_run_id", "pass_id", "judged_at", "trigger")
    latest = outcomes.sort("judged_at").tail(1).to_dicts()
    return {
        "judged": not outcomes.is_empty(),
        "outcomes": outcomes.height,
        "case_runs_judged": outcomes["case_run_id"].n_unique(),
        "case_runs": case_runs,
        "passes": outcomes.select(pl.col("pass_id").n_unique()).item(),
        "last_judged_at": _iso(latest[0]["judged_at"]) if latest else None,
        "last_trigger": latest[0]["trigger"] if latest else None,
    }
