"""Loading a bundle into the catalog: plan what would change, then apply the plan in one transaction.

:func:`plan_load` only reads: it compares a validated :class:`~assay.core.bundle.Bundle` with the
catalog and returns a :class:`BundleDiff` (per kind: created, updated, new version, unchanged, kept).
:func:`apply_load` writes exactly that diff, all or nothing. :func:`load_bundle` does both inside one
transaction, so nothing can change in between.

Teams, consumers, cases and suites are editable: a change updates the row (a suite's tags are stored
sorted, so reordering them is no change). Assertions and criteria
are immutable: a changed assertion (mechanism, params, role, description) or criteria spec becomes a
new version; the database itself refuses an in-place change. Anything in the catalog that the bundle
no longer mentions is kept as it is, and the plan says so. Loading the same bundle twice changes
nothing. Templates are versioned like assertions, template groups edited in place; how a bundle and
the cases templates made keep out of each other's way is :mod:`.load_templates`'s.

Secrets never reach the catalog: every free-text value of a bundle (names, titles, descriptions, case
content, assertion parameters, templates, stored targets) goes through :func:`~assay.core.redact.redact`
or :func:`~assay.core.redact.redact_text` before it is compared or written, so a reload compares like with
like. A suite keeps the hash of its raw target and an assertion the hash of its raw content, so rotating a
key in either is a change (see :meth:`_Planner._suite`). Keys cannot be rewritten: one that looks like a
credential is refused when the bundle is read (:mod:`assay.core.bundle_base`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from assay.core.bundle import AssertionDef, Bundle, CaseDef, SuiteDef, criteria_spec, read_bundle
from assay.core.errors import BundleError
from assay.core.failpoints import failpoint
from assay.core.ids import content_hash, new_id
from assay.core.redact import redact, redact_text

from . import tables as t
from .diff import KINDS, PAST, TEMPLATE_KINDS, Action, BundleDiff, Change, Kind, LoadSummary, Write
from .load_templates import TemplateState, template_problems


# --- entry points --------------------------------------------------------------------------------


def load_bundle(engine: sa.Engine, path: str | Path) -> LoadSummary:
    """Read, validate, plan and apply ``path`` in one transaction.

    Bad input raises :class:`~assay.core.errors.BundleError` naming every problem, and nothing is written.
    """
    bundle = read_bundle(path)
    with engine.begin() as conn:
        return apply_load(conn, plan_load(conn, bundle))


def plan_load(engine: sa.Engine | sa.Connection, bundle: Bundle, *, by_template: bool = False) -> BundleDiff:
    """Compare ``bundle`` with the catalog; reads only.

    Raises :class:`~assay.core.errors.BundleError` when a criteria's consumer is neither declared in the bundle
    nor in the catalog, when a template group names an unknown template, or when a case has the key of a
    case a template made (except ``by_template``: the cases ``assay template apply`` itself writes).
    """
    with _connection(engine) as conn:
        state = _State.read(conn, bundle)
        _check_consumers(bundle, state)
        templated = TemplateState.read(conn, bundle)
        problems = template_problems(bundle, templated)
        problems = [p for p in problems if not (by_template and p[0].startswith("teams["))]
        if problems:
            raise BundleError(bundle.file, problems)
        return _Planner(bundle, state, templated).plan()


def apply_load(engine: sa.Engine | sa.Connection, diff: BundleDiff) -> LoadSummary:
    """Write ``diff`` in one transaction (the caller's, when given a connection)."""
    with _transaction(engine) as conn:
        batch: list[Write] = []
        for write in (w for c in diff.changes for w in c.writes):
            if batch and not (write.op == "insert" == batch[0].op and write.table is batch[0].table):
                _execute(conn, batch)
                batch = []
            batch.append(write)
        if batch:
            _execute(conn, batch)
        failpoint("load.written")
    counts = {kind: {PAST[a]: n for a, n in by_action.items()} for kind, by_action in diff.counts().items()}
    return LoadSummary(diff.file, counts, diff.new_versions(), diff.kept())


def _execute(conn: sa.Connection, batch: list[Write]) -> None:
    """Run a batch: consecutive inserts into one table go together; others one by one."""
    first = batch[0]
    if first.op == "insert":
        conn.execute(first.table.insert(), [w.values for w in batch])
        return
    for w in batch:
        where = sa.and_(*(w.table.c[k] == v for k, v in w.key.items()))
        stmt = w.table.update().where(where).values(**w.values) if w.op == "update" else w.table.delete().where(where)
        conn.execute(stmt)


@contextmanager
def _connection(engine: sa.Engine | sa.Connection) -> Iterator[sa.Connection]:
    if isinstance(engine, sa.Connection):
        yield engine
    else:
        with engine.connect() as conn:
            yield conn


@contextmanager
def _transaction(engine: sa.Engine | sa.Connection) -> Iterator[sa.Connection]:
    if isinstance(engine, sa.Engine):
        with engine.begin() as conn:
            yield conn
    elif engine.in_transaction():
        yield engine
    else:
        with engine.begin():
            yield engine


# --- reading the catalog -------------------------------------------------------------------------


@dataclass
class _State:
    """The catalog rows a bundle could touch."""

    teams: dict[str, str]
    consumers: dict[str, str]
    cases: dict[tuple[str, str], sa.Row]
    suites: dict[tuple[str, str], sa.Row]
    suite_cases: dict[str, list[tuple[str, int]]]
    assertions: dict[tuple[str, str], tuple[int, str]]
    """(owner, key) -> (latest version, its content hash)."""
    criteria: dict[tuple[str, str], tuple[int, str]]
    """(suite id, consumer) -> (latest version, its spec hash)."""

    @classmethod
    def read(cls, conn: sa.Connection, bundle: Bundle) -> _State:
        team_ids = [team.id for team in bundle.teams]
        wanted = {c.key for c in bundle.consumers}
        wanted |= {k for team in bundle.teams for s in team.suites for k in s.criteria}
        a, c, sc = t.assertions, t.criteria, t.suite_cases
        suite_ids = sa.select(t.suites.c.suite_id).where(t.suites.c.team_id.in_(team_ids))
        members: dict[str, list[tuple[str, int]]] = {}
        for suite_id, case_id, position in conn.execute(
            sa.select(sc.c.suite_id, sc.c.case_id, sc.c.position)
            .where(sc.c.suite_id.in_(suite_ids))
            .order_by(sc.c.position)
        ):
            members.setdefault(suite_id, []).append((case_id, position))
        teams = sa.select(t.teams.c.team_id, t.teams.c.name).where(t.teams.c.team_id.in_(team_ids))
        consumers = sa.select(t.consumers.c.consumer_key, t.consumers.c.description)
        cases = sa.select(t.cases).where(t.cases.c.team_id.in_(team_ids))
        suites = sa.select(t.suites).where(t.suites.c.team_id.in_(team_ids))
        return cls(
            teams=dict(conn.execute(teams).all()),
            consumers=dict(conn.execute(consumers.where(t.consumers.c.consumer_key.in_(wanted))).all()),
            cases={(r.team_id, r.case_key): r for r in conn.execute(cases)},
            suites={(r.team_id, r.suite_key): r for r in conn.execute(suites)},
            suite_cases=members,
            assertions=_latest(
                conn.execute(
                    sa.select(a.c.owner, a.c.assertion_key, a.c.version, a.c.content_hash).where(
                        a.c.team_id.in_(team_ids)
                    )
                )
            ),
            criteria=_latest(
                conn.execute(
                    sa.select(c.c.suite_id, c.c.consumer_key, c.c.version, c.c.spec_hash).where(
                        c.c.suite_id.in_(suite_ids)
                    )
                )
            ),
        )


def _latest(rows: Any) -> dict[tuple[str, str], tuple[int, str]]:
    """(owner, key, version, hash) rows -> the latest (version, hash) per (owner, key)."""
    latest: dict[tuple[str, str], tuple[int, str]] = {}
    for owner, key, version, h in rows:
        if version > latest.get((owner, key), (0, ""))[0]:
            latest[(owner, key)] = (version, h)
    return latest


def _check_consumers(bundle: Bundle, state: _State) -> None:
    """A criteria's consumer is declared in the bundle or already in the catalog."""
    declared = {c.key for c in bundle.consumers} | set(state.consumers)
    known = ", ".join(sorted(declared)) or "none"
    problems = []
    for ti, team in enumerate(bundle.teams):
        for si, suite in enumerate(team.suites):
            for consumer in suite.criteria:
                if consumer not in declared:
                    why = f"consumer {consumer!r} is not declared in this bundle's `consumers` nor known to the catalog"
                    fix = f"(known: {known}); declare it under `consumers` or fix the key"
                    problems.append((f"teams[{ti}].suites[{si}].criteria.{consumer}", f"{why} {fix}"))
    if problems:
        raise BundleError(bundle.file, problems)


# --- planning ------------------------------------------------------------------------------------


class _Planner:
    """Walks the bundle in write order (teams, consumers, cases, suites, assertions, criteria)."""

    def __init__(self, bundle: Bundle, state: _State, templated: TemplateState):
        self.bundle, self.state, self.templated = bundle, state, templated
        self.now = datetime.now(UTC)
        self.changes: dict[str, list[Change]] = {kind: [] for kind in KINDS + TEMPLATE_KINDS}

    def plan(self) -> BundleDiff:
        for team in self.bundle.teams:
            stored, name = self.state.teams.get(team.id), redact_text(team.name)
            new = {"team_id": team.id, "name": name, "created_at": self.now}
            fields = {"name": (stored, name)}
            self._editable("teams", f"team {team.id}", t.teams, {"team_id": team.id}, new, fields, stored is not None)
        for consumer in self.bundle.consumers:
            stored, description = self.state.consumers.get(consumer.key), redact_text(consumer.description)
            key, new = {"consumer_key": consumer.key}, {"description": description, "created_at": self.now}
            changes = {"description": (stored, description)}
            label = f"consumer {consumer.key}"
            self._editable("consumers", label, t.consumers, key, {**key, **new}, changes, stored is not None)
        for team in self.bundle.teams:
            case_ids = {case.key: self._case(team.id, case) for case in team.cases}
            for suite in team.suites:
                self._suite(team.id, suite, [case_ids[k] for k in suite.cases])
            self._kept_rows(team.id, {s.key for s in team.suites}, {c.key for c in team.cases})
        self._templates()
        return BundleDiff(self.bundle.file, tuple(c for kind in KINDS + TEMPLATE_KINDS for c in self.changes[kind]))

    def _templates(self) -> None:
        """Templates are versioned (a change is a new version); groups are edited in place."""
        for tpl in self.bundle.templates:
            content = redact(tpl.stored())
            values = {"template_key": tpl.key, "title": redact_text(tpl.title), "content": content}
            self._versioned("templates", f"template {tpl.key}", t.templates, "template_id", "content_hash",
                            self.templated.templates.get(tpl.key), content_hash(content), values,
                            ref=(("template", tpl.key),))  # fmt: skip
        for group in self.bundle.template_groups:
            row = self.templated.groups.get(group.key)
            values = {"title": redact_text(group.title), "templates": list(group.templates)}
            new = {"group_key": group.key, **values, "created_at": self.now, "updated_at": self.now}
            fields = {} if row is None else {
                "title": (row.title, values["title"]), "templates": (row.templates, values["templates"])}
            self._editable("template_groups", f"template group {group.key}", t.template_groups,
                           {"group_key": group.key}, new, fields, row is not None,
                           update={**values, "updated_at": self.now})  # fmt: skip

    def _add(self, kind: Kind, action: Action, label: str, *writes: Write, **extra: Any) -> None:
        self.changes[kind].append(Change(kind, action, label, writes=writes, **extra))

    def _editable(
        self, kind: Kind, label: str, table: sa.Table, key: dict[str, Any], new: dict[str, Any],
        fields: dict[str, tuple[Any, Any]], exists: bool, update: dict[str, Any] | None = None,
        extra: tuple[Write, ...] = (), ref: tuple[tuple[str, str], ...] = (),
    ) -> None:  # fmt: skip
        """Editable rows: insert ``new`` when absent; else, when a (stored, wanted) pair of ``fields`` differs,
        update with ``update`` (default: the changed fields of ``new``). ``extra`` goes with an insert or update."""
        if not exists:
            self._add(kind, "create", label, Write(table, "insert", new), *extra, ref=ref)
            return
        changed = tuple(name for name, (stored, wanted) in fields.items() if stored != wanted)
        if not changed:
            self._add(kind, "unchanged", label, ref=ref)
            return
        values = update if update is not None else {f: new[f] for f in changed}
        self._add(kind, "update", label, Write(table, "update", values, key), *extra, fields=changed, ref=ref)

    def _case(self, team_id: str, case: CaseDef) -> str:
        content = redact(case.content())  # a world fact may hold a key; the catalog never does
        values = {"title": content["title"], "content": content, "content_hash": content_hash(content),
                  "source_recipe_id": case.source_recipe}  # fmt: skip
        row = self.state.cases.get((team_id, case.key))
        case_id = row.case_id if row is not None else new_id()
        new = {"case_id": case_id, "team_id": team_id, "case_key": case.key, **values,
               "created_at": self.now, "updated_at": self.now}  # fmt: skip
        fields = {} if row is None else {
            "title": (row.title, values["title"]),
            "situation": (row.content_hash, values["content_hash"]),
            "source_recipe": (row.source_recipe_id, case.source_recipe),
        }  # fmt: skip
        self._editable("cases", f"case {team_id}/{case.key}", t.cases, {"case_id": case_id}, new, fields,
                       row is not None, update={**values, "updated_at": self.now},
                       ref=(("team", team_id), ("case", case.key)))  # fmt: skip
        self._assertions(f"{team_id}/{case.key} (case)", case.assertions, team_id=team_id, case_id=case_id,
                         ref=(("team", team_id), ("case", case.key)))  # fmt: skip
        return case_id

    def _suite(self, team_id: str, suite: SuiteDef, case_ids: list[str]) -> None:
        target = suite.resolved_target
        # The stored config is redacted; its hash is the raw file's, so rotating a key in it is a change
        # and reloading an unchanged file is not.
        values = {"name": redact_text(suite.name), "target_kind": target.kind, "target": redact(target.target),
                  "target_hash": target.hash, "tags": sorted(suite.tags), "runners": list(suite.runners),
                  "repeat": suite.repeat.model_dump(exclude_none=True) if suite.repeat else None}  # fmt: skip
        row = self.state.suites.get((team_id, suite.key))
        suite_id = row.suite_id if row is not None else new_id()
        new = {"suite_id": suite_id, "team_id": team_id, "suite_key": suite.key, **values,
               "created_at": self.now, "updated_at": self.now}  # fmt: skip
        stored_members = self.state.suite_cases.get(suite_id, []) if row is not None else None
        # cases a template made stay in the suite they were applied to, after the bundle's own
        applied = [c for c, _ in stored_members or [] if c in self.templated.made_ids and c not in case_ids]
        members = [(case_id, position) for position, case_id in enumerate([*case_ids, *applied])]
        fields = {} if row is None else {
            "name": (row.name, values["name"]),
            "target": ((row.target_kind, row.target_hash), (target.kind, target.hash)),
            "cases": (stored_members, members),
            "tags": (row.tags, values["tags"]),
            "runners": (row.runners, values["runners"]),
            "repeat": (row.repeat, values["repeat"]),
        }  # fmt: skip
        inserts = [
            Write(t.suite_cases, "insert", {"suite_id": suite_id, "case_id": c, "position": p}) for c, p in members
        ]
        if row is None:
            membership = tuple(inserts)
        elif stored_members != members:  # replaced as a whole, so positions always match the bundle
            membership = (Write(t.suite_cases, "delete", key={"suite_id": suite_id}), *inserts)
        else:
            membership = ()
        self._editable("suites", f"suite {team_id}/{suite.key}", t.suites, {"suite_id": suite_id}, new, fields,
                       row is not None, update={**values, "updated_at": self.now}, extra=membership,
                       ref=(("team", team_id), ("suite", suite.key)))  # fmt: skip
        where = f"{team_id}/{suite.key}"
        self._assertions(where, suite.assertions, team_id=team_id, suite_id=suite_id,
                         ref=(("team", team_id), ("suite", suite.key)))
        for consumer, spec in suite.criteria.items():
            stored = redact(criteria_spec(spec))
            row_values = {"suite_id": suite_id, "consumer_key": consumer, "spec": stored}
            latest = self.state.criteria.get((suite_id, consumer))
            self._versioned("criteria", f"{where}: criteria {consumer}", t.criteria, "criteria_id", "spec_hash",
                            latest, content_hash(stored), row_values,
                            ref=(("team", team_id), ("suite", suite.key), ("consumer", consumer)))  # fmt: skip
        for (stored_suite, consumer), (version, _) in sorted(self.state.criteria.items()):
            if stored_suite == suite_id and consumer not in suite.criteria:
                self._add("criteria", "kept", f"{where}: criteria {consumer}", version=version)

    def _assertions(self, where: str, assertions: list[AssertionDef], *, team_id: str,
                    case_id: str | None = None, suite_id: str | None = None,
                    ref: tuple[tuple[str, str], ...] = ()) -> None:  # fmt: skip
        owner = f"case:{case_id}" if case_id else f"suite:{suite_id}"
        for a in assertions:
            values = {"team_id": team_id, "case_id": case_id, "suite_id": suite_id, "owner": owner,
                      "assertion_key": a.key, **redact(a.stored())}  # fmt: skip
            self._versioned("assertions", f"{where}: assertion {a.key}", t.assertions, "assertion_id", "content_hash",
                            self.state.assertions.get((owner, a.key)), a.content_hash, values,
                            ref=(*ref, ("assertion", a.key), ("mechanism", a.mechanism)))  # fmt: skip
        in_bundle = {a.key for a in assertions}
        for (stored_owner, key), (version, _) in sorted(self.state.assertions.items()):
            if stored_owner == owner and key not in in_bundle:
                self._add("assertions", "kept", f"{where}: assertion {key}", version=version)

    def _versioned(
        self, kind: Kind, label: str, table: sa.Table, id_column: str, hash_column: str,
        latest: tuple[int, str] | None, h: str, values: dict[str, Any], ref: tuple[tuple[str, str], ...] = (),
    ) -> None:  # fmt: skip
        """Immutable rows: the same hash as the latest version is unchanged; anything else is the next version."""
        version, latest_hash = latest or (0, "")
        if version and latest_hash == h:
            self._add(kind, "unchanged", label, version=version, ref=ref)
            return
        row = {id_column: new_id(), **values, "version": version + 1, hash_column: h, "created_at": self.now}
        self._add(
            kind, "new_version" if version else "create", label, Write(table, "insert", row), version=version + 1,
            ref=ref,
        )

    def _kept_rows(self, team_id: str, suites: set[str], cases: set[str]) -> None:
        for kind, rows, present in (("suites", self.state.suites, suites), ("cases", self.state.cases, cases)):
            for team, key in sorted(rows):
                if team == team_id and key not in present:
                    self._add(kind, "kept", f"{kind[:-1]} {team}/{key}")


__all__ = ["BundleDiff", "Change", "LoadSummary", "apply_load", "load_bundle", "plan_load"]
