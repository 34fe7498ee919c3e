"""Machine-readable documents: every one carries a schema id, a revision and a stability tier."""

from __future__ import annotations

from typing import Any, Literal

Stability = Literal["experimental", "stable", "deprecated"]

_COMMANDS = (
    "run", "runs", "load", "init", "demo", "reap", "bench", "judge", "rejudge", "rescore", "verdicts", "plan",
    "lake.migrate", "lake.vacuum", "lake.compact", "query", "collect", "judge-agreement",
)

DOCUMENTS: dict[str, tuple[int, Stability]] = {f"assay.{name}": (1, "experimental") for name in _COMMANDS}
"""Known document schemas: id -> (current revision, stability)."""


def document(schema: str, body: dict[str, Any]) -> dict[str, Any]:
    """Wrap ``body`` with its schema id, revision and stability."""
    revision, stability = DOCUMENTS[schema]
    return {"schema": schema, "revision": revision, "stability": stability, **body}
