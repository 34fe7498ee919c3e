"""The lake's re-score state, kept copy on write by every judging pass: ``current_results`` and ``run_key_counts``.

``current_results`` holds the atoms of each case run's latest outcome (with 64-bit codes), and
``run_key_counts`` one row of counts per (run, key) of them. A pass reads the live state files holding
any run it judged (:func:`prior`), then stages their replacement (:func:`stage`): their rows again,
minus the case runs it gave a new outcome, plus its own atoms, and the counts of the judged runs
recomputed by ``summarise`` (:func:`assay.transforms.rescore.key_counts`, handed in by the flow:
storage does not import transforms). The caller retires the old files and names the new ones in the
pass's own transaction; a concurrent pass over the same runs finds its old files retired and is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from .lake import FileFilter, Lake, LakeFile, codes

__all__ = ["Prior", "StateChange", "Summarise", "partitions", "prior", "stage"]

Summarise = Callable[[pl.LazyFrame], pl.LazyFrame]
"""Current atoms (run, case_run, key, met, reason, evaluator_code) -> per (run, key) counts."""


@dataclass(frozen=True)
class Prior:
    """The state files a pass over ``runs`` replaces, and what they hold."""

    runs: list[str]
    current_paths: list[str]
    current: pl.DataFrame | None
    counts_paths: list[str]
    counts: pl.DataFrame | None

    @property
    def latest_judged_at(self) -> datetime | None:
        """The newest judged_at in the files a pass replaces (the pass must be later)."""
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
    """The live state files holding any of ``runs``, with their rows."""
    where = FileFilter(runs=list(runs))
    current_paths, current = _read(lake, "current_results", where)
    counts_paths, counts = _read(lake, "run_key_counts", where)
    return Prior(list(runs), current_paths, current, counts_paths, counts)


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
