"""Applying a template group to a team (``assay template apply``), listing templates, and the cases each made.

:func:`apply_group` fills each template of the group with the team's facts and writes one case per
template, keyed by the template, with ``source_recipe_id`` set to it: the cases go through the same
planning as a bundle's (:func:`.load.plan_load`), so a case whose content changes is updated in place
(every case run keeps the snapshot it executed) and a reworded assertion becomes a new version. Which
template version and facts made each case is kept in ``template_cases``. Applying again with the same
template versions and facts changes nothing; after a template changed, it brings the cases up to date.
All in one transaction: a refused apply writes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from assay.core.bundle import SCHEMA, Bundle, CaseDef
from assay.core.bundle_templates import TemplateDef
from assay.core.errors import NotFoundError, TemplateError
from assay.core.ids import content_hash
from assay.core.template_facts import instantiate_all

from . import tables as t
from .load import apply_load, plan_load
from .names import check_team
from .runs import find_suite

_LOAD_TEMPLATES = ("load a bundle that declares it under `template_groups` (`assay load BUNDLE`); "
                   "`assay template ls` lists them")


def latest_templates(conn: sa.Connection, keys: list[str] | None = None) -> dict[str, sa.Row]:
    """The latest version of each stored template (of ``keys``, when given), by key."""
    tpl = t.templates
    latest = sa.select(tpl.c.template_key, sa.func.max(tpl.c.version).label("version")).group_by(tpl.c.template_key)
    if keys is not None:
        latest = latest.where(tpl.c.template_key.in_(keys))
    sub = latest.subquery()
    rows = conn.execute(sa.select(tpl).join(sub, sa.and_(
        tpl.c.template_key == sub.c.template_key, tpl.c.version == sub.c.version)).order_by(tpl.c.template_key))
    return {r.template_key: r for r in rows}


def template_def(row: sa.Row) -> TemplateDef:
    """A stored template version as its model."""
    return TemplateDef.model_validate({"key": row.template_key, **row.content})


def made_from(conn: sa.Connection, keys: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per template key: the cases it made (``team``, ``case``, the template ``version`` applied), by team and key."""
    tc, tpl, c = t.template_cases, t.templates, t.cases
    q = (sa.select(tc.c.template_key, c.c.team_id, c.c.case_key, tpl.c.version)
         .join(c, c.c.case_id == tc.c.case_id).join(tpl, tpl.c.template_id == tc.c.template_id)
         .order_by(c.c.team_id, c.c.case_key))  # fmt: skip
    if keys is not None:
        q = q.where(tc.c.template_key.in_(keys))
    made: dict[str, list[dict[str, Any]]] = {}
    for key, team, case, version in conn.execute(q):
        made.setdefault(key, []).append({"team": team, "case": f"{team}/{case}", "version": version})
    return made


