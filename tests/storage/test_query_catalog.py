"""The analysts' connection: the catalog's tables come through SQLAlchemy, and the reference names them all.

On SQLite, and on PostgreSQL when ``ASSAY_TEST_POSTGRES_URL`` is set (DuckDB's own scanners for either
are extensions, never loaded here).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from factories import seed_suite

from assay.storage import reference
from assay.storage.lake import Lake
from assay.storage.query import CATALOG_TABLES, QueryError, blank, connect, run

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "reference" / "query.md"


def _relations(con) -> dict[str, list[tuple[str, str]]]:
    names = [r[0] for r in con.sql("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
    return {n: [(c, k) for c, k, *_ in con.sql(f'DESCRIBE "{n}"').fetchall()] for n in names}


def test_the_committed_reference_is_what_the_schemas_say_now() -> None:
    assert COMMITTED.read_text() == reference.render(), (
        f"{COMMITTED.relative_to(COMMITTED.parents[2])} is out of date: regenerate it with `{reference.COMMAND}` "
        "(from the repository root) and commit the result"
    )


def test_the_reference_describes_exactly_what_connect_gives(lake: Lake) -> None:
    seed_suite(lake.engine)
    described = _relations(blank())
    assert _relations(connect(lake, catalog=True)) == described
    text = reference.render()
    for name, columns in described.items():
        assert f"### `{name}`" in text
        assert all(f"| `{column}` | " in text for column, _ in columns), name


def test_the_catalog_tables_read_through_sqlalchemy(lake: Lake) -> None:
    seed_suite(lake.engine, criteria={"required": ["a1"], "threshold": [{"keys": ["a1"], "min": 0.5}]})
    con = connect(lake, catalog=True)
    with lake.engine.connect() as conn:
        for table in CATALOG_TABLES:
            count = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            assert con.sql(f"SELECT count(*) FROM {table.name}").fetchall() == [(count,)], table.name
    [(required, low, created)] = con.sql(
        "SELECT spec->>'$.required[0]', (spec->'$.threshold[0].min')::DOUBLE, created_at FROM criteria"
    ).fetchall()
    assert (required, low) == ("a1", 0.5)
    assert created.tzinfo is not None and abs(created - datetime.now(UTC)).total_seconds() < 600
    assert con.sql("SELECT term, assertion_key, min FROM criteria_terms ORDER BY term").fetchall() == [
        ("required", "a1", None), ("threshold", "a1", 0.5)
    ]
    assert con.sql("SELECT typeof(params) FROM assertions").fetchall() == [("JSON",)]
    assert con.sql("SELECT count(*) FROM verdicts_now").fetchall() == [(0,)]  # no run yet


@pytest.mark.parametrize(("sql", "message"), [
    ("SELEC 1", 'query failed: Parser Error: syntax error at or near "SELEC"'),
    ("SELECT nope FROM runs", 'query failed: Binder Error: Referenced column "nope" not found'),
])
def test_a_refused_query_is_one_line_naming_the_problem(sql: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        run(blank(), sql)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert info.value.sql == sql and str(info.value).endswith("docs/reference/query.md")


def test_an_answer_prints_as_csv_and_json() -> None:
    answer = run(blank(), "SELECT 1 AS n, 1.5 AS x, NULL AS gone, [1, 2] AS l, 'a,b' AS s, '{\"k\": 1}'::JSON AS j, "
                          "TIMESTAMPTZ '2024-05-06 12:00:00+00' AS at")
    assert answer.to_csv().splitlines() == [
        "n,x,gone,l,s,j,at", '1,1.5,,"[1, 2]","a,b","{""k"": 1}",2024-05-06T12:00:00+00:00'
    ]
    assert answer.records() == [{"n": 1, "x": 1.5, "gone": None, "l": [1, 2], "s": "a,b", "j": {"k": 1},
                                 "at": "2024-05-06T12:00:00+00:00"}]
