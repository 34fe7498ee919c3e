"""Two writers recording overlapping new lake names at once (two runs of one suite finishing together) each
commit, on SQLite and PostgreSQL: on PostgreSQL, rows inserted in different orders by two transactions
would each hold one index entry the other waits for — a deadlock — so names are recorded in code order."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from assay.core.ids import name_code
from assay.storage.catalog import tables as t
from assay.storage.lake.codes import names_of, record_names


def test_two_writers_recording_overlapping_names_both_commit(engine: sa.Engine) -> None:
    keys = [f"behaviour_{i:03d}" for i in range(300)]
    forward = {name_code(k): k for k in keys}
    backward = {name_code(k): k for k in reversed(keys)}
    for attempt in range(5):
        with engine.begin() as conn:
            conn.execute(sa.delete(t.lake_names))
        start, errors = threading.Barrier(2), []

        def write(names: dict[int, str]) -> None:
            try:
                start.wait(timeout=30)  # before BEGIN: SQLite's writer holds the lock from its first statement on
                with engine.begin() as conn:
                    record_names(conn, names)
            except Exception as exc:  # noqa: BLE001  (the test reports whatever a writer hit)
                errors.append(exc)

        writers = [threading.Thread(target=write, args=(names,)) for names in (forward, backward)]
        for w in writers:
            w.start()
        for w in writers:
            w.join(timeout=60)
        assert not errors, f"attempt {attempt}: {errors[0]!r}"
        with engine.connect() as conn:
            assert names_of(conn) == forward
