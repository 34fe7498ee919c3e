"""The incremental projection's storage side: what changed since the last pass, what a pass reads, and
how it replaces the projected rows of the runs it recomputed.

**What changed.** The catalog's ``projection_marks`` row says how far the last pass read: every lake
file up to ``through_file_id`` and every catalog change before ``through_at``. A run is recomputed when
it is finalised and any of these holds since then: a lake file holding it was added (a report, a
judging pass, an import; a compaction changes nothing a projection reads), it was finalised, or its
suite got a new criteria version (its current verdicts change). A writer's transaction may commit a
smaller file id, or an earlier time, after the mark was taken; so the mark also keeps the ids it read
within :data:`GRACE` before its time (``recent``), and anything in that window it did not read is new.

**How a pass writes.** Copy on write, as judging keeps its state (:mod:`.state`), one suite at a time
(every projected file holds one suite's runs): the live files holding any recomputed run are read,
their other runs' rows kept, the recomputed rows added, and everything is staged as new files
(:func:`stage_suite`); then **one** catalog transaction retires the old files, names the new ones and
moves the mark (:func:`commit`). A crashed pass leaves unnamed files (vacuumed) and the old mark; a
concurrent pass over the same runs finds its files retired and is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec
from assay.core.errors import ConcurrentWriteError
from assay.core.failpoints import failpoint

from .batches import BATCH_CASE_RUNS
from .catalog import tables as t
from .lake import FileFilter, Lake, LakeFile, manifest
from .lake.projection_tables import PROJECTED
from .state import partitions

__all__ = ["GRACE", "MARK", "Inputs", "Pass", "Staged", "batches", "begin", "check", "commit", "inputs", "stage_suite", "vendor_pairs"]

MARK = "fleet"
"""The name of the projections' row in ``projection_marks``."""

GRACE = timedelta(minutes=10)
"""How far back in time a pass also looks for new files, whatever their id."""

EVIDENCE = ("case_runs", "runner_evaluations", "outcomes", "assertion_results")
"""The tables whose new files make a run's projection stale."""

QUIET_ORIGINS = ("compaction",)
"""Writers of evidence tables whose files change nothing a projection reads (a compaction rewrites rows as
they were)."""

ORIGIN = "rescore"
"""The manifest's origin of projected files: like a materialised re-score, a reading of the atoms (the
manifest's ``origin_ref`` says ``projection``)."""


@dataclass(frozen=True)
class Pass:
    """What one pass is to do: the runs to recompute, by suite, and the mark it moves to."""

    suites: dict[str, list[str]]
    """suite_id -> finalised run ids to recompute."""
    full: bool
    """Rebuild everything: every projected file is replaced, whatever it holds."""
    through_file_id: int
    through_at: datetime
    recent: dict[str, list[str]]
    """The ids read within :data:`GRACE` before ``through_at``: files, runs finalised, criteria versions."""
    previous: int | None
    """The mark's ``through_file_id`` when the pass began (None: no pass yet)."""
    case_runs: dict[str, int] = field(default_factory=dict)
    """run id -> its case runs: what a run's projection reads, to size the batches (:func:`batches`)."""

    @property
    def runs(self) -> list[str]:
        return sorted(r for runs in self.suites.values() for r in runs)


