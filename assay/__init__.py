"""Assay: test AI agents on runners you do not own.

The subpackages live in the repository's top-level folders: ``assay.core`` (``core/``), the
vocabulary; ``assay.storage`` (``storage/``), the catalog and the evidence lake;
``assay.adapters`` (``adapters/``), runners; ``assay.transforms`` (``transforms/``), Polars
projections; ``assay.flows`` (``flows/``), Prefect flows and the ``assay`` command.
"""

__version__ = "0.1.0"
