"""Our judge inside a judging pass: the rubric results left "awaiting the judge", answered.

Deterministic judging (:func:`assay.transforms.judge.evaluate`) only marks a rubric result as waiting
for the configured judge. :func:`answer_rubrics` then, for those rows:

1. renders what the judge sees of each case run and its hash
   (:mod:`assay.transforms.judge_evidence`);
2. looks every (assertion version, evidence hash, judge model, prompt version) up in the judge cache,
   in a few queries (:mod:`assay.storage.catalog.judge_cache`);
3. asks the judge only the misses, each distinct (rubric, evidence) question once, with bounded
   concurrency (:class:`assay.adapters.judges.Judge`);
4. caches the verdicts (never the errors) and fills met (pass: True, fail: False), value (1.0/0.0),
   reason (the rationale, or why there is no verdict) and the judge's tokens and cost.

Steps 2-4 are :func:`ask_cached`, which ``assay judge-agreement`` (:mod:`.agreement`) shares. It
reports what was spent: ``judge_calls`` is the number of HTTP requests actually sent to the judge,
retries included (``VendorClient.sent``), so a re-judge served from the cache reports 0.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import polars as pl

from assay.adapters.http import RetryPolicy
from assay.adapters.judges import PROMPT_VERSION, Judge, Judgement
from assay.core.mechanisms import Rubric
from assay.core.redact import redact_text
from assay.storage.catalog import judge_cache
from assay.transforms.carry import JUDGE_SPEND
from assay.transforms.exam_tiers import short_circuit
from assay.transforms.judge_evidence import with_evidence
from assay.transforms.mechanisms.rubric import AWAITING_JUDGE

from .workspace import Workspace

RETRY = RetryPolicy()
"""How the judge retries transient failures (429 honouring ``Retry-After``, 5xx, no connection)."""


def ask_cached(
    ws: Workspace, judge: str, todo: pl.DataFrame, progress: Callable[[int, int], None] | None = None
) -> tuple[list[Judgement], dict[str, Any]]:
    """A judgement per row of ``todo`` (``assertion_id``, ``evidence_hash``, ``rubric``, ``evidence``), in order.

    Cached verdicts are read (in a few queries); the rest are asked, each distinct (rubric, evidence)
    once, and their verdicts cached. Also returns what was spent: ``judge_calls`` (requests sent,
    retries included), ``judge_cached`` (rows served from the cache), ``judge_asked`` (distinct
    questions sent), ``judge_tokens_in``/``_out`` and ``judge_cost_usd`` of those requests.
    """
    ids, hashes, rubrics, texts = (todo[c].to_list() for c in ("assertion_id", "evidence_hash", "rubric", "evidence"))
    keys = [judge_cache.cache_key(a, h, judge, PROMPT_VERSION) for a, h in zip(ids, hashes, strict=True)]
    cached = judge_cache.lookup(ws.engine, keys)
    questions = list(dict.fromkeys((r, e) for k, r, e in zip(keys, rubrics, texts, strict=True) if k not in cached))
    with Judge.from_settings(ws.settings, retry=RETRY) as client:
        # A rationale may quote the evidence, so it is redacted before it is cached or stored.
        asked_now = zip(questions, client.ask_many(questions, _answer_counter(len(questions), progress)), strict=True)
        answers = {q: replace(j, reason=redact_text(j.reason)) for q, j in asked_now}
        sent = client.sent
    out: list[Judgement] = []
    fresh: list[dict[str, Any]] = []
    for k, a, h, r, e in zip(keys, ids, hashes, rubrics, texts, strict=True):
        if k in cached:
            c = cached[k]
            out.append(Judgement(c.met, c.rationale, c.tokens_in, c.tokens_out, c.cost_usd))
            continue
        j = answers[(r, e)]
        out.append(j)
        if j.met is not None:
            fresh.append({"assertion_id": a, "evidence_hash": h, "judge_model": judge, "prompt_version": PROMPT_VERSION,
                          "met": j.met, "value": j.value, "rationale": j.reason, "tokens_in": j.tokens_in,
                          "tokens_out": j.tokens_out, "cost_usd": j.cost_usd})
    judge_cache.store(ws.engine, fresh)
    asked = list(answers.values())
    priced = None not in (ws.settings.judge_usd_per_1k_tokens_in, ws.settings.judge_usd_per_1k_tokens_out)
    return out, {
        "judge_calls": sent, "judge_cached": sum(k in cached for k in keys), "judge_asked": len(questions),
        "judge_tokens_in": sum(j.tokens_in or 0 for j in asked), "judge_tokens_out": sum(j.tokens_out or 0 for j in asked),
        "judge_cost_usd": sum(j.cost_usd or 0.0 for j in asked) if priced else None,
    }


def _answer_counter(total: int, progress: Callable[[int, int], None] | None) -> Callable[[], None] | None:
    """A thread-safe ``on_answer`` telling ``progress(answered, total)``; None without ``progress``."""
    if progress is None:
        return None
    lock, answered = threading.Lock(), [0]
    progress(0, total)

    def on_answer() -> None:
        with lock:
            answered[0] += 1
            progress(answered[0], total)

    return on_answer


NOTHING_SPENT: dict[str, Any] = {"judge_calls": 0, "judge_cached": 0, "judge_asked": 0, "judge_tokens_in": 0,
                                 "judge_tokens_out": 0, "judge_cost_usd": None}


def answer_rubrics(
    ws: Workspace, evaluated: pl.DataFrame, case_runs: pl.DataFrame, judge: str | None,
    progress: Callable[[int, int], None] | None = None, carried: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``evaluated`` with the rubric results awaiting ``judge`` answered, plus what the pass spent;
    ``progress(answered, total)`` hears of the judge's answers as they arrive. ``carried``: the results the
    pass carries forward unchanged, which the short circuit reads too (an exam's replay whose outcome failed
    in an earlier pass is not shown to the judge in this one either).

    Returns the rows (in no particular order) with :data:`~assay.transforms.carry.JUDGE_SPEND`
    columns added, and what :func:`ask_cached` spent.
    """
    spend = [pl.lit(None, dtype).alias(name) for name, dtype in JUDGE_SPEND.items()]
    waiting = (pl.col("mechanism") == "rubric") & (pl.col("reason") == AWAITING_JUDGE).fill_null(False)
    todo = evaluated.filter(waiting)
    if todo.is_empty():  # no rubric in this pass: nothing to ask, nothing to short-circuit
        return evaluated.with_columns(spend), dict(NOTHING_SPENT)
    columns = ["case_run_id", "assertion_key", "mechanism", "met"]
    known = evaluated.select(columns) if carried is None else pl.concat([evaluated.select(columns),
                                                                         carried.select(columns)])
    todo, skipped = short_circuit(todo, known)  # cheapest first, for exams' replays
    rest = pl.concat([evaluated.filter(~waiting), skipped.select(evaluated.columns)]).with_columns(spend)
    if judge is None or todo.is_empty():
        return rest, dict(NOTHING_SPENT)
    seen = with_evidence(case_runs.filter(pl.col("case_run_id").is_in(todo["case_run_id"].unique().to_list()))
                         .select("case_run_id", "transcript", "tool_calls"))
    rubrics = {p: Rubric.model_validate_json(p).rubric for p in todo["params"].unique().to_list()}
    todo = todo.join(seen, on="case_run_id", how="left").with_columns(
        rubric=pl.col("params").replace_strict(rubrics, return_dtype=pl.String))
    rows, spent = ask_cached(ws, judge, todo, progress)
    answered = todo.drop("evidence", "evidence_hash", "rubric").with_columns(
        met=pl.Series([j.met for j in rows], dtype=pl.Boolean),
        value=pl.Series([j.value for j in rows], dtype=pl.Float64),
        reason=pl.Series([j.reason for j in rows], dtype=pl.String),
        judge_tokens_in=pl.Series([j.tokens_in for j in rows], dtype=pl.Int32),
        judge_tokens_out=pl.Series([j.tokens_out for j in rows], dtype=pl.Int32),
        judge_cost_usd=pl.Series([j.cost_usd for j in rows], dtype=pl.Float64),
    )
    return pl.concat([rest, answered.select(rest.columns)]), spent


__all__ = ["NOTHING_SPENT", "RETRY", "answer_rubrics", "ask_cached"]
