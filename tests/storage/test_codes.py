"""The lake's 64-bit codes: the column form agrees with the scalar rule, and names are kept once, even under a race."""

from __future__ import annotations

import threading

import polars as pl
import pytest
import sqlalchemy as sa

from assay.core.errors import EvidenceError
from assay.core.ids import id_code, name_code, new_id
from assay.storage.catalog import tables as t
from assay.storage.lake.codes import id_codes, name_codes, names_of, record_names


def test_column_codes_agree_with_the_scalar_rules() -> None:
    ids = [new_id() for _ in range(200)] + ["ffffffffffffffff" + "0" * 16, "0" * 32]
    frame = pl.DataFrame({"id": ids, "name": [f"case-{i % 7}" for i in range(len(ids))]})
    expr, names = name_codes(frame, "name")
    coded = frame.select(id_codes("id").alias("id"), expr.alias("name"))
    assert coded["id"].to_list() == [id_code(i) for i in ids]
    assert coded["name"].to_list() == [name_code(n) for n in frame["name"]]
    assert names == {name_code(n): n for n in set(frame["name"])}


def test_names_are_kept_once_and_a_clash_is_refused(engine: sa.Engine) -> None:
    names = {name_code("greeting"): "greeting", name_code("refund"): "refund"}
    with engine.begin() as conn:
        record_names(conn, names)
        record_names(conn, names)  # again: nothing new, nothing refused
        assert names_of(conn) == names
        with pytest.raises(EvidenceError, match="share the 64-bit code"):
            record_names(conn, {name_code("greeting"): "not-greeting"})


def test_two_writers_recording_the_same_new_name_both_succeed(engine: sa.Engine) -> None:
    """The first writer holds its insert uncommitted while the second records the same name."""
    names = {name_code("escalation"): "escalation"}
    errors: list[BaseException] = []
    first = engine.connect()
    first.begin()
    record_names(first, names)

    def second() -> None:
        try:
            with engine.begin() as conn:
                record_names(conn, names)
        except BaseException as exc:  # reported to the test thread below
            errors.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(0.5)  # the second writer now waits on the first (PostgreSQL: the row; SQLite: the write lock)
    first.commit()
    first.close()
    thread.join(30)
    assert not thread.is_alive()
    assert errors == []
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.lake_names)).scalar() == 1
