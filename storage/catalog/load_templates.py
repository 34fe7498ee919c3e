"""What loading a bundle reads and checks about templates, template groups and the cases templates made.

A team's bundle and ``assay template apply`` each own their cases: a case a template made belongs to
the template (re-applying updates it), a case a bundle defines belongs to the bundle. So a bundle may
not define a case under the key of a template-made case (it would overwrite it, and the next apply
would overwrite it back), and loading a suite keeps the template-made cases applied to it, after the
bundle's own (the bundle cannot name them: a suite names cases of its own bundle).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from assay.core.bundle import Bundle
from assay.core.names import listed

from . import tables as t


@dataclass
class TemplateState:
    """The catalog rows about templates a bundle could touch or must not collide with."""

    templates: dict[str, tuple[int, str]]
    """Template key -> (latest version, its content hash), for every stored template."""
    groups: dict[str, sa.Row]
    """Group key -> its row, for the groups the bundle declares."""
    made: dict[tuple[str, str], str]
    """(team id, case key) -> the template that made it, for the bundle's teams."""
    made_ids: frozenset[str]
    """The ids of those cases."""

    @classmethod
    def read(cls, conn: sa.Connection, bundle: Bundle) -> TemplateState:
        tpl, groups, tc = t.templates, t.template_groups, t.template_cases
        latest: dict[str, tuple[int, str]] = {}
        for key, version, h in conn.execute(sa.select(tpl.c.template_key, tpl.c.version, tpl.c.content_hash)):
            if version > latest.get(key, (0, ""))[0]:
                latest[key] = (version, h)
        wanted = [g.key for g in bundle.template_groups]
        group_rows = conn.execute(sa.select(groups).where(groups.c.group_key.in_(wanted))) if wanted else []
        made = conn.execute(
            sa.select(t.cases.c.team_id, t.cases.c.case_key, t.cases.c.case_id, tc.c.template_key)
            .join(tc, tc.c.case_id == t.cases.c.case_id)
            .where(t.cases.c.team_id.in_([team.id for team in bundle.teams]))
        ).all()
        return cls(
            templates=latest,
            groups={r.group_key: r for r in group_rows},
            made={(r.team_id, r.case_key): r.template_key for r in made},
            made_ids=frozenset(r.case_id for r in made),
        )


def template_problems(bundle: Bundle, state: TemplateState) -> list[tuple[str, str]]:
    """A group naming a template that is neither in the bundle nor loaded; a bundle case under the key of a
    case a template made."""
    known = {tpl.key for tpl in bundle.templates} | set(state.templates)
    problems = []
    for gi, group in enumerate(bundle.template_groups):
        for i, key in enumerate(group.templates):
            if key not in known:
                problems.append((f"template_groups[{gi}].templates[{i}]",
                                 f"template {key!r} is neither declared under `templates` in this bundle nor loaded "
                                 f"(known: {listed(sorted(known))}); declare it or fix the key"))  # fmt: skip
    for ti, team in enumerate(bundle.teams):
        for ci, case in enumerate(team.cases):
            template = state.made.get((team.id, case.key))
            if template is not None:
                problems.append((f"teams[{ti}].cases[{ci}].key",
                                 f"case {team.id}/{case.key} was made from template {template!r} by `assay template "
                                 f"apply`, which keeps it up to date; give this case another key (a bundle's cases and "
                                 f"a template's are kept apart)"))  # fmt: skip
    return problems


__all__ = ["TemplateState", "template_problems"]
