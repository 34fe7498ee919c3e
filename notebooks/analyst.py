"""What every analyst notebook here does first.

Charts are Altair (Vega-Lite) charts sent to Jupyter as Vega-Lite documents, which JupyterLab draws
itself: nothing is fetched from the network. :func:`open_lake` opens :func:`assay.connect` over the
workspace of ``ASSAY_HOME`` and says when the projected tables lag behind the runs (``assay project``
brings them up to date; ``project=True`` does the same from the notebook, and is the only thing here
that writes).
"""

from __future__ import annotations

import altair as alt
import duckdb
import polars as pl

import assay

alt.renderers.enable("mimetype")

_UNPROJECTED = """SELECT count(*) FROM runs
WHERE finalised_at IS NOT NULL AND run_id NOT IN (SELECT run_id FROM run_costs)"""


def open_lake(*, project: bool = False, projected: bool = True) -> duckdb.DuckDBPyConnection:
    """DuckDB over the workspace's lake and catalog; with ``project``, after one projection pass. A notebook
    that reads no projected table passes ``projected=False``: it is not told to run ``assay project``."""
    from assay.flows.workspace import open_workspace

    ws = open_workspace()
    try:
        print(f"Workspace: {ws.settings.home.resolve()}")
        if project:
            from assay.flows.projection_flows import project_all

            done = project_all(ws)
            print(f"Projected {done['runs']} run(s) of {done['suites']} suite(s).")
    finally:
        ws.close()
    con = assay.connect()
    (runs,) = row(con, "SELECT count(*) FROM runs WHERE finalised_at IS NOT NULL")
    (behind,) = row(con, _UNPROJECTED)
    if not runs:
        print("No finalised run yet: run a suite (`assay run TEAM/SUITE`), or `make demo` for the demo's.")
    elif behind and projected:
        print(f"{behind} of {runs} finalised run(s) are not in the projected tables yet: run `assay project` "
              "(or set PROJECT = True above and run the notebook again).")
    elif projected:
        print(f"{runs} finalised run(s), all projected (judging since the last `assay project` shows after the next).")
    else:
        print(f"{runs} finalised run(s).")
    return con


def table(con: duckdb.DuckDBPyConnection, sql: str, what: str, params: list | None = None) -> pl.DataFrame:
    """The answer to ``sql`` (its ``?`` bound to ``params``) as a Polars frame; when it has no rows, says so:
    ``what`` tells what is missing."""
    frame = con.sql(sql, params=params).pl()
    if frame.is_empty():
        print(f"No rows: {what}.")
    return frame


def row(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple:
    """The first row of the answer to ``sql`` (its ``?`` bound to ``params``); ``None`` when there is none."""
    rows = con.sql(sql, params=params).limit(1).fetchall()
    return rows[0] if rows else None
