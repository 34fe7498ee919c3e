"""Choosing runs (by id, suite, team, period) and reading a candidate criteria spec file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from pydantic import ValidationError

from assay.core.criteria import CriteriaSpec
from assay.core.errors import BundleError, ConfigError
from assay.storage.catalog import tables as t
from assay.storage.catalog.names import check_team
from assay.storage.catalog.runs import find_suite, get_run

from .workspace import Workspace


def _day(value: str, option: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ConfigError(f"{option} {value!r} is not a date: use YYYY-MM-DD") from None


def select_runs(
    ws: Workspace,
    *,
    runs: list[str] | None = None,
    suite: str | None = None,
    team: str | None = None,
    since: str | None = None,
    until: str | None = None,
    choose: str = "",
) -> list[str]:
    """Finalised runs matching every given filter, oldest first; at least one filter is required.

    ``choose`` says, in the calling command's own terms, how to name runs ("give a RUN or --suite"),
    for the error when no filter is given. A run named by id that is not final yet is an error saying
    what it is waiting for, never silently left out (a suite or team filter takes only the final runs
    it finds). An unknown team is an error naming the known ones.
    """
    if not (runs or suite or team):
        raise ConfigError(f"no runs chosen: {choose}" if choose else "no runs chosen: name a run, a suite or a team")
    q = sa.select(t.runs.c.run_id).where(t.runs.c.finalised_at.is_not(None)).order_by(t.runs.c.created_at)
    if runs:
        named = [get_run(ws.engine, r) for r in runs]
        open_ = [f"{r.run_id} is {r.status}" for r in named if r.finalised_at is None]
        if open_:
            raise ConfigError(
                f"{'; '.join(open_)}: not final yet — a run still working "
                "finishes by itself; one left released or past its lease is finalised by `assay reap`")
        q = q.where(t.runs.c.run_id.in_([r.run_id for r in named]))
    with ws.engine.connect() as conn:
        if suite:
            q = q.where(t.runs.c.suite_id == find_suite(conn, suite, team).suite_id)
        elif team:
            q = q.where(t.runs.c.team_id == check_team(conn, team))
        if since:
            q = q.where(t.runs.c.created_at >= _day(since, "--since"))
        if until:
            q = q.where(t.runs.c.created_at < _day(until, "--until"))
        return list(conn.execute(q).scalars())


def runners_of(ws: Workspace, run_ids: list[str]) -> dict[str, str]:
    """Each run's runner, by run id: what a listing of runs of one suite shows beside each."""
    with ws.engine.connect() as conn:
        rows = conn.execute(sa.select(t.runs.c.run_id, t.runs.c.runner).where(t.runs.c.run_id.in_(run_ids)))
        return {run_id: runner for run_id, runner in rows}


def read_spec(path: str) -> CriteriaSpec:
    """A candidate criteria spec from a YAML or JSON file; errors name the file and the field."""
    import yaml  # only a command given --spec reads one

    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        raise BundleError(path, [("", f"cannot read the spec file: {exc.strerror}")]) from None
    try:
        raw = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise BundleError(path, [("", f"not valid {'JSON' if file.suffix == '.json' else 'YAML'}: {exc}")]) from None
    try:
        return CriteriaSpec.model_validate(raw)
    except ValidationError as exc:
        problems = [(".".join(map(str, e["loc"])), e["msg"]) for e in exc.errors()]
        raise BundleError(path, [*problems, ("", "a spec has required, threshold ({keys, min}) and ignore")]) from None
