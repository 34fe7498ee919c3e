"""The names the catalog knows (teams, suites), for lookups that must say what exists."""

from __future__ import annotations

import sqlalchemy as sa

from assay.core.errors import NotFoundError

from . import tables as t


def ls_hint(kind: str) -> str:
    """What to do when a name of ``kind`` (``suites``, ``teams``) is not in the catalog."""
    return f"list {kind} with `assay ls {kind}`, or load a bundle with `assay load BUNDLE`"


def team_ids(conn: sa.Connection) -> list[str]:
    """Every team id, sorted."""
    return list(conn.execute(sa.select(t.teams.c.team_id).order_by(t.teams.c.team_id)).scalars())


def suite_names(conn: sa.Connection) -> list[str]:
    """Every suite as ``team/suite``, sorted."""
    s = t.suites
    return [f"{r.team_id}/{r.suite_key}" for r in conn.execute(
        sa.select(s.c.team_id, s.c.suite_key).order_by(s.c.team_id, s.c.suite_key))]


def check_team(conn: sa.Connection, team: str) -> str:
    """``team`` when the catalog has it; else a :class:`NotFoundError` naming the nearest and the known teams."""
    known = team_ids(conn)
    if team not in known:
        raise NotFoundError("team", team, ls_hint("teams"), known=known)
    return team

