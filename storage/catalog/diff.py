"""What loading a bundle would do: a plan of changes, and the summary of what it did.

:class:`BundleDiff` is what :func:`assay.storage.catalog.load.plan_load` returns (per kind: created,
updated, new version, unchanged, kept, each with the statements that carry it out);
:class:`LoadSummary` is what applying it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa

__all__ = ["ACTIONS", "KINDS", "TEMPLATE_KINDS", "PAST", "Action", "BundleDiff", "Change", "Kind", "LoadSummary", "Write"]

KINDS = ("teams", "consumers", "cases", "suites", "assertions", "criteria")
TEMPLATE_KINDS = ("templates", "template_groups")
"""Counted only when a bundle declares some (a bundle of teams alone counts as it always did)."""
Kind = Literal["teams", "consumers", "cases", "suites", "assertions", "criteria", "templates", "template_groups"]
Action = Literal["create", "update", "new_version", "unchanged", "kept"]
ACTIONS: tuple[str, ...] = ("create", "update", "new_version", "unchanged", "kept")
PAST = {
    "create": "created",
    "update": "updated",
    "new_version": "new_version",
    "unchanged": "unchanged",
    "kept": "kept",
}
_MARK = {"create": "+", "update": "~", "new_version": "+", "unchanged": "=", "kept": "."}


@dataclass(frozen=True)
class Write:
    """One statement of the plan: an insert, an update (by key) or a delete (by key)."""

    table: sa.Table
    op: Literal["insert", "update", "delete"]
    values: dict[str, Any] = field(default_factory=dict)
    key: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    """What loading does to one thing: a team, a consumer, a case, a suite, an assertion, a criteria, a
    template or a template group."""

    kind: Kind
    action: Action
    label: str
    """Names the thing: ``case acme-plumbing/burst-pipe``, ``acme-plumbing/main-line: criteria blueprint_ci``."""
    version: int | None = None
    """Assertions and criteria: the version written (create, new_version) or the latest stored (unchanged, kept)."""
    fields: tuple[str, ...] = ()
    """For an update: which fields change."""
    writes: tuple[Write, ...] = field(default=(), repr=False, compare=False)
    ref: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """What the change belongs to, as pairs: ``(("team", t), ("suite", s), ("consumer", c))``; read by ``scope``."""

    @property
    def scope(self) -> dict[str, str]:
        """The team, suite or case, assertion key and consumer this change is about (those that apply)."""
        return dict(self.ref)

    def line(self) -> str:
        """One line for a person: ``+ case acme/x``, ``~ suite acme/s (target)``, ``+ acme/s: criteria ci v2``."""
        text = f"{_MARK[self.action]} {self.label}"
        if self.version is not None:
            text += f" v{self.version}"
        if self.fields:
            text += f" ({', '.join(self.fields)})"
        if self.action == "kept":
            text += " kept: not in the bundle, left as it is"
        return text

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": self.kind, "action": self.action, "label": self.label}
        if self.version is not None:
            body["version"] = self.version
        if self.fields:
            body["fields"] = list(self.fields)
        return body


@dataclass(frozen=True)
class BundleDiff:
    """What loading a bundle would do, change by change, in the order it would be written."""

    file: str
    changes: tuple[Change, ...]

    def counts(self) -> dict[str, dict[str, int]]:
        """Per kind, how many things each action touches (every action present, zeros included)."""
        present = tuple(k for k in TEMPLATE_KINDS if any(c.kind == k for c in self.changes))
        counts = {kind: dict.fromkeys(ACTIONS, 0) for kind in KINDS + present}
        for c in self.changes:
            counts[c.kind][c.action] += 1
        return counts

    @property
    def has_changes(self) -> bool:
        return any(c.writes for c in self.changes)

    def new_versions(self) -> list[str]:
        """Assertions and criteria that get a version after their first (``... assertion x v2``)."""
        return [f"{c.label} v{c.version}" for c in self.changes if c.action == "new_version"]

    def kept(self) -> list[str]:
        """Things in the catalog that the bundle no longer mentions; loading leaves them as they are."""
        return [c.label + (f" v{c.version}" if c.version else "") for c in self.changes if c.action == "kept"]

    def lines(self, *, unchanged: bool = False) -> list[str]:
        """The plan for a person, one line per change (unchanged things only when asked)."""
        return [c.line() for c in self.changes if unchanged or c.action != "unchanged"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "has_changes": self.has_changes,
            "counts": self.counts(),
            "new_versions": self.new_versions(),
            "kept": self.kept(),
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass(frozen=True)
class LoadSummary:
    """What a load did: per kind, how many were created / updated / given a new version / unchanged / kept."""

    file: str
    counts: dict[str, dict[str, int]]
    """``{"cases": {"created": 4, "updated": 0, "new_version": 0, "unchanged": 0, "kept": 0}, ...}``."""
    new_versions: list[str]
    """``acme-plumbing/main-line: assertion declines_out_of_area v2``, ``... criteria blueprint_ci v2``."""
    kept: list[str]
    """Things the bundle no longer mentions, left in the catalog as they are."""

    @property
    def changed(self) -> bool:
        return any(n for c in self.counts.values() for a, n in c.items() if a in ("created", "updated", "new_version"))

    def to_dict(self) -> dict[str, Any]:
        """The body of the ``assay.load`` document (``--json``)."""
        return {
            "file": self.file,
            "changed": self.changed,
            "counts": self.counts,
            "new_versions": list(self.new_versions),
            "kept": list(self.kept),
        }
