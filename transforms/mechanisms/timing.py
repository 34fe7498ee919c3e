"""``timing.*``: turn-level voice metrics from the transcript's turn timings (:mod:`.turns` holds the
arithmetic: gaps, replies, barge-ins, talk-overs).

A timing a check needs that is missing (a turn without ``t``, or the turn before it without ``end_t``)
makes the result undetermined (met null) with a reason naming the turn, never met. Reasons print whole
milliseconds (rounded half up) and parameters, never a measured float (``value`` carries it). Runners
whose evidence has no such timings do not declare these mechanisms, so an assertion on them fails as
unsupported.
"""

from __future__ import annotations

import polars as pl

from assay.core.mechanisms import Interruptions, Silence, TalkRatio, TimingLatency

from .evidence import Evidence
from .helpers import decide, number, words
from .registry import mechanism
from .turns import NO_TRANSCRIPT, half_up, latency_verdict, per_run, turn_table

EVALUATOR = "assay:timing"


def _missing(what: str) -> pl.Expr:
    """The undetermined reason: no transcript, or the first turn whose timing is missing."""
    return (pl.when(pl.col("transcript").is_null()).then(pl.lit(NO_TRANSCRIPT))
            .otherwise(words("turn timings are missing: turn ", pl.col("first_missing"), " has no t, or the turn "
                             f"before it no end_t, so {what}")))


@mechanism("timing.response_latency", version=1)
def response_latency(evidence: Evidence, rows: pl.Series, p: TimingLatency, judge: str | None) -> pl.DataFrame:
    """Each agent reply to a caller turn: the slowest within ``p.max_ms``, the 95th percentile within
    ``p.p95_ms``, the median within ``p.p50_ms``; value = the 95th percentile in ms."""
    transcript = evidence.column("transcript").gather(rows)
    return latency_verdict(transcript, {"max_ms": p.max_ms, "p95_ms": p.p95_ms, "p50_ms": p.p50_ms}, EVALUATOR)


@mechanism("timing.interruptions", version=1)
def interruptions(evidence: Evidence, rows: pl.Series, p: Interruptions, judge: str | None) -> pl.DataFrame:
    """Barge-ins (caller over the agent) and talk-overs (agent over the caller) within their caps;
    value = both counted. The reason names each count over its cap and the first turn of that kind."""
    transcript = evidence.column("transcript").gather(rows)
    role, prev, gap = pl.col("role"), pl.col("prev_role"), pl.col("gap_ms")
    exchange = ((role == "caller") & (prev == "agent")) | ((role == "agent") & (prev == "caller"))
    overlap = gap < -p.tolerance_ms
    barge, over = overlap & (role == "caller"), overlap & (role == "agent")
    stats = turn_table(transcript).filter(exchange).group_by("_pos").agg(
        missing=gap.null_count(), first_missing=pl.col("_i").filter(gap.is_null()).first(),
        barge_ins=barge.sum(), talk_overs=over.sum(),
        first_barge=pl.col("_i").filter(barge).first(), first_over=pl.col("_i").filter(over).first(),
    ).collect()
    frame = per_run(transcript, stats).with_columns(pl.col("barge_ins", "talk_overs").fill_null(0),
                                                   pl.col("missing").fill_null(0))
    measured = pl.col("transcript").is_not_null() & (pl.col("missing") == 0)
    caps = [(pl.col("barge_ins"), p.max_barge_ins, "barge-ins (the caller over the agent): ", "first_barge"),
            (pl.col("talk_overs"), p.max_talk_overs, "talk-overs (the agent over the caller): ", "first_over")]
    caps = [c for c in caps if c[1] is not None]
    met = pl.when(measured).then(pl.all_horizontal([count <= cap for count, cap, _, _ in caps]))
    parts = [pl.when(count > cap).then(words(said, count, ", the first at turn ", pl.col(first),
                                             f"; at most {cap} allowed"))
             for count, cap, said, first in caps]
    failure = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    value = pl.when(measured).then((pl.col("barge_ins") + pl.col("talk_overs")).cast(pl.Float64))
    return decide(frame, met, value, _missing("interruptions cannot be counted"), failure, EVALUATOR)


