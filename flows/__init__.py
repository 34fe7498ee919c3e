"""Prefect flows, the plain operations they wire together, and the ``assay`` command line.

Importing this package is cheap: Prefect, Polars and DuckDB are imported by the modules that need
them, when they are called.
"""
