"""Assay: test AI agents on runners you do not own.

The subpackages live in the repository's top-level folders: ``assay.core`` (``core/``), the
vocabulary; ``assay.storage`` (``storage/``), the catalog and the evidence lake;
``assay.adapters`` (``adapters/``), runners; ``assay.transforms`` (``transforms/``), Polars
projections; ``assay.flows`` (``flows/``), Prefect flows and the ``assay`` command.

:func:`connect` is the analysts' door: DuckDB over the lake and the catalog. Importing ``assay`` stays
light; DuckDB, SQLAlchemy and Arrow are imported when :func:`connect` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from assay.core.settings import Settings

__version__ = "0.1.0"

__all__ = ["__version__", "connect"]


def connect(settings: "Settings | None" = None) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection over the workspace the settings describe (default: ``ASSAY_*``).

    It holds a view per lake table over the files the catalog's manifest lists, the catalog's tables
    (``runs``, ``run_criteria``, ``suites``, ``cases``, ``assertions``, ``criteria``, ``consumers``,
    ``teams``) and the derived views ``latest_outcomes``, ``current_results`` and ``verdicts_now``;
    every relation and column is listed in ``docs/reference/query.md``. Everything is read when it is
    called: connect again to see later runs. It writes nothing; a missing ``ASSAY_HOME``, or a catalog
    behind this Assay's schema (``assay init`` upgrades it), is an error.
    """
    from assay.flows.workspace import open_workspace
    from assay.storage.query import connect as connect_lake

    ws = open_workspace(settings)
    try:
        return connect_lake(ws.lake, catalog=True)
    finally:
        ws.close()
