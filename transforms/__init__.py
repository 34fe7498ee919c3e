"""Polars transforms: deterministic judging over many outcomes at once, criteria, projections.

Imports ``assay.core`` only; never ``assay.adapters`` or ``assay.storage``.
"""
