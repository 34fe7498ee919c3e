"""Small catalog rows for tests that are not about bundles (bundle loading has its own tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from assay.core.ids import content_hash, new_id
from assay.storage.catalog import tables as t


def seed_suite(
    engine: sa.Engine,
    *,
    team: str = "team-a",
    suite: str = "suite-a",
    cases: tuple[str, ...] = ("case-1", "case-2"),
    target_kind: str = "config",
    target: dict[str, Any] | None = None,
    criteria: dict[str, Any] | None = None,
) -> str:
    """A team, a suite of ``cases`` with one suite assertion ``a1``, and consumer ``ci`` requiring it."""
    target = target if target is not None else {"config": {"name": "x", "prompt": "hi", "variables": {}, "tools": []}}
    now = datetime.now(UTC)
    with engine.begin() as conn:
        if not conn.execute(sa.select(t.teams).where(t.teams.c.team_id == team)).first():
            conn.execute(t.teams.insert().values(team_id=team, name=team.title(), created_at=now))
        if not conn.execute(sa.select(t.consumers).where(t.consumers.c.consumer_key == "ci")).first():
            conn.execute(t.consumers.insert().values(consumer_key="ci", description="", created_at=now))
        suite_id = new_id()
        conn.execute(
            t.suites.insert().values(
                suite_id=suite_id, team_id=team, suite_key=suite, name=suite, target_kind=target_kind,
                target=target, target_hash=content_hash(target), created_at=now, updated_at=now,
            )
        )
        for pos, key in enumerate(cases):
            case_id = new_id()
            content = {"situation": {"caller": f"caller of {key}"}}
            conn.execute(
                t.cases.insert().values(
                    case_id=case_id, team_id=team, case_key=key, title=key, content=content,
                    content_hash=content_hash(content), created_at=now, updated_at=now,
                )
            )
            conn.execute(t.suite_cases.insert().values(suite_id=suite_id, case_id=case_id, position=pos))
        params = {"tool": "check_service_area"}
        conn.execute(
            t.assertions.insert().values(
                assertion_id=new_id(), team_id=team, suite_id=suite_id, owner=f"suite:{suite_id}",
                assertion_key="a1", version=1, mechanism="structural.tool_attached", params=params,
                content_hash=content_hash(params), created_at=now,
            )
        )
        spec = criteria if criteria is not None else {"required": ["a1"]}
        conn.execute(
            t.criteria.insert().values(
                criteria_id=new_id(), suite_id=suite_id, consumer_key="ci", version=1, spec=spec,
                spec_hash=content_hash(spec), created_at=now,
            )
        )
    return f"{team}/{suite}"


class Clock:
    """A clock tests can move."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
