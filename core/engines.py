"""One thread budget for the in-process engines: Assay's DuckDB connections take as many threads as Polars' pool.

Polars sizes its pool once per process, from ``POLARS_MAX_THREADS`` (default: the machine's cores);
DuckDB would size its own from the cores as well, whatever Polars was told. Giving DuckDB the same
number makes one setting bound both. A Dask worker of one thread gets ``POLARS_MAX_THREADS=1`` (the
temporary cluster of :mod:`assay.flows.task_runners`), so a wide job's worker processes do not each run
two engines' worth of threads on the same cores -- as Dask itself pins OpenMP, MKL and OpenBLAS to one
thread in its workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["DUCKDB_CONFIG", "duckdb_connect"]

DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""No extension is ever installed or loaded (ICU, which gives TimeZone, and JSON are built in)."""


def duckdb_connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that loads no extension and uses as many threads as Polars' pool."""
    import duckdb
    import polars as pl

    return duckdb.connect(database, config={**DUCKDB_CONFIG, "threads": pl.thread_pool_size()})
