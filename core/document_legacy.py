"""The body of ``assay.legacy``: what ``assay legacy import`` brought in."""

from __future__ import annotations

from .document_runs import Body


class LegacyImported(Body):
    """What this import wrote."""

    cases: int
    """Legacy cases imported as cases."""
    suites: int
    """Suites created (one per lineage, team and target)."""
    runs: int
    """Legacy runs imported as final runs."""
    case_runs: int
    """Case runs imported (one per legacy result)."""
    results: int
    """Opaque results imported (exactly one per legacy result, evaluator ``legacy:<lineage>``)."""


class LegacyAlready(Body):
    """What an earlier import had brought in already (left as it is)."""

    cases: int
    """Cases already in the catalog."""
    runs: int
    """Runs already imported (by request id ``legacy:<lineage>:<legacy run id>``)."""


class LegacyDoc(Body):
    """``assay legacy import``: one lineage's export imported as history."""

    lineage: str
    """prompt_test, simulation_v2, hamming_voice or chat_lane."""
    path: str
    """The export's directory."""
    team: str | None
    """The --team given (null: each row's team_id)."""
    imported: LegacyImported
    """What this import wrote."""
    already_imported: LegacyAlready
    """What was there already."""
    skipped_rows: int
    """Rows of the shared Hamming tables that belong to the other lane (chat- ids or not)."""
    runs: list[str]
    """The ids of the runs imported now."""