@mechanism("timing.silence", version=1)
def silence(evidence: Evidence, rows: pl.Series, p: Silence, judge: str | None) -> pl.DataFrame:
    """At most ``p.max_count`` gaps between consecutive turns longer than ``p.threshold_ms``; value = the
    longest gap in ms. The reason names how many, and the longest with the turn it came before."""
    transcript = evidence.column("transcript").gather(rows)
    gap = pl.col("gap_ms")
    stats = turn_table(transcript).filter(pl.col("_i") > 0).group_by("_pos").agg(
        missing=gap.null_count(), first_missing=pl.col("_i").filter(gap.is_null()).first(),
        silences=(gap > p.threshold_ms).sum(), longest=gap.max(),
        longest_at=pl.col("_i").sort_by(gap, pl.col("_i"), descending=[True, False], nulls_last=True).first(),
    ).collect()
    frame = per_run(transcript, stats).with_columns(pl.col("silences", "missing").fill_null(0))
    measured = pl.col("transcript").is_not_null() & (pl.col("missing") == 0)
    met = pl.when(measured).then(pl.col("silences") <= p.max_count)
    failure = words(f"silences longer than {number(p.threshold_ms)} ms: ", pl.col("silences"), f"; at most "
                    f"{p.max_count} allowed; the longest, before turn ", pl.col("longest_at"), ", lasted ",
                    half_up("longest"), " ms")
    return decide(frame, met, pl.when(measured).then(pl.col("longest")), _missing("silences cannot be measured"),
                  failure, EVALUATOR)


@mechanism("timing.talk_ratio", version=1)
def talk_ratio(evidence: Evidence, rows: pl.Series, p: TalkRatio, judge: str | None) -> pl.DataFrame:
    """The agent's share of the speaking time within [``p.min``, ``p.max``]; value = the share."""
    transcript = evidence.column("transcript").gather(rows)
    duration = pl.col("end_t") - pl.col("t")
    stats = turn_table(transcript).group_by("_pos").agg(
        missing=duration.null_count(), first_missing=pl.col("_i").filter(duration.is_null()).first(),
        total=duration.sum(), agent=duration.filter(pl.col("role") == "agent").sum(),
    ).collect()
    frame = per_run(transcript, stats)
    spoken = pl.col("missing") == 0
    measured = pl.col("transcript").is_not_null() & spoken & (pl.col("total") > 0)
    share = pl.col("agent") / pl.col("total")
    within = [share >= p.min] if p.min is not None else []
    within += [share <= p.max] if p.max is not None else []
    failure = pl.lit(None, pl.String)
    if p.max is not None:
        failure = pl.when(share > p.max).then(pl.lit(f"the agent's share of the speaking time is over {number(p.max)}"))
    if p.min is not None:
        failure = pl.when(share < p.min).then(pl.lit(f"the agent's share of the speaking time is under {number(p.min)}"))\
            .otherwise(failure)
    undetermined = (
        pl.when(pl.col("transcript").is_null()).then(pl.lit(NO_TRANSCRIPT))
        .when(pl.col("missing").is_null()).then(pl.lit("the conversation has no turns: the talk ratio cannot be measured"))
        .when(~spoken).then(words("turn timings are missing: turn ", pl.col("first_missing"), " has no t or no end_t, "
                                  "so the talk ratio cannot be measured"))
        .otherwise(pl.lit("the turns have no duration (each ends when it starts): the talk ratio cannot be measured"))
    )
    return decide(frame, pl.when(measured).then(pl.all_horizontal(within)), pl.when(measured).then(share),
                  undetermined, failure, EVALUATOR)


__all__ = ["interruptions", "response_latency", "silence", "talk_ratio"]
