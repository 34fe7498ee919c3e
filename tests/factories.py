"""Shared test data: small catalog rows, a complete bundle document and ways to spoil it, a movable clock.

- :func:`seed_suite` writes catalog rows directly, for tests that are not about bundles.
- :func:`base` is one complete, valid bundle document; :func:`write` puts it (YAML or JSON) in a
  folder with the target files it names. The bundle-reading tests (``tests/core``) and the
  bundle-loading tests (``tests/storage``) share them.
- :func:`set_at`, :func:`delete_at` and :func:`append_at` make mutations of a document at a dotted
  path (``teams.0.cases.1.key``), so a table of bad inputs can name each change in one line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from assay.core.ids import content_hash, new_id
from assay.storage.catalog import tables as t

__all__ = [
    "CALLS", "CONFIG", "Clock", "Mutation", "append_at", "base", "case", "delete_at", "seed_suite", "set_at",
    "suite", "write",
]


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


# --- a bundle document -------------------------------------------------------------------------

CONFIG = {
    "name": "Main line",
    "prompt": "Check the service area. Hours: {{hours}}",
    "variables": {"hours": "8-6"},
    "tools": [{"name": "check_service_area"}],
}
"""The compiled config the config suite's target file holds."""

CALLS = [{"call_id": "1", "case": "outside-area"}, {"call_id": "2", "case": "outside-area"}]
"""The recorded calls the call-set suite's target file holds, one JSON object a line."""


def base() -> dict[str, Any]:
    """A complete valid bundle: two consumers, one team, three cases, a config suite and a call-set suite."""
    return {
        "schema": "assay.bundle/v1",
        "consumers": [
            {"key": "ci", "description": "Blocks a broken change."},
            {"key": "nightly", "description": "Drift."},
        ],
        "teams": [
            {
                "id": "acme",
                "name": "Acme Plumbing",
                "cases": [
                    {
                        "key": "outside-area",
                        "title": "Caller outside the service area",
                        "source_recipe": "outside-area",
                        "situation": {
                            "caller": "Dana, homeowner",
                            "wants": "A same-day repair",
                            "must_be_told": ["The address is not served"],
                            "world": {"caller_zip": "60827", "heater_model": "XE40", "zips": [{"zip": "60601"}]},
                        },
                        "assertions": [
                            {
                                "key": "declines",
                                "mechanism": "transcript.contains",
                                "params": {"text": "outside", "role": "agent"},
                                "description": "Says it plainly.",
                            }
                        ],
                    },
                    {
                        "key": "burst-pipe",
                        "title": "Burst pipe at night",
                        "situation": {"caller": "Marcus, tenant", "wants": "The water stopped"},
                    },
                    {
                        "key": "reschedule",
                        "title": "Reschedule",
                        "situation": {"caller": "Priya", "wants": "Next week"},
                    },
                ],
                "suites": [
                    {
                        "key": "main-line",
                        "name": "Main line",
                        "target": {"config": "configs/main.json"},
                        "cases": ["outside-area", "burst-pipe", "reschedule"],
                        "assertions": [
                            {"key": "resolves", "mechanism": "structural.variables_resolve"},
                            {
                                "key": "area_tool",
                                "mechanism": "structural.tool_attached",
                                "params": {"tool": "check_service_area"},
                            },
                            {"key": "hours", "mechanism": "structural.clause_present", "params": {"clause": "Hours"}},
                        ],
                        "criteria": {
                            "ci": {"required": ["area_tool", "declines"], "ignore": ["hours"]},
                            "nightly": {
                                "threshold": [{"keys": ["resolves", "area_tool", "hours"], "min": 0.5}],
                                "ignore": ["declines"],
                            },
                        },
                    },
                    {
                        "key": "recorded",
                        "name": "Recorded calls",
                        "target": {"call_set": "calls/recorded.jsonl"},
                        "cases": ["outside-area"],
                        "assertions": [{"key": "short", "mechanism": "transcript.max_turns", "params": {"max": 12}}],
                        "criteria": {"ci": {"required": ["declines", "short"]}},
                    },
                ],
            }
        ],
    }


def write(folder: Path, doc: Any, name: str = "bundle.yaml") -> Path:
    """Write ``doc`` as ``name`` (YAML, or JSON for ``.json``) and the target files it names; return its path."""
    (folder / "configs").mkdir(parents=True, exist_ok=True)
    (folder / "calls").mkdir(parents=True, exist_ok=True)
    (folder / "configs" / "main.json").write_text(json.dumps(CONFIG))
    (folder / "calls" / "recorded.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    path = folder / name
    path.write_text(json.dumps(doc) if name.endswith(".json") else yaml.safe_dump(doc, sort_keys=False))
    return path


def case(doc: dict[str, Any], i: int = 0) -> dict[str, Any]:
    """The first team's ``i``-th case."""
    return doc["teams"][0]["cases"][i]


def suite(doc: dict[str, Any], i: int = 0) -> dict[str, Any]:
    """The first team's ``i``-th suite."""
    return doc["teams"][0]["suites"][i]


# --- mutations at a dotted path ----------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]
"""A change made in place to a bundle document."""


def _parent(doc: dict[str, Any], path: str) -> tuple[Any, Any]:
    """The container holding the dotted ``path``'s last step, and that step (an int for a list index)."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target: Any = doc
    for p in parents:
        target = target[p]
    return target, last


def set_at(path: str, value: Any) -> Mutation:
    """A mutation setting the dotted ``path`` (``teams.0.cases.0.key``) to (a copy of) ``value``."""

    def mutate(doc: dict[str, Any]) -> None:
        parent, key = _parent(doc, path)
        parent[key] = copy.deepcopy(value)

    return mutate


def delete_at(path: str) -> Mutation:
    """A mutation deleting what the dotted ``path`` names."""

    def mutate(doc: dict[str, Any]) -> None:
        parent, key = _parent(doc, path)
        del parent[key]

    return mutate


def append_at(path: str, value: Any) -> Mutation:
    """A mutation appending (a copy of) ``value`` to the list the dotted ``path`` names."""

    def mutate(doc: dict[str, Any]) -> None:
        parent, key = _parent(doc, path)
        parent[key].append(copy.deepcopy(value))

    return mutate
