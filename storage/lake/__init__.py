"""The evidence lake: append-only, hive-partitioned Parquet tables, validated on write.

``Lake`` stages, commits and scans the files; the catalog's manifest (:mod:`.manifest`) says which
files make up each table, and :mod:`.integrity` checks each file against it; ``TABLES`` is the registry of tables (schema, natural key, pandera checks);
:mod:`assay.storage.query` puts DuckDB views over the same files.
"""

from . import codes, integrity, manifest
from .integrity import FileProblem, LakeFileError
from .manifest import FileFilter, LakeFile
from .store import Lake, LakeLayoutError
from .schema import PARTITIONS, LakeTable, lake_table
from .tables import ASSERTION_RESULTS, CASE_RUNS, CURRENT_RESULTS, OUTCOMES, RUNNER_EVALUATIONS, TABLES

__all__ = [
    "ASSERTION_RESULTS", "CASE_RUNS", "CURRENT_RESULTS", "OUTCOMES", "PARTITIONS", "RUNNER_EVALUATIONS", "TABLES",
    "FileFilter", "FileProblem", "Lake", "codes", "integrity", "manifest", "LakeFile", "LakeFileError", "LakeLayoutError",
    "LakeTable", "lake_table",
]
