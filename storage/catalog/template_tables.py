"""The catalog's tables for templates and starter packs: outside the eleven tables of the record.

``templates`` holds each version of a shareable recipe (immutable: a change is a new version);
``template_groups`` the starter packs (editable); ``template_cases`` which recipe, at which version and
with which facts, made which team's case (``assay template apply``). Cases themselves carry only
``source_recipe_id``, the template's key, as any case may.
"""

from __future__ import annotations

import sqlalchemy as sa

from .tables import UtcDateTime, _created, _ref, _stamps, _versioned, metadata

templates = sa.Table(
    "templates",
    metadata,
    sa.Column("template_id", sa.String(32), primary_key=True),
    sa.Column("template_key", sa.String(64), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("content", sa.JSON, nullable=False, doc="description, placeholders and case, as the bundle has them"),
    *_versioned("content_hash", "template_key", constraint="uq_templates_key_version"),
)

template_groups = sa.Table(
    "template_groups",
    metadata,
    sa.Column("group_key", sa.String(64), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("templates", sa.JSON, nullable=False, doc="the template keys of the pack, in order"),
    *_stamps(),
)

template_cases = sa.Table(
    "template_cases",
    metadata,
    _ref("case_id", "cases.case_id", primary_key=True),
    _ref("template_id", "templates.template_id"),
    sa.Column("template_key", sa.String(64), nullable=False),
    sa.Column("facts", sa.JSON, nullable=False),
    sa.Column("facts_hash", sa.String(64), nullable=False),
    sa.Column("applied_at", UtcDateTime(), nullable=False),
    _created(),
)
"""Which template version made a case, with the facts it was filled with; ``assay template apply`` keeps it."""
sa.Index("ix_template_cases_key", template_cases.c.template_key)

__all__ = ["template_cases", "template_groups", "templates"]
