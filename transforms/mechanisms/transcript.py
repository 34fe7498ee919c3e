"""``transcript.*``: checks on the conversation (its turns) and on what the case run measured.

Matching rules: ``contains`` is a literal substring of one turn; ``regex`` searches each turn on its
own (Rust's regex; :data:`assay.core.mechanisms.REGEX_SYNTAX`); ``not_contains`` and ``not_regex`` are
met when no turn does; ``case_insensitive`` matches under Unicode simple case folding (the regex
engines' ``(?i)``); a test never spans two turns. Measured numbers that are null or NaN count as not
recorded (met null).

Two latencies: ``max_latency`` is the whole call's duration (``duration_ms``); ``response_latency`` is
how quickly the agent answers, from the turn timings (a caller turn's ``end_t`` to the next agent turn's
``t``), so it needs runners that record when each utterance ended. The ``timing.*`` family
(:mod:`.timing`) measures more from the same timings.
"""

from __future__ import annotations

import polars as pl

from assay.core.mechanisms import MaxCost, MaxLatency, MaxTurns, RegexMatch, ResponseLatency, TextMatch

from .evidence import Evidence
from .helpers import decide, found_by, ignoring_case, number, words
from .registry import mechanism
from .turns import NO_TRANSCRIPT, latency_verdict

EVALUATOR = "assay:transcript"


def _text_check(evidence: Evidence, rows: pl.Series, p: TextMatch, negate: bool, pattern: bool) -> pl.DataFrame:
    found = evidence.any_turn(rows, p.role, found_by(p.case_insensitive, p.text, pattern))
    what = f'matches the pattern "{p.text}"' if pattern else f'contains "{p.text}"'
    by, case = (f" by the {p.role}" if p.role else ""), ignoring_case(p.case_insensitive)
    failure = f"a turn{by} {what}{case}" if negate else f"no turn{by} {what}{case}"
    met = ~pl.col("found") if negate else pl.col("found")
    return decide(found.to_frame("found"), met, pl.lit(None, pl.Float64), NO_TRANSCRIPT, failure, EVALUATOR)


@mechanism("transcript.contains", version=1)
def contains(evidence: Evidence, rows: pl.Series, p: TextMatch, judge: str | None) -> pl.DataFrame:
    """Some turn (by ``p.role``) contains ``p.text``."""
    return _text_check(evidence, rows, p, negate=False, pattern=False)


@mechanism("transcript.not_contains", version=1)
def not_contains(evidence: Evidence, rows: pl.Series, p: TextMatch, judge: str | None) -> pl.DataFrame:
    """No turn (by ``p.role``) contains ``p.text``."""
    return _text_check(evidence, rows, p, negate=True, pattern=False)


@mechanism("transcript.regex", version=1)
def regex(evidence: Evidence, rows: pl.Series, p: RegexMatch, judge: str | None) -> pl.DataFrame:
    """Some turn (by ``p.role``) matches the pattern ``p.text``."""
    return _text_check(evidence, rows, p, negate=False, pattern=True)


@mechanism("transcript.not_regex", version=1)
def not_regex(evidence: Evidence, rows: pl.Series, p: RegexMatch, judge: str | None) -> pl.DataFrame:
    """No turn (by ``p.role``) matches the pattern ``p.text``: what must never be said, in any wording the
    pattern covers (a price, a diagnosis, a card number)."""
    return _text_check(evidence, rows, p, negate=True, pattern=True)


@mechanism("transcript.max_turns", version=1)
def max_turns(evidence: Evidence, rows: pl.Series, p: MaxTurns, judge: str | None) -> pl.DataFrame:
    """The conversation took at most ``p.max`` turns; value = the turns."""
    turns = pl.col("turns")
    frame = evidence.turn_counts().gather(rows).to_frame("turns")
    return decide(frame, turns <= p.max, turns.cast(pl.Float64), NO_TRANSCRIPT,
                  words("the conversation took ", turns, f" turns; at most {p.max} allowed"), EVALUATOR)


def _cap(evidence: Evidence, rows: pl.Series, column: str, cap: float, missing: str, over_cap: str) -> pl.DataFrame:
    measured = pl.col(column).fill_nan(None)
    frame = evidence.column(column).gather(rows).to_frame(column)
    return decide(frame, measured <= cap, measured, missing, over_cap, EVALUATOR)


@mechanism("transcript.max_latency", version=1)
def max_latency(evidence: Evidence, rows: pl.Series, p: MaxLatency, judge: str | None) -> pl.DataFrame:
    """The case run took at most ``p.max_ms``; value = its duration."""
    return _cap(evidence, rows, "duration_ms", p.max_ms, "the case run recorded no duration",
                f"the case run took longer than {number(p.max_ms)} ms")


@mechanism("transcript.response_latency", version=1)
def response_latency(evidence: Evidence, rows: pl.Series, p: ResponseLatency, judge: str | None) -> pl.DataFrame:
    """Each agent reply to a caller turn started within ``p.max_ms`` (and their 95th percentile within
    ``p.p95_ms``) of the caller's turn ending; value = the 95th percentile in ms. The reason names the
    slowest reply (the first of equals) and its latency rounded to whole ms (half up, in both engines).
    The same measure, with a median bar too, is ``timing.response_latency`` (:mod:`.timing`); both are
    :func:`.turns.latency_verdict`."""
    transcript = evidence.column("transcript").gather(rows)
    return latency_verdict(transcript, {"max_ms": p.max_ms, "p95_ms": p.p95_ms}, EVALUATOR)


@mechanism("transcript.max_cost", version=1)
def max_cost(evidence: Evidence, rows: pl.Series, p: MaxCost, judge: str | None) -> pl.DataFrame:
    """The case run cost at most ``p.max_usd``; value = its cost."""
    return _cap(evidence, rows, "cost_usd", p.max_usd, "the case run recorded no cost",
                f"the case run cost more than {number(p.max_usd)} USD")


__all__ = ["NO_TRANSCRIPT", "contains", "max_cost", "max_latency", "max_turns", "not_contains", "not_regex",
           "regex", "response_latency"]
