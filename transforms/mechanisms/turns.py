"""Turn arithmetic from the transcript's timings, in one place: what ``timing.*`` and
``transcript.response_latency`` measure.

Every turn has ``t`` (when it began) and ``end_t`` (when it ended), in seconds, either possibly unknown
(null, or NaN read as null). Relative to the turn right before it in the same transcript:

- its **gap** is ``(t - previous end_t) * 1000`` ms (negative when the two overlap);
- an agent turn after a caller turn is a **reply**, and its gap is the response latency;
- a caller turn after an agent turn that starts more than the tolerance before that turn ended is a
  **barge-in**; an agent turn after a caller turn doing so is a **talk-over**.

The SQL form of the same rules is the ``turns`` view (:mod:`assay.storage.voice_views`).
"""

from __future__ import annotations

import polars as pl

from .helpers import decide, number, words


def turn_table(transcript: pl.Series) -> pl.LazyFrame:
    """One row per turn: its case run's position ``_pos``, its index ``_i``, ``role``, ``t``, ``end_t``,
    ``prev_role`` (null for a first turn) and ``gap_ms``. A transcript without turns gives no row."""
    turns = transcript.to_frame("turn").with_row_index("_pos").with_columns(
        _i=pl.int_ranges(0, pl.col("turn").list.len(), dtype=pl.Int64)).explode(["turn", "_i"])
    turns = turns.filter(pl.col("_i").is_not_null()).unnest("turn")
    same_run = pl.col("_pos").shift(1) == pl.col("_pos")  # the turn before, in the same transcript
    # Everything shifted before any filter, so that shift sees every turn.
    return turns.lazy().select(
        "_pos", "_i", "role", t=pl.col("t").fill_nan(None), end_t=pl.col("end_t").fill_nan(None),
        prev_role=pl.when(same_run).then(pl.col("role").shift(1)),
        gap_ms=pl.when(same_run).then((pl.col("t").fill_nan(None) - pl.col("end_t").fill_nan(None).shift(1)) * 1000),
    )


def replies(transcript: pl.Series) -> pl.DataFrame:
    """Per case run (``_pos``), its agent turns that answer a caller turn: the reply's index ``_i`` and its
    latency ``ms`` (null when either timing is missing)."""
    is_reply = (pl.col("role") == "agent") & (pl.col("prev_role") == "caller")
    return turn_table(transcript).filter(is_reply).select("_pos", "_i", ms="gap_ms").collect()


def per_run(transcript: pl.Series, stats: pl.DataFrame) -> pl.DataFrame:
    """``stats`` (one row per ``_pos`` that has any) joined onto every case run of ``transcript``, in order."""
    frame = transcript.to_frame("transcript").with_row_index("_pos")
    return frame.join(stats, on="_pos", how="left", maintain_order="left")


def half_up(column: str) -> pl.Expr:
    """Milliseconds rounded to a whole number, half up (the same in both engines)."""
    return (pl.col(column) + 0.5).floor().cast(pl.Int64)


NO_TRANSCRIPT = "the case run recorded no transcript"

_PERCENTILES = (("slowest", "max_ms", None), ("p95", "p95_ms", "the 95th percentile"), ("p50", "p50_ms", "the median"))


def latency_verdict(transcript: pl.Series, caps: dict[str, float | None], evaluator: str) -> pl.DataFrame:
    """The response-latency verdict per case run: met when the slowest reply is within ``caps["max_ms"]``,
    the 95th percentile within ``caps["p95_ms"]`` and the median within ``caps["p50_ms"]`` (absent or None:
    not capped); value = the 95th percentile in ms. The reason names the first cap broken, in that order,
    and the slowest reply (the first of equals) with its latency rounded to whole ms."""
    ms = pl.col("ms")
    stats = replies(transcript).group_by("_pos").agg(
        n=pl.len(), missing=ms.null_count(), first_missing=pl.col("_i").filter(ms.is_null()).first(),
        slowest=ms.max(), p95=ms.quantile(0.95, interpolation="linear"), p50=ms.quantile(0.5, interpolation="linear"),
        worst=pl.col("_i").sort_by(ms, pl.col("_i"), descending=[True, False], nulls_last=True).first(),
    )
    bounds = [(column, caps[key], said) for column, key, said in _PERCENTILES if caps.get(key) is not None]
    measured = pl.col("transcript").is_not_null() & (pl.col("n") > 0) & (pl.col("missing") == 0)
    met = pl.when(measured).then(pl.all_horizontal([pl.col(c) <= cap for c, cap, _ in bounds]))
    worst = words("the agent's slowest reply (turn ", pl.col("worst"), ") came ", half_up("slowest"),
                  " ms after the caller stopped")
    failure: pl.Expr | None = None
    for column, cap, said in bounds:
        text = (words(worst, f"; at most {number(cap)} ms allowed") if said is None
                else words(f"{said} of the agent's replies is over {number(cap)} ms; ", worst))
        failure = (pl.when(pl.col(column) > cap) if failure is None else failure.when(pl.col(column) > cap)).then(text)
    undetermined = (
        pl.when(pl.col("transcript").is_null()).then(pl.lit(NO_TRANSCRIPT))
        .when(pl.col("n").is_null())
        .then(pl.lit("no agent turn answers a caller turn: response latency cannot be measured"))
        .otherwise(words("turn timings are missing: the reply at turn ", pl.col("first_missing"), " has no t, or the "
                         "caller turn before it no end_t, so response latency cannot be measured"))
    )
    return decide(per_run(transcript, stats), met, pl.when(measured).then(pl.col("p95")), undetermined,
                  failure if failure is not None else pl.lit(None, pl.String), evaluator)


__all__ = ["NO_TRANSCRIPT", "half_up", "latency_verdict", "per_run", "replies", "turn_table"]