def begin(engine: sa.Engine, *, full: bool = False) -> Pass:
    """Read the mark and find the runs whose projection is stale (every finalised run when ``full`` or on the
    first pass).

    Stale: a lake file holding the run was added, the run was finalised, or its suite got a criteria version,
    since the mark -- by id, or within :data:`GRACE` before the mark's time and not among the ids that pass
    read (a writer whose transaction committed after the mark was taken).
    """
    r, f, fr, c = t.runs, t.lake_files, t.lake_file_runs, t.criteria
    now = datetime.now(UTC)
    with engine.connect() as conn:
        mark = conn.execute(sa.select(t.projection_marks).where(t.projection_marks.c.name == MARK)).first()
        top = conn.execute(sa.select(sa.func.coalesce(sa.func.max(f.c.file_id), 0))).scalar_one()
        finalised = conn.execute(sa.select(r.c.suite_id, r.c.run_id, r.c.case_runs).where(r.c.finalised_at.is_not(None))
                                 .order_by(r.c.suite_id, r.c.run_id)).all()
        window = now - GRACE if mark is None or full else min(now - GRACE, mark.through_at - GRACE)
        lately = conn.execute(sa.select(r.c.run_id, r.c.finalised_at).where(r.c.finalised_at >= window)).all()
        recent = {
            "files": [str(i) for i in conn.execute(sa.select(f.c.file_id).where(
                f.c.added_at >= now - GRACE, f.c.file_id <= top)).scalars()],
            "runs": [row.run_id for row in lately if row.finalised_at >= now - GRACE],
            "criteria": list(conn.execute(sa.select(c.c.criteria_id).where(c.c.created_at >= now - GRACE)).scalars()),
        }
        stale: set[str] | None = None
        stale_suites: set[str] = set()
        if mark is not None and not full:
            since, seen = mark.through_at - GRACE, {k: set(v) for k, v in mark.recent.items()}
            candidates = conn.execute(
                sa.select(f.c.file_id, fr.c.run_id).join(fr, fr.c.file_id == f.c.file_id)
                .where(f.c.table_name.in_(EVIDENCE), f.c.origin.not_in(QUIET_ORIGINS), f.c.file_id <= top,
                       sa.or_(f.c.file_id > mark.through_file_id, f.c.added_at >= since))
            ).all()
            stale = {row.run_id for row in candidates
                     if row.file_id > mark.through_file_id or str(row.file_id) not in seen["files"]}
            stale |= {row.run_id for row in lately if row.finalised_at >= since and row.run_id not in seen["runs"]}
            stale_suites = {row.suite_id for row in conn.execute(
                sa.select(c.c.criteria_id, c.c.suite_id).where(c.c.created_at >= since))
                if row.criteria_id not in seen["criteria"]}
    suites: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for row in finalised:
        if stale is None or row.run_id in stale or row.suite_id in stale_suites:
            suites.setdefault(row.suite_id, []).append(row.run_id)
            sizes[row.run_id] = row.case_runs or 0
    previous = None if mark is None else mark.through_file_id
    return Pass(suites, full or mark is None, top, now, recent, previous, sizes)


@dataclass(frozen=True)
class Inputs:
    """What the catalog says of some suites' runs, for :mod:`assay.transforms.fleet`."""

    runs: pl.DataFrame
    """One row per run: run_id, suite_id, suite_key, team_id, date, runner, week_at (created_at), status,
    status_reason, case_count, case_runs."""
    versions: pl.DataFrame
    """One row per (run, consumer, criteria version to apply): the stamped one and the current one."""
    specs: dict[str, CriteriaSpec]


_RUN_SCHEMA = {
    "run_id": pl.String, "suite_id": pl.String, "suite_key": pl.String, "team_id": pl.String, "date": pl.String,
    "runner": pl.String, "created_at": pl.Datetime("us", "UTC"), "status": pl.String, "status_reason": pl.String,
    "case_count": pl.Int64, "case_runs": pl.Int64,
}
_VERSION_SCHEMA = {
    "run_id": pl.String, "consumer_key": pl.String, "criteria_id": pl.String, "criteria_version": pl.Int32,
    "is_stamped": pl.Boolean, "is_current": pl.Boolean, "stamped_verdict": pl.String,
}


