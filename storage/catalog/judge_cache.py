"""Our judge's memory in the catalog: verdicts by what was asked (``judge_cache``) and agreement figures
(``judge_agreements``).

A verdict is keyed by :func:`cache_key` of (assertion version id, evidence hash, judge model, prompt
version): the same judge asked the same question about the same evidence says the same thing, so a
re-judge of an unchanged pair reads the row and sends nothing. Only verdicts are stored, never an
error or an unreadable answer: those are asked again next time.

:func:`lookup` reads thousands of keys in a few queries (chunks of :data:`CHUNK` keys); :func:`store`
writes many rows in one transaction and keeps the first verdict when two passes store the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from assay.core.ids import new_id

from . import tables as t
from .engine import insert_ignoring_duplicates

__all__ = ["CHUNK", "CachedVerdict", "agreements", "cache_key", "lookup", "record_agreement", "store"]

CHUNK = 5_000
"""Keys per ``IN (...)`` query: under SQLite's and PostgreSQL's limits on bound parameters."""


def cache_key(assertion_id: str, evidence_hash: str, judge_model: str, prompt_version: int) -> str:
    """sha256 (hex) of the four parts, separated by the unit separator."""
    parts = (assertion_id, evidence_hash, judge_model, str(prompt_version))
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class CachedVerdict:
    """A verdict our judge gave, as the cache keeps it."""

    met: bool
    """True for pass, False for fail."""
    value: float | None
    """1.0 or 0.0."""
    rationale: str
    """The judge's rationale."""
    tokens_in: int
    """Prompt tokens the endpoint reported when it was asked (0 when it reported none)."""
    tokens_out: int
    """Completion tokens the endpoint reported (0 when it reported none)."""
    cost_usd: float | None
    """What the request cost, when prices were configured."""


def lookup(engine: sa.Engine, keys: Iterable[str]) -> dict[str, CachedVerdict]:
    """The cached verdicts of ``keys`` (absent keys are not in the result)."""
    c = t.judge_cache
    wanted = sorted(set(keys))
    found: dict[str, CachedVerdict] = {}
    columns = (c.c.cache_key, c.c.met, c.c.value, c.c.rationale, c.c.tokens_in, c.c.tokens_out, c.c.cost_usd)
    with engine.connect() as conn:
        for start in range(0, len(wanted), CHUNK):
            rows = conn.execute(sa.select(*columns).where(c.c.cache_key.in_(wanted[start:start + CHUNK])))
            for r in rows:
                found[r.cache_key] = CachedVerdict(bool(r.met), r.value, r.rationale, r.tokens_in, r.tokens_out,
                                                   r.cost_usd)
    return found


def store(engine: sa.Engine, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert verdicts: each row has the cache key's four parts and :class:`CachedVerdict`'s fields.

    Rows whose key is already cached are skipped (a concurrent pass got there first), in one
    transaction. A row with ``met`` None is refused: errors are never cached.
    """
    if not rows:
        return
    now = datetime.now(UTC)
    values = []
    for r in rows:
        if r["met"] is None:
            raise ValueError(f"judge cache: refusing to store a row without a verdict for assertion {r['assertion_id']}")
        values.append({
            "cache_key": cache_key(r["assertion_id"], r["evidence_hash"], r["judge_model"], r["prompt_version"]),
            "assertion_id": r["assertion_id"], "evidence_hash": r["evidence_hash"], "judge_model": r["judge_model"],
            "prompt_version": r["prompt_version"], "met": bool(r["met"]), "value": r.get("value"),
            "rationale": r["rationale"], "tokens_in": r.get("tokens_in") or 0, "tokens_out": r.get("tokens_out") or 0,
            "cost_usd": r.get("cost_usd"), "created_at": now,
        })
    # one row per key, in key order: concurrent judges caching overlapping keys take their locks in one order
    values = sorted({v["cache_key"]: v for v in values}.values(), key=lambda v: v["cache_key"])
    with engine.begin() as conn:
        conn.execute(insert_ignoring_duplicates(conn, t.judge_cache, ["cache_key"]), values)


def record_agreement(
    engine: sa.Engine, *, judge_model: str, prompt_version: int, labels: str, labels_sha256: str, items: int,
    undetermined: int, agreement: float | None, kappa: float | None, details: Mapping[str, Any],
) -> str:
    """Keep one measurement of the judge against a labelled set; returns its id."""
    agreement_id = new_id()
    with engine.begin() as conn:
        conn.execute(t.judge_agreements.insert().values(
            agreement_id=agreement_id, judge_model=judge_model, prompt_version=prompt_version, labels=labels,
            labels_sha256=labels_sha256, items=items, undetermined=undetermined, agreement=agreement, kappa=kappa,
            details=dict(details), created_at=datetime.now(UTC),
        ))
    return agreement_id


def agreements(engine: sa.Engine, judge_model: str | None = None) -> list[dict[str, Any]]:
    """Measurements kept so far (of one judge model, or all), newest first."""
    a = t.judge_agreements
    query = sa.select(a).order_by(a.c.created_at.desc())
    if judge_model is not None:
        query = query.where(a.c.judge_model == judge_model)
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]
