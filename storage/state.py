"""The lake's re-score state, kept copy on write by every judging pass: ``current_results`` and ``run_key_counts``.

``current_results`` holds the atoms of each case run's latest outcome (with 64-bit codes), and
``run_key_counts`` one row of counts per (run, key) of them. A pass reads the judged runs' rows from the
live state files holding any run it judged (:func:`prior`), then stages their replacement (:func:`stage`):
those rows again, minus the case runs it gave a new outcome, plus its own atoms, and the counts of the
judged runs recomputed by ``summarise`` (:func:`assay.transforms.rescore.key_counts`, handed in by the flow:
storage does not import transforms). The caller retires the old files and names the new ones in the
pass's own transaction; a concurrent pass over the same runs finds its old files retired and is refused.

A state file may hold other runs too (a compaction merges a partition's files, or an earlier pass judged
several runs at once). Their rows are copied into new files a few runs at a time (:data:`COPY_ROWS`),
never held all at once: a pass over one run of a suite holds that run's atoms, not the suite's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl
import sqlalchemy as sa

from assay.core.ids import id_code

from .batches import packed
from .catalog import tables as t
from .lake import FileFilter, Lake, LakeFile, codes

__all__ = ["COPY_ROWS", "Prior", "StateChange", "Summarise", "partitions", "prior", "stage"]

COPY_ROWS = 1024 * 1024
"""Rows of other runs copied per batch out of a state file a pass replaces (a run larger than this is
copied alone): what such a copy holds at once."""

Summarise = Callable[[pl.LazyFrame], pl.LazyFrame]
"""Current atoms (run, case_run, key, met, reason, evaluator_code) -> per (run, key) counts."""


@dataclass(frozen=True)
class Prior:
    """The state files a pass over ``runs`` replaces, and what they hold."""

    runs: list[str]
    current_paths: list[str]
    current: pl.DataFrame | None
    """The rows of ``runs`` only, from the files of ``current_paths``."""
    counts_paths: list[str]
    counts: pl.DataFrame | None
    others: list[list[str]] = field(default_factory=list)
    """The other runs those ``current_results`` files hold, in batches of about :data:`COPY_ROWS` rows:
    copied into new files as they were, one batch at a time."""

    @property
    def latest_judged_at(self) -> datetime | None:
        """The newest judged_at of the judged runs' current results (the pass must be later)."""
        return self.current["judged_at"].max() if self.current is not None and self.current.height else None  # type: ignore[return-value]


@dataclass(frozen=True)
class StateChange:
    """What a pass does to the state: files to retire, files to name, and the names behind the codes."""

    retired: list[str]
    staged: list[LakeFile]
    names: dict[int, str] = field(default_factory=dict)


def _read(lake: Lake, table: str, where: FileFilter) -> tuple[list[str], pl.DataFrame | None]:
    paths = [path for path, _ in lake.live(table, where)]
    return paths, (lake.collect(lake.scan(table, where), table, where) if paths else None)


def prior(lake: Lake, runs: Sequence[str]) -> Prior:
    """The live state files holding any of ``runs``, with the rows of ``runs`` (and every counts row: a
    few per run), and the other runs the current results' files hold."""
    where = FileFilter(runs=list(runs))
    mine = pl.col("run_id").is_in(list(runs))
    listed = lake.live("current_results", where)
    found = [(lake.address(path), version) for path, version in listed]
    current = (lake.collect(lake.scan_files("current_results", found).filter(mine), "current_results", where)
               if found else None)
    counts_paths, counts = _read(lake, "run_key_counts", where)
    others = _batches(lake, listed, set(runs)) if listed else []
    return Prior(list(runs), [path for path, _ in listed], current, counts_paths, counts, others)


