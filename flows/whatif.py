"""Criteria what-if over history: a candidate spec applied to every judged run in scope, against the
verdicts stamped on them -- by team and consumer, which runs flip and on which keys. A query.

``assay rescore --spec candidate.yaml [--since DATE] [--team T] [--consumer C]`` (no suite). Every
finalised run in scope is scored under the candidate over its current results, and compared, for each
consumer that stamped a verdict on it, with that stamped verdict. The keys of a flip are those that
decide one verdict and not the other: the required keys failed and the keys of the threshold groups
missed, under the candidate and under the run's stamped criteria (recomputed over the same results).
A suite whose assertions lack a key the candidate requires is skipped, and said so: the candidate is
not that suite's to judge.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec, unmatched
from assay.storage.catalog import tables as t
from assay.storage.catalog.runs import suite_assertion_keys
from assay.storage.lake import FileFilter
from assay.transforms.fleet import project_verdicts

from .workspace import Workspace

__all__ = ["whatif"]

CANDIDATE = "candidate"


def _runs(ws: Workspace, since: date | None, team: str | None) -> pl.DataFrame:
    r, s = t.runs, t.suites
    q = (sa.select(r.c.run_id, r.c.suite_id, r.c.team_id, s.c.suite_key, r.c.created_at, r.c.status, r.c.status_reason,
                   r.c.case_count, r.c.case_runs)
         .join(s, s.c.suite_id == r.c.suite_id).where(r.c.finalised_at.is_not(None)))
    if since is not None:
        q = q.where(r.c.created_at >= datetime.combine(since, time(), tzinfo=UTC))
    if team is not None:
        q = q.where(r.c.team_id == team)
    with ws.engine.connect() as conn:
        rows = [dict(row._mapping) for row in conn.execute(q.order_by(r.c.created_at, r.c.run_id))]
    return pl.DataFrame(rows, schema={
        "run_id": pl.String, "suite_id": pl.String, "team_id": pl.String, "suite_key": pl.String,
        "created_at": pl.Datetime("us", "UTC"), "status": pl.String, "status_reason": pl.String,
        "case_count": pl.Int64, "case_runs": pl.Int64,
    })


def _stamped(ws: Workspace, run_ids: list[str], consumer: str | None) -> tuple[pl.DataFrame, dict[str, CriteriaSpec]]:
    rc, c = t.run_criteria, t.criteria
    q = (sa.select(rc.c.run_id, rc.c.consumer_key, rc.c.criteria_id, rc.c.version, rc.c.verdict, c.c.spec)
         .join(c, c.c.criteria_id == rc.c.criteria_id).where(rc.c.run_id.in_(run_ids), rc.c.verdict.is_not(None)))
    if consumer is not None:
        q = q.where(rc.c.consumer_key == consumer)
    with ws.engine.connect() as conn:
        rows = conn.execute(q).all()
    specs = {row.criteria_id: CriteriaSpec.model_validate(row.spec) for row in rows}
    frame = pl.DataFrame([(x.run_id, x.consumer_key, x.criteria_id, x.version, True, False, x.verdict) for x in rows],
                         schema={"run_id": pl.String, "consumer_key": pl.String, "criteria_id": pl.String,
                                 "criteria_version": pl.Int32, "is_stamped": pl.Boolean, "is_current": pl.Boolean,
                                 "stamped_verdict": pl.String}, orient="row")
    return frame, specs


def _deciding(verdicts: pl.DataFrame) -> pl.Expr:
    """The keys that decided each verdict: required keys failed, and the keys of threshold groups missed."""
    missed = pl.col("groups").list.eval(pl.element().filter(pl.element().struct.field("ok") == False)  # noqa: E712
                                        .struct.field("keys").list.explode(keep_nulls=False, empty_as_null=False))
    return pl.concat_list(pl.col("failed_required").fill_null([]), missed.fill_null([])).list.unique().list.sort()


def whatif(
    ws: Workspace, spec: CriteriaSpec, *, since: date | None = None, team: str | None = None,
    consumer: str | None = None,
) -> dict[str, Any]:
    """Apply ``spec`` to every finalised run in scope and report, by team, suite and consumer, the runs whose
    stamped verdict it would flip, with the keys that make the difference."""
    runs = _runs(ws, since, team)
    scope = {"since": since.isoformat() if since else None, "team": team, "consumer": consumer,
             "spec": spec.model_dump()}
    skipped, applicable = [], []
    with ws.engine.connect() as conn:
        for suite_id, suite_key, team_id in runs.select("suite_id", "suite_key", "team_id").unique().sort("suite_key").iter_rows():
            problems = unmatched(spec, suite_assertion_keys(conn, suite_id))
            if problems:
                skipped.append({"suite": f"{team_id}/{suite_key}", "why": "; ".join(problems)})
            else:
                applicable.append(suite_id)
    runs = runs.filter(pl.col("suite_id").is_in(applicable))
    run_ids = runs["run_id"].to_list()
    stamped, specs = _stamped(ws, run_ids, consumer)
    if not run_ids or stamped.is_empty():
        return {**scope, "runs": 0, "groups": [], "flips": [], "skipped": skipped}

    where = FileFilter(teams=[team] if team else None, since=since.isoformat() if since else None)
    atoms = ws.lake.collect(ws.lake.scan("current_results", where).filter(pl.col("run_id").is_in(run_ids)),
                            "current_results", where)
    coverage = runs.select("run_id", "status", "status_reason", "case_count", "case_runs").with_columns(
        cases_run=pl.col("case_count"))  # coverage is not what a what-if reports
    order = None
    if spec.pass_rate is not None or any(s.pass_rate is not None for s in specs.values()):
        order = ws.lake.collect(ws.lake.scan("case_runs", where).filter(pl.col("run_id").is_in(run_ids))
                                .select("case_run_id", "source_ref"), "case_runs", where)  # replay order
    before, _ = project_verdicts(atoms, coverage, stamped, specs, order)
    candidate = stamped.with_columns(criteria_id=pl.lit(CANDIDATE), is_stamped=pl.lit(False))
    after, _ = project_verdicts(atoms, coverage, candidate, {CANDIDATE: spec}, order)
    compared = (
        after.select("run_id", "consumer_key", "stamped_verdict", "verdict", "reason", _deciding(after).alias("now"))
        .join(before.select("run_id", "consumer_key", _deciding(before).alias("then")), on=["run_id", "consumer_key"])
        .join(runs.select("run_id", "team_id", "suite_key", "created_at"), on="run_id")
        .with_columns(
            suite=pl.format("{}/{}", "team_id", "suite_key"),
            flipped=pl.col("verdict").is_not_null() & (pl.col("verdict") != pl.col("stamped_verdict")),
            keys=pl.concat_list(pl.col("now").list.set_difference(pl.col("then")),
                                pl.col("then").list.set_difference(pl.col("now"))).list.unique().list.sort(),
        )
    )
    s, v = pl.col("stamped_verdict"), pl.col("verdict")
    groups = compared.group_by("team_id", "suite", "consumer_key").agg(
        runs=pl.len(), flips=pl.col("flipped").sum(),
        pass_to_fail=((s == "pass") & (v == "fail")).sum(), fail_to_pass=((s == "fail") & (v == "pass")).sum(),
        to_error=(pl.col("flipped") & (v == "error")).sum(), from_error=(pl.col("flipped") & (s == "error")).sum(),
    ).sort("team_id", "suite", "consumer_key")
    flips = compared.filter(pl.col("flipped")).sort("team_id", "suite", "consumer_key", "created_at", "run_id")
    return {
        **scope,
        "runs": len(run_ids),
        "groups": groups.rename({"team_id": "team", "consumer_key": "consumer"}).to_dicts(),
        "flips": flips.select(
            "run_id", team="team_id", suite="suite", consumer="consumer_key",
            created_at=pl.col("created_at").dt.to_string("%Y-%m-%dT%H:%M:%S%.6f+00:00"),
            stamped="stamped_verdict", verdict="verdict", reason="reason", keys="keys",
        ).to_dicts(),
        "skipped": skipped,
    }