def inputs(engine: sa.Engine, suites: Mapping[str, Sequence[str]]) -> Inputs:
    """The runs of ``suites`` (suite_id -> run ids), the criteria versions to apply to each (the stamped one and
    each consumer's latest for the suite), and their specs, in one catalog read."""
    r, s, rc, c = t.runs, t.suites, t.run_criteria, t.criteria
    run_ids = [run for runs in suites.values() for run in runs]
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(r.c.run_id, r.c.suite_id, s.c.suite_key, r.c.team_id, r.c.lake_date.label("date"), r.c.runner,
                      r.c.created_at, r.c.status, r.c.status_reason, r.c.case_count, r.c.case_runs)
            .join(s, s.c.suite_id == r.c.suite_id).where(r.c.run_id.in_(run_ids))
        ).all()
        stamped = conn.execute(
            sa.select(rc.c.run_id, rc.c.consumer_key, rc.c.criteria_id, rc.c.version, rc.c.verdict)
            .where(rc.c.run_id.in_(run_ids))
        ).all()
        latest = sa.select(c.c.suite_id, c.c.consumer_key, sa.func.max(c.c.version).label("version")).where(
            c.c.suite_id.in_(list(suites))).group_by(c.c.suite_id, c.c.consumer_key).subquery()
        current = conn.execute(
            sa.select(c.c.criteria_id, c.c.suite_id, c.c.consumer_key, c.c.version)
            .join(latest, sa.and_(latest.c.suite_id == c.c.suite_id, latest.c.consumer_key == c.c.consumer_key,
                                  latest.c.version == c.c.version))
        ).all()
        wanted = {row.criteria_id for row in stamped} | {row.criteria_id for row in current}
        specs = {row.criteria_id: CriteriaSpec.model_validate(row.spec) for row in conn.execute(
            sa.select(c.c.criteria_id, c.c.spec).where(c.c.criteria_id.in_(sorted(wanted))))}
    runs = pl.DataFrame([dict(row._mapping) for row in rows], schema=_RUN_SCHEMA)
    now: dict[str, dict[str, tuple[str, int]]] = {}
    for row in current:
        now.setdefault(row.suite_id, {})[row.consumer_key] = (row.criteria_id, row.version)
    suite_of = dict(zip(runs["run_id"], runs["suite_id"], strict=True))
    versions = [(x.run_id, x.consumer_key, x.criteria_id, x.version, True,
                 now.get(suite_of[x.run_id], {}).get(x.consumer_key, ("",))[0] == x.criteria_id, x.verdict)
                for x in stamped]
    have = {(x.run_id, x.criteria_id) for x in stamped}
    versions += [(run_id, consumer, cid, version, False, True, None)
                 for run_id, suite_id in suite_of.items()
                 for consumer, (cid, version) in now.get(suite_id, {}).items() if (run_id, cid) not in have]
    return Inputs(runs, pl.DataFrame(versions, schema=_VERSION_SCHEMA, orient="row"), specs)


def batches(plan: Pass, runs: int = 1000, case_runs: int | None = None) -> list[dict[str, list[str]]]:
    """The pass's runs in batches of at most ``runs`` runs and about ``case_runs`` case runs, suite after suite
    (suite_id -> its runs in the batch): one task each, so a pass over a few new runs of many suites is one
    read, and a pass over a large suite holds one batch's atoms at a time (its runs then span batches)."""
    case_runs = BATCH_CASE_RUNS if case_runs is None else case_runs
    out: list[dict[str, list[str]]] = []
    count = held = 0
    for suite_id in sorted(plan.suites):
        for run_id in plan.suites[suite_id]:
            size = plan.case_runs.get(run_id, 0)
            if not out or (count and (count >= runs or held + size > case_runs)):
                out.append({})
                count = held = 0
            out[-1].setdefault(suite_id, []).append(run_id)
            count += 1
            held += size
    return out


def vendor_pairs(engine: sa.Engine) -> pl.DataFrame:
    """Which vendor evaluation measures which of our behaviours: every version of a ``vendor.evaluation``
    assertion whose parameters name keys in ``same_behaviour_as``, as (vendor_assertion_id, behaviour)."""
    a = t.assertions
    with engine.connect() as conn:
        rows = conn.execute(sa.select(a.c.assertion_id, a.c.params).where(a.c.mechanism == "vendor.evaluation")).all()
    pairs = [(row.assertion_id, key) for row in rows
             for key in (_params(row.params).get("same_behaviour_as") or [])]
    return pl.DataFrame(pairs, schema={"vendor_assertion_id": pl.String, "behaviour": pl.String}, orient="row")


def _params(value: object) -> Mapping[str, object]:
    return json.loads(value) if isinstance(value, str) else value  # type: ignore[return-value]