def _batches(lake: Lake, listed: Sequence[tuple[str, int]], judged: set[str]) -> list[list[str]]:
    """The runs other than ``judged`` that the ``current_results`` files ``listed`` hold (the manifest says
    which), in batches of about :data:`COPY_ROWS` rows (their row counts read from the files' run column)."""
    f, fr = t.lake_files, t.lake_file_runs
    with lake.engine.connect() as conn:
        held = set(conn.execute(sa.select(fr.c.run_id).join(f, f.c.file_id == fr.c.file_id)
                                .where(f.c.path.in_([path for path, _ in listed]))).scalars())
    others = sorted(held - judged)
    if not others:
        return []
    found = [(lake.address(path), version) for path, version in listed]
    scan = lake.scan_files("current_results", found).filter(pl.col("run_id").is_in(others))
    # the default engine, as every other read of the library: the count reads the run column alone
    sizes = lake.collect(scan.group_by("run_id").len(), "current_results", FileFilter(runs=others))
    return packed(sizes.sort("run_id").iter_rows(), COPY_ROWS)


def _copied(lake: Lake, before: Prior, columns: Sequence[str]) -> Iterator[pl.DataFrame]:
    """The other runs' rows of the files ``before`` replaces, a batch of runs at a time, as they were."""
    replaced = set(before.current_paths)
    for batch in before.others:
        where = FileFilter(runs=batch)
        found = [(lake.address(path), version) for path, version in lake.live("current_results", where)
                 if path in replaced]  # a file retired meanwhile is left out: the pass is then refused
        theirs = pl.col("run").is_in([id_code(r) for r in batch]) & pl.col("run_id").is_in(batch)  # codes skip row groups
        yield lake.collect(lake.scan_files("current_results", found).filter(theirs).select(columns), "current_results",
                           where)


def partitions(frame: pl.DataFrame) -> dict[tuple[str, str], pl.DataFrame]:
    """``frame``'s rows by lake partition (team_id, date)."""
    return frame.partition_by("team_id", "date", as_dict=True)  # type: ignore[return-value]


def stage(lake: Lake, before: Prior, atoms: pl.DataFrame, summarise: Summarise, now: pl.Expr) -> StateChange:
    """Stage the state that replaces ``before`` once ``atoms`` (a pass's, with run_id, case_run_id,
    assertion_key, evaluator, team_id, date, ...) are the latest outcomes of their case runs."""
    key_codes, keys = codes.name_codes(atoms, "assertion_key")
    evaluator_codes, evaluators = codes.name_codes(atoms, "evaluator")
    fresh = atoms.with_columns(
        run=codes.id_codes("run_id"), case_run=codes.id_codes("case_run_id"), key=key_codes,
        evaluator_code=evaluator_codes,
    ).select(*lake.table("current_results").arrow_schema.names, "team_id", "date")
    rows = fresh
    if before.current is not None:
        stays = ~before.current["case_run_id"].is_in(atoms["case_run_id"].unique().to_list())
        rows = pl.concat([before.current.filter(stays).select(fresh.columns), fresh])
    staged = [lake.stage("current_results", part.drop("team_id", "date"), team_id=team, date=date)
              for (team, date), part in partitions(rows).items()]
    for copy in _copied(lake, before, fresh.columns):
        staged += [lake.stage("current_results", part.drop("team_id", "date"), team_id=team, date=date)
                   for (team, date), part in partitions(copy).items()]

    judged = rows.filter(pl.col("run_id").is_in(atoms["run_id"].unique().to_list()))
    where = judged.select("run", "run_id", "team_id", "date").unique()
    counts = summarise(judged.lazy()).collect().join(where, on="run").with_columns(computed_at=now)
    if before.counts is not None:
        others = before.counts.filter(~pl.col("run_id").is_in(judged["run_id"].unique().to_list()))
        counts = pl.concat([others.select(counts.columns), counts])
    count_columns = lake.table("run_key_counts").arrow_schema.names
    staged += [lake.stage("run_key_counts", part.select(count_columns), team_id=team, date=date)
               for (team, date), part in partitions(counts).items()]
    return StateChange(before.current_paths + before.counts_paths, staged, {**keys, **evaluators})
