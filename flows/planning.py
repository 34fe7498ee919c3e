"""``assay plan BUNDLE``: before anything is loaded, which tier each suite and consumer would need.

- **re-run** when the thing under test changed: a suite's target or its cases, or a case's situation;
- **re-judge** when assertions a consumer counts were added or reworded (how many outcomes, how many
  judge calls);
- **re-score** when only a consumer's criteria changed (a query);
- **none** otherwise. Never more than the change needs: a reworded assertion that a consumer does not
  count leaves that consumer's verdict where it is, and an edit made in place that no run reads (a
  suite's name or tags, a case's title) is listed as such (``in_place``), with nothing to redo.

A template given a new version changes no case: the plan names the cases made from it (``templates``),
which keep their content until ``assay template apply`` re-applies the template.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.bundle import read_bundle
from assay.storage.catalog import tables as t
from assay.storage.catalog.load import Change, plan_load

from .workspace import Workspace

TIERS = ("none", "re-score", "re-judge", "re-run")


def _history(ws: Workspace, team: str, suite: str) -> tuple[list[str], dict[str, int]]:
    """Finalised runs of a stored suite, and their case runs per case key."""
    with ws.engine.connect() as conn:
        run_ids = list(
            conn.execute(
                sa.select(t.runs.c.run_id)
                .join(t.suites, t.suites.c.suite_id == t.runs.c.suite_id)
                .where(t.suites.c.team_id == team, t.suites.c.suite_key == suite, t.runs.c.finalised_at.is_not(None))
            ).scalars()
        )
    if not run_ids:
        return [], {}
    counts = ws.lake.scan("case_runs", runs=run_ids).filter(pl.col("run_id").is_in(run_ids)).group_by("case_key").len().collect()
    return run_ids, dict(counts.iter_rows())


def plan(ws: Workspace, path: str) -> dict[str, Any]:
    """What loading ``path`` would need, per suite and consumer. Reads; writes nothing."""
    bundle = read_bundle(path)
    with ws.engine.connect() as conn:
        diff = plan_load(conn, bundle)
    changed = [c for c in diff.changes if c.action in ("create", "update", "new_version")]
    judge = bool(ws.settings.judge_base_url and ws.settings.judge_model)
    suites = []
    for team in bundle.teams:
        for suite in team.suites:
            suites.append(_plan_suite(ws, team.id, suite, changed, judge))
    templates = _plan_templates(ws, bundle, [c for c in changed if c.kind == "templates" and c.action == "new_version"])
    return {"file": str(path), "changes": [c.line() for c in changed], "suites": suites, "templates": templates}


def _plan_templates(ws: Workspace, bundle: Any, versioned: list[Change]) -> list[dict[str, Any]]:
    """Per template given a new version: the cases made from it, which a load leaves as they are."""
    if not versioned:
        return []
    from assay.storage.catalog.templates import made_from

    keys = [c.scope["template"] for c in versioned]
    with ws.engine.connect() as conn:
        made = made_from(conn, keys)
        stored = {r.group_key: r.templates for r in conn.execute(sa.select(t.template_groups))}
    groups = stored | {g.key: list(g.templates) for g in bundle.template_groups}
    out = []
    for change, key in zip(versioned, keys, strict=True):
        cases = [m["case"] for m in made.get(key, [])]
        teams = len({m["team"] for m in made.get(key, [])})
        holding = sorted(g for g, members in groups.items() if key in members)
        line = f"template {key} changed (v{change.version - 1} -> v{change.version}): "
        if cases:
            group = holding[0] if len(holding) == 1 else "GROUP"
            team = made[key][0]["team"] if teams == 1 else "TEAM"
            again = f"`assay template apply {group} --team {team} --facts FILE`"
            line += (f"{len(cases)} case(s) in {teams} team(s) were made from it ({', '.join(cases)}); they keep "
                     f"their content until {again} re-applies it")
        else:
            line += "no case was made from it yet"
        out.append({"template": key, "from_version": change.version - 1, "to_version": change.version,
                    "cases": cases, "teams": teams, "groups": holding, "line": line})
    return out


def _plan_suite(ws: Workspace, team: str, suite: Any, changed: list[Change], judge: bool) -> dict[str, Any]:
    mine = set(suite.cases)

    def about(c: Change) -> bool:
        s = c.scope
        return s.get("team") == team and (s.get("suite") == suite.key or s.get("case") in mine)

    relevant = [c for c in changed if about(c)]
    rerun = [
        c.line() for c in relevant
        if (c.kind == "suites" and (c.action == "create" or {"target", "cases"} & set(c.fields)))
        or (c.kind == "cases" and c.action == "update" and "situation" in c.fields)
    ]  # fmt: skip
    in_place = [c.line() for c in relevant if c.action == "update" and c.line() not in rerun]
    assertions = [c for c in relevant if c.kind == "assertions"]
    run_ids, per_case = _history(ws, team, suite.key)
    total = sum(per_case.values())

    def reach(c: Change) -> int:  # case runs an assertion change applies to
        return total if "suite" in c.scope else per_case.get(c.scope["case"], 0)

    rejudge = {
        "assertions": [c.line() for c in assertions],
        "outcomes": total if any("suite" in c.scope for c in assertions)
        else sum(per_case.get(case, 0) for case in {c.scope["case"] for c in assertions}),
        "results": sum(reach(c) for c in assertions),
        "judge_calls": sum(reach(c) for c in assertions if c.scope.get("mechanism") == "rubric"),
        "judge_configured": judge,
    }
    changed_keys = {c.scope["assertion"] for c in assertions}
    criteria_changed = {c.scope["consumer"]: c.line() for c in relevant if c.kind == "criteria"}
    consumers = []
    for consumer, spec in sorted(suite.criteria.items()):
        counted = (set(spec.required) | {k for g in spec.threshold for k in g.keys}) & changed_keys
        if rerun:
            tier, why = "re-run", "the thing under test changed"
        elif counted:
            tier, why = "re-judge", f"counted assertions changed: {', '.join(sorted(counted))}"
            if consumer in criteria_changed:
                why += f"; and its criteria ({criteria_changed[consumer].split(': ')[-1]})"
        elif consumer in criteria_changed:
            tier, why = "re-score", criteria_changed[consumer]
        else:
            tier, why = "none", "nothing it counts changed"
        consumers.append({"consumer": consumer, "tier": tier, "why": why})
    tier = max([c["tier"] for c in consumers] + (["re-judge"] if assertions else []) + (["re-run"] if rerun else []),
               key=TIERS.index, default="none")
    return {
        "suite": f"{team}/{suite.key}", "tier": tier, "rerun_reasons": rerun, "in_place": in_place,
        "history": {"runs": len(run_ids), "case_runs": total}, "rejudge": rejudge, "consumers": consumers,
    }
