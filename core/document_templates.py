"""The bodies of the documents about templates: ``assay.template`` (apply), ``assay.template.ls``, and the
part of ``assay.plan`` that says what a template change means for the cases made from it."""

from __future__ import annotations

from typing import Literal

from .document_runs import Body


class AppliedCase(Body):
    """One case a template made (or brought up to date) for the team."""

    case: str
    """TEAM/CASE; the case's key is the template's."""
    template: str
    """The template it was made from (its ``source_recipe_id``)."""
    version: int
    """The template version applied."""
    action: Literal["created", "updated", "unchanged"]
    """What applying did to it."""
    changes: list[str]
    """What changed, one line each (the case, its assertions, its template record, its suite)."""


class TemplateApplyDoc(Body):
    """``assay template apply``."""

    group: str
    """The template group applied."""
    team: str
    """The team the cases belong to."""
    facts_file: str
    """The team's facts, as named on the command line."""
    suite: str | None
    """TEAM/SUITE the cases were added to, if any."""
    changed: bool
    """Whether anything was written."""
    cases: list[AppliedCase]
    """One per template of the group, in the group's order."""


class TemplateRow(Body):
    """A template: its latest version and what it made."""

    template: str
    """The template's key."""
    version: int
    """Its latest version."""
    title: str
    """One line naming the recipe."""
    placeholders: dict[str, str]
    """Placeholder name -> its type."""
    cases: int
    """Cases made from it, in every team."""
    teams: int
    """Teams those cases belong to."""
    behind: list[str]
    """TEAM/CASE made from an earlier version: they keep their content until the group is applied again."""


class GroupRow(Body):
    """A template group (starter pack)."""

    group: str
    """The group's key."""
    title: str
    """One line naming the pack."""
    templates: list[str]
    """Its templates, in order."""


class TemplateLsDoc(Body):
    """``assay template ls``."""

    templates: list[TemplateRow]
    """Every template, by key."""
    groups: list[GroupRow]
    """Every template group, by key."""


class TemplatePlan(Body):
    """A template that loading the bundle gives a new version, and the cases made from an earlier one."""

    template: str
    """The template's key."""
    from_version: int
    """The latest version stored."""
    to_version: int
    """The version loading would write."""
    cases: list[str]
    """TEAM/CASE made from it."""
    teams: int
    """How many teams those cases belong to."""
    groups: list[str]
    """The template groups that hold it (``assay template apply GROUP`` re-applies it)."""
    line: str
    """The same, for a person."""
