"""The evidence lake: append-only, hive-partitioned Parquet tables, validated on write.

``Lake`` stages, commits and scans the files; the catalog's manifest (:mod:`.manifest`) says which
files make up each table; ``TABLES`` is the registry of tables (schema, natural key, pandera checks);
:mod:`assay.storage.query` puts DuckDB views over the same files.
"""

from . import codes, manifest
from .manifest import FileFilter, LakeFile
from .store import Lake, LakeLayoutError
from .schema import PARTITIONS, LakeTable, lake_table
from .tables import ASSERTION_RESULTS, CASE_RUNS, CURRENT_RESULTS, OUTCOMES, RUNNER_EVALUATIONS, TABLES

__all__ = [
    "ASSERTION_RESULTS", "CASE_RUNS", "CURRENT_RESULTS", "OUTCOMES", "PARTITIONS", "RUNNER_EVALUATIONS", "TABLES",
    "FileFilter", "Lake", "codes", "manifest", "LakeFile", "LakeLayoutError", "LakeTable", "lake_table",
]
