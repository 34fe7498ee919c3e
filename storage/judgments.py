"""Writing what judging concluded into the lake: a pass's outcomes with their atoms, and re-scored verdicts.

Ids are minted here, from natural keys: an outcome is (pass, case run), an atom (outcome, assertion
version), a materialised verdict (run, consumer, criteria spec). Each write is partitioned by the
team and date of the run it belongs to.

A judging pass stages every outcome and atom file first, then records them all in **one** catalog
transaction with the pass itself (``judging_passes``): its outcomes become visible together with
their atoms, or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import polars as pl
import sqlalchemy as sa

from assay.core.errors import ConcurrentWriteError
from assay.core.failpoints import failpoint
from assay.core.ids import new_id

from . import state
from .catalog import tables as t
from .hashing import stable_ids
from .lake import Lake, LakeFile, codes, manifest

__all__ = ["StagedPass", "record_pass", "stage_pass", "write_current", "write_pass", "write_verdicts"]

OUTCOME_KEYS = ("case_run_id", "run_id", "case_key", "team_id", "date", "evaluated", "carried")
"""What :func:`write_pass` needs to know of each case run that gets an outcome."""

JUDGE_SPEND: dict[str, pl.DataType] = {
    "judge_tokens_in": pl.Int32(), "judge_tokens_out": pl.Int32(), "judge_cost_usd": pl.Float64(),
}
"""The result columns that say what our judge spent on a result (``assertion_results`` v3)."""


@dataclass(frozen=True)
class StagedPass:
    """A judging pass whose files are written but not yet named: :func:`record_pass` names them."""

    pass_id: str
    trigger: str
    judge: str | None
    outcomes: int
    results: int
    staged: list[LakeFile]
    change: state.StateChange


def write_pass(
    lake: Lake, outcomes: pl.DataFrame, results: pl.DataFrame, *, trigger: str, judge: str | None,
    summarise: state.Summarise,
) -> int:
    """Write one judging pass: an outcome per row of ``outcomes``, with the ``results`` of its case run.

    ``outcomes`` has :data:`OUTCOME_KEYS`; ``results`` one row per (case run, assertion version) with the
    assertion columns and met, value, reason, evaluator, evaluator_version, and our judge's spend
    (:data:`JUDGE_SPEND`; results without those columns spent nothing on the judge: null). Results of case runs
    without an outcome row are not written. The re-score state of the judged runs is rewritten in the
    same transaction (:mod:`.state`; ``summarise`` computes its counts). Returns the number of outcomes.
    """
    staged = stage_pass(lake, outcomes, results, trigger=trigger, judge=judge, summarise=summarise)
    if staged is None:
        return 0
    failpoint("judge.staged")
    with lake.engine.begin() as conn:
        record_pass(conn, lake, staged)
        failpoint("judge.recorded")
    return staged.outcomes


def stage_pass(
    lake: Lake, outcomes: pl.DataFrame, results: pl.DataFrame, *, trigger: str, judge: str | None,
    summarise: state.Summarise,
) -> StagedPass | None:
    """Stage the files of the pass :func:`write_pass` writes (None when ``outcomes`` is empty); nothing
    is visible until :func:`record_pass` names them in a catalog transaction."""
    if outcomes.is_empty():
        return None
    results = results.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in JUDGE_SPEND.items()
                                   if name not in results.columns)
    before = state.prior(lake, outcomes["run_id"].unique().to_list())
    # A pass is later than every outcome it supersedes, even on a machine whose clock is behind: the
    # latest outcome by judged_at is then always the last one committed.
    after = before.latest_judged_at
    moment = datetime.now(UTC)
    if after is not None and moment <= after:
        moment = after + timedelta(microseconds=1)
    now = pl.lit(moment).dt.cast_time_unit("us")
    pass_id = new_id()
    outcomes = outcomes.select(OUTCOME_KEYS).with_columns(
        outcome_id=stable_ids(pass_id, outcomes["case_run_id"])
    )
    atoms = results.join(outcomes.select("case_run_id", "outcome_id", "run_id", "case_key", "team_id", "date"),
                         on="case_run_id")
    atoms = atoms.with_columns(result_id=stable_ids(atoms["outcome_id"], atoms["assertion_id"]), judged_at=now)
    outcomes = outcomes.with_columns(
        pass_id=pl.lit(pass_id), trigger=pl.lit(trigger), judged_at=now, judge=pl.lit(judge, dtype=pl.String)
    )
    result_columns = lake.table("assertion_results").arrow_schema.names
    outcome_columns = lake.table("outcomes").arrow_schema.names
    staged: list[LakeFile] = []
    for (team, date), part in state.partitions(outcomes).items():
        staged.append(lake.stage("outcomes", part.select(outcome_columns), team_id=team, date=date))
        mine = atoms.filter(pl.col("team_id") == team, pl.col("date") == date)
        if mine.height:
            staged.append(lake.stage("assertion_results", mine.select(result_columns), team_id=team, date=date))
    change = state.stage(lake, before, atoms, summarise, now)
    return StagedPass(pass_id, trigger, judge, outcomes.height, atoms.height, staged, change)


def record_pass(conn: sa.Connection, lake: Lake, staged: StagedPass) -> None:
    """Name a staged pass's files and record the pass, in the caller's transaction ``conn``; refused
    (:class:`ConcurrentWriteError`) when another pass changed the same runs' current results meanwhile."""
    pass_id, change = staged.pass_id, staged.change
    conn.execute(t.judging_passes.insert().values(
        pass_id=pass_id, trigger=staged.trigger, judge=staged.judge, outcomes=staged.outcomes,
        results=staged.results, created_at=datetime.now(UTC),
    ))
    lake.commit(conn, staged.staged, origin="judging", ref=pass_id)
    if manifest.retire(conn, change.retired, by=pass_id, now=datetime.now(UTC)) != len(change.retired):
        raise ConcurrentWriteError(
            f"judging pass {pass_id}: another pass changed the current results of these runs meanwhile; "
            "nothing was written; judge again"
        )
    lake.commit(conn, change.staged, origin="judging", ref=pass_id)
    codes.record_names(conn, change.names)


