"""What the catalog holds, as ``assay ls`` lists it: teams, suites, cases, assertions, criteria, consumers;
and which suites carry a tag (:func:`suites_tagged`, what the nightly sweep runs).

Each reader returns plain rows (dicts), optionally narrowed to one team or one suite; an unknown team
or suite is an error naming the nearest and the known ones. A suite's assertions are its own and those
of its cases (every assertion that applies to it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import sqlalchemy as sa

from . import tables as t
from .names import check_team
from .runs import find_suite


@dataclass(frozen=True)
class Scope:
    """Which part of the catalog to list: everything, one team, or one suite (``team/suite``)."""

    team: str | None = None
    suite_id: str | None = None
    suite: str | None = None

    @classmethod
    def resolve(cls, conn: sa.Connection, team: str | None, suite: str | None) -> Scope:
        if suite:
            row = find_suite(conn, suite, team)
            return cls(team=row.team_id, suite_id=row.suite_id, suite=f"{row.team_id}/{row.suite_key}")
        return cls(team=check_team(conn, team) if team else None)

    def to_dict(self) -> dict[str, str | None]:
        return {"team": self.team, "suite": self.suite}


def _suite_rows(conn: sa.Connection, scope: Scope) -> list[sa.Row]:
    s = t.suites
    q = sa.select(s.c.suite_id, s.c.team_id, s.c.suite_key, s.c.name, s.c.target_kind, s.c.target, s.c.tags,
                  s.c.runners)
    if scope.team:
        q = q.where(s.c.team_id == scope.team)
    if scope.suite_id:
        q = q.where(s.c.suite_id == scope.suite_id)
    return list(conn.execute(q.order_by(s.c.team_id, s.c.suite_key)))


def _members(conn: sa.Connection) -> dict[str, list[str]]:
    """suite id -> its case ids, in run order."""
    sc = t.suite_cases
    members: dict[str, list[str]] = defaultdict(list)
    for r in conn.execute(sa.select(sc.c.suite_id, sc.c.case_id).order_by(sc.c.suite_id, sc.c.position)):
        members[r.suite_id].append(r.case_id)
    return members


def _target_label(kind: str, target: dict[str, Any]) -> str:
    """A compiled config's name, a call set's file name, or an exam's directory."""
    if kind == "config":
        return str((target.get("config") or {}).get("name", "compiled config"))
    if kind == "exam":
        return str((target.get("exam") or {}).get("dir", "exam"))
    return PurePath(str((target.get("call_set") or {}).get("path", "call set"))).name


def _latest_criteria(conn: sa.Connection) -> list[dict[str, Any]]:
    """Per (suite, consumer): the latest criteria version, its spec and how many versions exist."""
    c = t.criteria
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in conn.execute(sa.select(c.c.suite_id, c.c.consumer_key, c.c.version, c.c.spec).order_by(c.c.version)):
        row = latest.setdefault((r.suite_id, r.consumer_key), {"versions": 0})
        row.update(suite_id=r.suite_id, consumer=r.consumer_key, version=r.version, spec=r.spec,
                   versions=row["versions"] + 1)
    return list(latest.values())


def spec_summary(spec: dict[str, Any]) -> str:
    """A criteria spec in a line: ``required a, b; ≥ 0.75 of c, d; ignore e``."""
    parts = [f"required {', '.join(spec['required'])}"] if spec.get("required") else []
    parts += [f"≥ {g['min']:g} of {', '.join(g['keys'])}" for g in spec.get("threshold") or []]
    parts += [f"ignore {', '.join(spec['ignore'])}"] if spec.get("ignore") else []
    return "; ".join(parts)


