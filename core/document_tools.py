"""The bodies of the documents of the commands that serve or ask rather than run: ``assay.fake-vendors``
(the fake vendors it started) and ``assay.query`` (a SQL question's answer)."""

from __future__ import annotations

from typing import Any

from .document_runs import Body


class FakeVendorServed(Body):
    """One fake vendor ``assay fake-vendors`` serves."""

    vendor: str
    """``vapi``, ``elevenlabs``, ``hamming`` or ``openai`` (the judge's and caller's model)."""
    url: str
    """Its base URL on loopback: what Assay's settings point at."""
    control: list[str]
    """Its steering endpoints (``URL/_fake/faults``, ``/_fake/inventory``, ``/_fake/requests``)."""


class FakeVendorsDoc(Body):
    """``assay fake-vendors --json``: printed once every fake answers; the command then serves until stopped."""

    vendors: list[FakeVendorServed]
    """The fakes started."""
    env: dict[str, str]
    """The ``ASSAY_*`` variables that point Assay at them (base URLs and the keys the fakes accept)."""
    env_file: str | None
    """Where the same variables were written as ``export`` lines (``--env-file``); null: not written."""


class QueryColumn(Body):
    """One column of a query's answer."""

    name: str
    """Its name."""
    type: str
    """Its DuckDB type (``VARCHAR``, ``BIGINT``, ``TIMESTAMP WITH TIME ZONE``, ``JSON``, ...)."""


class QueryDoc(Body):
    """``assay query --json``: the answer to a SQL question over the lake, the catalog and the derived views."""

    columns: list[QueryColumn]
    """The answer's columns, in order."""
    rows: list[dict[str, Any]]
    """One object per row, by column name: timestamps as ISO 8601 text, decimals as numbers, JSON as JSON."""
    row_count: int
    """How many rows."""
