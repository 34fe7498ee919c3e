"""The judge cache and agreement records in the catalog, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from assay.storage.catalog import judge_cache as jc
from assay.storage.catalog import tables as t


def verdict(i: int, **overrides) -> dict:
    return {"assertion_id": "a" * 32, "evidence_hash": f"{i:064x}", "judge_model": "m", "prompt_version": 1,
            "met": i % 2 == 0, "value": float(i % 2 == 0), "rationale": f"because {i}", "tokens_in": 10 + i,
            "tokens_out": 3, "cost_usd": None, **overrides}


def test_the_key_names_all_four_parts() -> None:
    base = jc.cache_key("a", "e", "m", 1)
    assert len(base) == 64 and base == jc.cache_key("a", "e", "m", 1)
    assert len({base, jc.cache_key("b", "e", "m", 1), jc.cache_key("a", "f", "m", 1), jc.cache_key("a", "e", "n", 1),
                jc.cache_key("a", "e", "m", 2)}) == 5


def test_thousands_of_keys_are_read_in_a_few_queries(engine: sa.Engine) -> None:
    rows = [verdict(i) for i in range(12_000)]
    jc.store(engine, rows)
    keys = [jc.cache_key(r["assertion_id"], r["evidence_hash"], "m", 1) for r in rows]
    statements: list[str] = []

    def count(conn, cursor, statement, *rest) -> None:
        if statement.lstrip().upper().startswith("SELECT"):  # not SQLite's BEGIN
            statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        found = jc.lookup(engine, [*keys, "0" * 64])
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)
    assert len(found) == 12_000 and len(statements) == 3  # 12,001 keys in chunks of 5,000
    assert found[keys[7]] == jc.CachedVerdict(False, 0.0, "because 7", 17, 3, None)


def test_a_stored_key_keeps_its_first_verdict_and_errors_are_refused(engine: sa.Engine) -> None:
    jc.store(engine, [verdict(1)])
    jc.store(engine, [verdict(1, met=True, rationale="second opinion"), verdict(2), verdict(2)])
    key = jc.cache_key("a" * 32, f"{1:064x}", "m", 1)
    assert jc.lookup(engine, [key])[key].rationale == "because 1"
    with pytest.raises(ValueError, match="without a verdict"):
        jc.store(engine, [verdict(3, met=None)])
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.judge_cache)).scalar() == 2


def test_agreements_are_kept(engine: sa.Engine) -> None:
    first = jc.record_agreement(engine, judge_model="m", prompt_version=1, labels="l.jsonl", labels_sha256="f" * 64,
                                items=10, undetermined=1, agreement=0.7, kappa=0.4, details={"items": []})
    (row,) = jc.agreements(engine, "m")
    assert (row["agreement_id"], row["items"], row["kappa"], row["details"]) == (first, 10, 0.4, {"items": []})
    assert jc.agreements(engine, "other") == []