def teams(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    tm = t.teams
    q = sa.select(tm.c.team_id, tm.c.name).order_by(tm.c.team_id)
    if scope.team:
        q = q.where(tm.c.team_id == scope.team)
    suites, cases = defaultdict(int), defaultdict(int)
    for r in _suite_rows(conn, Scope()):
        suites[r.team_id] += 1
    for team_id in conn.execute(sa.select(t.cases.c.team_id)).scalars():
        cases[team_id] += 1
    return [{"team": r.team_id, "name": r.name, "suites": suites[r.team_id], "cases": cases[r.team_id]}
            for r in conn.execute(q)]


def suites(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    members = _members(conn)
    consumers: dict[str, list[str]] = defaultdict(list)
    for c in sorted(_latest_criteria(conn), key=lambda c: c["consumer"]):
        consumers[c["suite_id"]].append(c["consumer"])
    return [
        {"suite": f"{r.team_id}/{r.suite_key}", "team": r.team_id, "key": r.suite_key, "name": r.name,
         "target_kind": r.target_kind, "target": _target_label(r.target_kind, r.target),
         "cases": len(members[r.suite_id]), "consumers": consumers[r.suite_id], "tags": list(r.tags),
         "runners": list(r.runners or [])}
        for r in _suite_rows(conn, scope)
    ]


def suites_tagged(conn: sa.Connection | sa.Engine, tag: str) -> list[str]:
    """The suites (``TEAM/SUITE``, sorted) that carry ``tag``; none is an empty list, not an error."""
    if isinstance(conn, sa.Engine):
        with conn.connect() as c:
            return suites_tagged(c, tag)
    # tags are a JSON list, read the same way on SQLite and PostgreSQL: filtered here, not in SQL
    return sorted(f"{r.team_id}/{r.suite_key}" for r in _suite_rows(conn, Scope()) if tag in r.tags)


def cases(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    c = t.cases
    members = _members(conn)
    in_suites: dict[str, list[str]] = defaultdict(list)
    for s in _suite_rows(conn, Scope()):
        for case_id in members[s.suite_id]:
            in_suites[case_id].append(s.suite_key)
    rows = {r.case_id: r for r in conn.execute(sa.select(c.c.case_id, c.c.team_id, c.c.case_key, c.c.title)
                                                .order_by(c.c.team_id, c.c.case_key))}
    if scope.suite_id:
        chosen = [rows[i] for i in members[scope.suite_id]]
    else:
        chosen = [r for r in rows.values() if not scope.team or r.team_id == scope.team]
    return [{"team": r.team_id, "key": r.case_key, "title": r.title, "suites": in_suites[r.case_id]} for r in chosen]


def assertions(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    a = t.assertions
    names = {f"suite:{r.suite_id}": r.suite_key for r in _suite_rows(conn, Scope())}
    names |= {f"case:{r.case_id}": r.case_key for r in conn.execute(sa.select(t.cases.c.case_id, t.cases.c.case_key))}
    owners = None
    if scope.suite_id:
        owners = {f"suite:{scope.suite_id}", *(f"case:{c}" for c in _members(conn)[scope.suite_id])}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    q = sa.select(a.c.team_id, a.c.owner, a.c.assertion_key, a.c.version, a.c.mechanism).order_by(a.c.version)
    if scope.team:
        q = q.where(a.c.team_id == scope.team)
    for r in conn.execute(q):
        if owners is not None and r.owner not in owners:
            continue
        row = latest.setdefault((r.owner, r.assertion_key), {"versions": 0})
        scope_kind = r.owner.split(":", 1)[0]
        row.update(team=r.team_id, key=r.assertion_key, scope=scope_kind, of=names.get(r.owner, r.owner),
                   mechanism=r.mechanism, version=r.version, versions=row["versions"] + 1)
    return sorted(latest.values(), key=lambda r: (r["team"], r["scope"] == "case", r["of"], r["key"]))


def criteria(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    names = {r.suite_id: f"{r.team_id}/{r.suite_key}" for r in _suite_rows(conn, scope)}
    rows = [{"suite": names[c["suite_id"]], "consumer": c["consumer"], "version": c["version"],
             "versions": c["versions"], "summary": spec_summary(c["spec"]), "spec": c["spec"]}
            for c in _latest_criteria(conn) if c["suite_id"] in names]
    return sorted(rows, key=lambda r: (r["suite"], r["consumer"]))


def consumers(conn: sa.Connection, scope: Scope) -> list[dict[str, Any]]:
    co = t.consumers
    with_criteria: dict[str, list[str]] = defaultdict(list)
    for c in criteria(conn, scope):
        with_criteria[c["consumer"]].append(c["suite"])
    narrowed = scope.team is not None
    return [{"consumer": r.consumer_key, "description": r.description, "suites": with_criteria[r.consumer_key]}
            for r in conn.execute(sa.select(co.c.consumer_key, co.c.description).order_by(co.c.consumer_key))
            if not narrowed or with_criteria[r.consumer_key]]


READERS = {"teams": teams, "suites": suites, "cases": cases, "assertions": assertions, "criteria": criteria,
           "consumers": consumers}


def overview(conn: sa.Connection, scope: Scope) -> dict[str, Any]:
    """Counts per kind and the team/suite tree (within ``scope``)."""
    listed = {kind: read(conn, scope) for kind, read in READERS.items()}
    counts = {kind: len(rows) for kind, rows in listed.items()}
    counts["assertion_versions"] = sum(r["versions"] for r in listed["assertions"])
    tree = [{**team, "suites": [s for s in listed["suites"] if s["team"] == team["team"]]} for team in listed["teams"]]
    return {"counts": counts, "teams": tree, "consumers": listed["consumers"]}