def apply_group(engine: sa.Engine, group: str, team: str, facts: dict[str, Any], facts_file: str,
                suite: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Make (or bring up to date) one case per template of ``group`` for ``team``; add them to ``suite``."""
    with engine.begin() as conn:
        group_row = conn.execute(sa.select(t.template_groups).where(t.template_groups.c.group_key == group)).first()
        if group_row is None:
            known = conn.execute(sa.select(t.template_groups.c.group_key).order_by(t.template_groups.c.group_key))
            raise NotFoundError("template group", group, _LOAD_TEMPLATES, known=list(known.scalars()))
        check_team(conn, team)
        suite_row = find_suite(conn, suite.split("/", 1)[-1], team=team) if suite else None
        rows = latest_templates(conn, list(group_row.templates))
        missing = [k for k in group_row.templates if k not in rows]
        if missing:  # a group loaded before its templates: the load checks it, so only a hand-edited catalog
            raise TemplateError(f"template group {group!r}", [f"template {k!r} is not loaded; load the bundle that "
                                                                f"declares it (`assay load BUNDLE`)" for k in missing])
        templates = [template_def(rows[k]) for k in group_row.templates]
        cases = instantiate_all(group, templates, facts, facts_file)
        _refuse_bundle_cases(conn, group, team, [c.key for c in cases])
        diff = plan_load(conn, _bundle(conn, team, cases, facts_file), by_template=True)
        apply_load(conn, diff)
        ids = dict(conn.execute(sa.select(t.cases.c.case_key, t.cases.c.case_id).where(
            t.cases.c.team_id == team, t.cases.c.case_key.in_([c.key for c in cases]))).all())
        recorded = _record(conn, [(ids[tpl.key], rows[tpl.key], tpl.facts_with_defaults(facts)) for tpl in templates])
        joined = _join_suite(conn, suite_row.suite_id, [ids[c.key] for c in cases]) if suite_row is not None else set()
    out = []
    for tpl in templates:
        key, case_id = tpl.key, ids[tpl.key]
        lines = [c.line() for c in diff.changes if c.writes and (c.scope.get("team"), c.scope.get("case")) == (team, key)]
        lines += [recorded[case_id]] if case_id in recorded else []
        lines += [f"+ in suite {team}/{suite_row.suite_key}"] if case_id in joined else []
        created = any(c.kind == "cases" and c.action == "create" and c.scope.get("case") == key for c in diff.changes)
        action = "created" if created else "updated" if lines else "unchanged"
        out.append({"case": f"{team}/{key}", "template": key, "version": rows[key].version, "action": action,
                    "changes": lines})  # fmt: skip
    return {"group": group, "team": team, "facts_file": facts_file,
            "suite": f"{team}/{suite_row.suite_key}" if suite_row is not None else None,
            "changed": any(c["action"] != "unchanged" for c in out), "cases": out}  # fmt: skip


def _refuse_bundle_cases(conn: sa.Connection, group: str, team: str, keys: list[str]) -> None:
    """A case a bundle defines is the bundle's: a template never overwrites it."""
    c, tc = t.cases, t.template_cases
    taken = conn.execute(sa.select(c.c.case_key).outerjoin(tc, tc.c.case_id == c.c.case_id).where(
        c.c.team_id == team, c.c.case_key.in_(keys), tc.c.case_id.is_(None)).order_by(c.c.case_key)).scalars().all()
    if taken:
        raise TemplateError(f"template group {group!r}", [
            f"case {team}/{k} was loaded from a bundle, and template {k!r} would make a case with that key; a template "
            f"never overwrites a bundle's case: rename or remove the bundle's case and load it again" for k in taken])


def _bundle(conn: sa.Connection, team: str, cases: list[CaseDef], file: str) -> Bundle:
    """The cases as a bundle of one team (its stored name), to plan them as a load would."""
    name = conn.execute(sa.select(t.teams.c.name).where(t.teams.c.team_id == team)).scalar_one()
    bundle = Bundle.model_validate({"schema": SCHEMA, "teams": [
        {"id": team, "name": name, "cases": [case.model_dump(mode="json") for case in cases]}]})
    bundle._file = file
    return bundle


def _record(conn: sa.Connection, made: list[tuple[str, sa.Row, dict[str, Any]]]) -> dict[str, str]:
    """Keep which template version and facts made each case; return a line per case whose record changed."""
    tc, now = t.template_cases, datetime.now(UTC)
    stored = {r.case_id: r for r in conn.execute(sa.select(tc).where(tc.c.case_id.in_([m[0] for m in made])))}
    lines = {}
    for case_id, template, facts in made:
        values = {"template_id": template.template_id, "template_key": template.template_key, "facts": facts,
                  "facts_hash": content_hash(facts), "applied_at": now}  # fmt: skip
        row = stored.get(case_id)
        if row is None:
            conn.execute(tc.insert().values(case_id=case_id, created_at=now, **values))
            lines[case_id] = f"+ made from template {template.template_key} v{template.version}"
        elif (row.template_id, row.facts_hash) != (template.template_id, values["facts_hash"]):
            conn.execute(tc.update().where(tc.c.case_id == case_id).values(**values))
            what = "its facts changed" if row.template_id == template.template_id else f"now v{template.version}"
            lines[case_id] = f"~ made from template {template.template_key} ({what})"
    return lines


def _join_suite(conn: sa.Connection, suite_id: str, case_ids: list[str]) -> set[str]:
    """Add the cases the suite does not hold yet, at its end; return those added."""
    sc = t.suite_cases
    held = dict(conn.execute(sa.select(sc.c.case_id, sc.c.position).where(sc.c.suite_id == suite_id)).all())
    new = [c for c in case_ids if c not in held]
    start = max(held.values(), default=-1) + 1
    if new:
        rows = [{"suite_id": suite_id, "case_id": c, "position": start + i} for i, c in enumerate(new)]
        conn.execute(sc.insert(), rows)
        conn.execute(t.suites.update().where(t.suites.c.suite_id == suite_id).values(updated_at=datetime.now(UTC)))
    return set(new)


def list_templates(engine: sa.Engine) -> dict[str, Any]:
    """Every template (its latest version, placeholders, the cases it made and how many are behind) and group."""
    with engine.connect() as conn:
        rows = latest_templates(conn)
        made = made_from(conn)
        groups = conn.execute(sa.select(t.template_groups).order_by(t.template_groups.c.group_key)).all()
    templates = []
    for key, row in rows.items():
        cases = made.get(key, [])
        templates.append({
            "template": key, "version": row.version, "title": row.title,
            "placeholders": {n: p["type"] for n, p in row.content.get("placeholders", {}).items()},
            "cases": len(cases), "teams": len({c["team"] for c in cases}),
            "behind": [c["case"] for c in cases if c["version"] < row.version],
        })  # fmt: skip
    return {"templates": templates,
            "groups": [{"group": g.group_key, "title": g.title, "templates": list(g.templates)} for g in groups]}


__all__ = ["apply_group", "latest_templates", "list_templates", "made_from", "template_def"]
