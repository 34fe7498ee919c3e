"""The evidence lake: append-only, hive-partitioned Parquet tables, validated on write.

``Lake`` writes and scans the files; ``TABLES`` is the registry of tables (schema, natural key,
pandera checks); :mod:`assay.storage.query` puts DuckDB views over the same files.
"""

from .store import Lake
from .tables import (
    ASSERTION_RESULTS,
    CASE_RUNS,
    OUTCOMES,
    PARTITIONS,
    RUNNER_EVALUATIONS,
    TABLES,
    LakeTable,
    lake_table,
)

__all__ = [
    "ASSERTION_RESULTS", "CASE_RUNS", "OUTCOMES", "PARTITIONS", "RUNNER_EVALUATIONS", "TABLES",
    "Lake", "LakeTable", "lake_table",
]
