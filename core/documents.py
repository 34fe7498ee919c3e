"""Machine-readable documents: every one carries a schema id, a revision and a stability tier."""

from __future__ import annotations

from typing import Any, Literal

Stability = Literal["experimental", "stable", "deprecated"]

DOCUMENTS: dict[str, tuple[int, Stability]] = {
    "assay.run": (1, "experimental"),
    "assay.runs": (1, "experimental"),
    "assay.load": (1, "experimental"),
    "assay.init": (1, "experimental"),
    "assay.demo": (1, "experimental"),
    "assay.reap": (1, "experimental"),
    "assay.bench": (1, "experimental"),
    "assay.judge": (1, "experimental"),
    "assay.rejudge": (1, "experimental"),
    "assay.rescore": (1, "experimental"),
    "assay.verdicts": (1, "experimental"),
    "assay.plan": (1, "experimental"),
}
"""Known document schemas: id -> (current revision, stability)."""


def document(schema: str, body: dict[str, Any]) -> dict[str, Any]:
    """Wrap ``body`` with its schema id, revision and stability."""
    revision, stability = DOCUMENTS[schema]
    return {"schema": schema, "revision": revision, "stability": stability, **body}