@dataclass(frozen=True)
class Staged:
    """One suite's share of a pass: the projected files it replaces, the files it staged, rows per table."""

    retired: list[str]
    staged: list[LakeFile]
    written: dict[str, int]


def check(lake: Lake, rows: Mapping[str, pl.DataFrame]) -> None:
    """Validate a batch's projected rows (table -> frame with team_id and date) once, before
    :func:`stage_suite` splits them into files (which then only conforms them)."""
    for name, frame in rows.items():
        lake.validate(name, frame.select(PROJECTED[name].arrow_schema.names))


def stage_suite(lake: Lake, plan: Pass, suite_id: str, rows: Mapping[str, pl.DataFrame],
                runs: Sequence[str] | None = None) -> Staged:
    """Stage the projected files of one suite's recomputed runs (``rows``: table -> frame with team_id and date,
    checked by :func:`check`), copy on write: the suite's files holding any of those runs are read, their other
    runs' rows kept (as written, so checked then). Every file holds one suite's runs (compaction leaves
    projected tables alone), so suites stage independently.

    ``runs``: the suite's runs in this batch, when a suite spans batches (None: all its recomputed runs). Only
    the batch holding its first recomputed run reads and keeps the other runs' rows, so they are kept once."""
    recomputed = plan.suites[suite_id]
    first = runs is None or (len(runs) > 0 and runs[0] == recomputed[0])
    where = FileFilter(runs=recomputed)
    retired: list[str] = []
    staged: list[LakeFile] = []
    written: dict[str, int] = {}
    for name, table in PROJECTED.items():
        fresh = rows.get(name)
        keep = None
        if not plan.full and first:
            listed = lake.live(name, where)
            retired += [path for path, _ in listed]
            if listed:
                found = [(lake.address(path), version) for path, version in listed]
                keep = lake.collect(lake.scan_files(name, found), name, where).filter(~pl.col("run_id").is_in(recomputed))
        columns = [*table.arrow_schema.names, "team_id", "date"]
        parts = [p.select(columns) for p in (keep, fresh) if p is not None and p.height]
        written[name] = fresh.height if fresh is not None else 0
        if parts:
            merged = pl.concat(parts, how="vertical_relaxed")
            staged += [lake.stage(name, part.drop("team_id", "date"), team_id=team, date=date, validated=True)
                       for (team, date), part in partitions(merged).items()]
    return Staged(retired, staged, written)


def commit(lake: Lake, plan: Pass, parts: Sequence[Staged]) -> dict[str, int]:
    """Swap every suite's staged files in and move the mark, in **one** catalog transaction (a full pass retires
    every projected file there was). Returns the rows written per table."""
    failpoint("projection.staged")
    now = datetime.now(UTC)
    staged = [f for part in parts for f in part.staged]
    with lake.engine.begin() as conn:
        if plan.full:
            retired = sorted({path for name in PROJECTED for path, _ in manifest.live(conn, name, FileFilter())})
        else:
            retired = sorted({path for part in parts for path in part.retired})
        if manifest.retire(conn, retired, by="projection", now=now) != len(retired):
            raise ConcurrentWriteError("projections: another pass replaced these projected rows meanwhile; nothing "
                                       "was written; run the projections again")
        lake.commit(conn, staged, origin=ORIGIN, ref=f"projection through file {plan.through_file_id}")
        _move_mark(conn, plan, now)
        failpoint("projection.recorded")
    return {name: sum(part.written.get(name, 0) for part in parts) for name in PROJECTED}


def _move_mark(conn: sa.Connection, plan: Pass, now: datetime) -> None:
    m = t.projection_marks
    values = {"through_file_id": plan.through_file_id, "through_at": plan.through_at, "recent": plan.recent,
              "updated_at": now}
    if plan.previous is None:
        conn.execute(m.insert().values(name=MARK, passes=1, **values))
        return
    moved = conn.execute(
        m.update().where(m.c.name == MARK, m.c.through_file_id == plan.previous)
        .values(passes=m.c.passes + 1, **values)
    ).rowcount
    if moved != 1:
        raise ConcurrentWriteError("projections: another pass moved the projection mark meanwhile; nothing was "
                                   "written; run the projections again")