def write_current(lake: Lake, atoms: pl.DataFrame, summarise: state.Summarise) -> int:
    """Write the re-score state of a lake listed by ``assay lake migrate``: ``atoms`` are the atoms of each
    case run's latest outcome (with ``team_id`` and ``date``). Returns the number of rows written."""
    nothing = state.Prior([], [], None, [], None)
    change = state.stage(lake, nothing, atoms, summarise, pl.lit(datetime.now(UTC)).dt.cast_time_unit("us"))
    with lake.engine.begin() as conn:
        lake.commit(conn, change.staged, origin="migration", ref="assay lake migrate: current results")
        codes.record_names(conn, change.names)
    return atoms.height


def write_verdicts(
    lake: Lake, verdicts: pl.DataFrame, *, suite_id: str, consumer: str, criteria: str, spec_hash: str
) -> None:
    """Append re-scored verdicts to the ``verdicts`` table (idempotent per run, consumer and spec).

    ``verdicts`` has one row per run: run_id, team_id, date, verdict, reason, counted, met, nulls.
    ``criteria`` labels the spec (``v3``, ``candidate``); ``spec_hash`` identifies it.
    """
    frame = verdicts.with_columns(
        verdict_id=stable_ids(verdicts["run_id"], consumer, spec_hash),
        suite_id=pl.lit(suite_id), consumer_key=pl.lit(consumer), criteria=pl.lit(criteria),
        spec_hash=pl.lit(spec_hash), computed_at=pl.lit(datetime.now(UTC)).dt.cast_time_unit("us"),
    )
    # Uniqueness at write time: a verdict already materialised for this run, consumer and spec stays as it is.
    done = lake.scan("verdicts", runs=frame["run_id"].unique().to_list()).filter(
        pl.col("consumer_key") == consumer, pl.col("spec_hash") == spec_hash
    ).select("verdict_id").collect()
    frame = frame.filter(~pl.col("verdict_id").is_in(done["verdict_id"].to_list()))
    if frame.is_empty():
        return
    columns = lake.table("verdicts").arrow_schema.names
    staged = [lake.stage("verdicts", part.select(columns), team_id=team, date=date)
              for (team, date), part in state.partitions(frame).items()]
    failpoint("rescore.staged")
    with lake.engine.begin() as conn:
        lake.commit(conn, staged, origin="rescore", ref=f"{consumer}:{spec_hash}")
