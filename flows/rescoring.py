"""Re-scoring: a criteria version (or a candidate spec) applied to a suite's judged history — a query.

Calls neither a runner nor the judge. It reads the catalog (the suite, its criteria, its finalised runs
and their stamped verdicts) and the lake's per-(run, assertion key) counts, which every judging pass
keeps up to date (:mod:`assay.storage.state`), and writes nothing unless asked to materialise.

This module is the whole of ``assay rescore``'s path, kept apart from judging so the command imports
only what a query needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from assay.core.criteria import CriteriaSpec, resolve
from assay.core.ids import content_hash, id_code, name_code
from assay.storage.batches import BATCH_CASE_RUNS, packed
from assay.storage.catalog.assertions import criteria_spec
from assay.storage.catalog.runs import COVERAGE_COLUMNS, finalised_runs, find_suite, suite_assertion_keys
from assay.storage.lake import FileFilter, codes
from assay.transforms.repeats import repeated_run_verdicts
from assay.transforms.rescore import COUNT_COLUMNS, counted_run_verdicts
from assay.transforms.verdicts import VERDICT_COLUMNS, flips, run_verdicts, with_coverage

from .workspace import Workspace


def current_atoms(ws: Workspace, run_ids: Sequence[str], suite_id: str | None = None) -> pl.LazyFrame:
    """The current atoms (each case run's latest outcome's) of ``run_ids``, read from the lake's state."""
    where = FileFilter(suites=[suite_id]) if suite_id else FileFilter(runs=run_ids)
    return ws.lake.scan("current_results", where).filter(pl.col("run_id").is_in(list(run_ids)))


def replay_order(ws: Workspace, run_ids: Sequence[str], suite_id: str | None = None) -> pl.DataFrame:
    """``case_run_id, source_ref`` of the runs' case runs: the order of a repeated case's replays."""
    where = FileFilter(suites=[suite_id]) if suite_id else FileFilter(runs=run_ids)
    scan = ws.lake.scan("case_runs", where).filter(pl.col("run_id").is_in(list(run_ids)))
    return ws.lake.collect(scan.select("case_run_id", "source_ref"), "case_runs", where)


def coverage_frame(rows) -> pl.DataFrame:
    """Catalog rows carrying :data:`COVERAGE_COLUMNS` as the frame :func:`with_coverage` reads."""
    return pl.DataFrame([{c: r._mapping[c] for c in COVERAGE_COLUMNS} for r in rows],
                        schema={"run_id": pl.String, "status": pl.String, "status_reason": pl.String,
                                "case_count": pl.Int64, "case_runs": pl.Int64})


def _iso(column: str) -> pl.Expr:
    """A UTC timestamp as ISO 8601 text, as ``datetime.isoformat`` writes it."""
    return pl.col(column).dt.to_string("%Y-%m-%dT%H:%M:%S%.6f+00:00")


def batches(runs: pl.DataFrame, size: int | None = None) -> list[list[str]]:
    """``runs``' ids (with their ``case_runs``) in order, in batches of about ``size`` (:data:`BATCH_CASE_RUNS`)
    case runs."""
    size = BATCH_CASE_RUNS if size is None else size
    return packed(runs.select("run_id", pl.col("case_runs").fill_null(0)).iter_rows(), size)


def _batched(parts: list[list[str]], verdicts: Callable[[list[str]], pl.DataFrame]) -> pl.DataFrame:
    """``verdicts`` of each batch of runs, one batch at a time, together (a run's verdict reads its atoms only)."""
    return pl.concat([verdicts(batch) for batch in parts or [[]]], how="vertical_relaxed")


def _rescored(ws: Workspace, suite_id: str, runs: pl.DataFrame, spec: CriteriaSpec, keys: set[str]) -> pl.DataFrame:
    """Each run's verdict under ``spec``, from the per-(run, key) counts the lake keeps (the suite's files only).

    Codes are 64 bits of each id or name; should two of the suite's runs or keys ever share one, the
    verdicts are computed from the text columns instead (same rules, slower). Counts summarised by an
    earlier build (``run_key_counts`` v1: no undetermined case runs nor reasons, read null) are not
    used either: the verdicts are then computed from the stored atoms, which hold every reason. Atoms are
    read a batch of runs at a time (:func:`batches`), never the suite's at once.
    """
    run_ids = runs["run_id"].to_list()
    parts = batches(runs)
    where = FileFilter(suites=[suite_id])

    def from_current(batch: list[str]) -> pl.DataFrame:
        mine = FileFilter(runs=batch)
        return ws.lake.collect(run_verdicts(current_atoms(ws, batch), spec), "current_results", mine)

    if spec.pass_rate is not None:  # a per-case rate reads each replay's verdict: from the atoms
        def by_rate(batch: list[str]) -> pl.DataFrame:
            mine = FileFilter(runs=batch)
            atoms = ws.lake.collect(current_atoms(ws, batch), "current_results", mine).lazy()
            judged, _ = repeated_run_verdicts(atoms, spec, replay_order(ws, batch))
            return judged.select("run_id", *VERDICT_COLUMNS)

        return _batched(parts, by_rate).sort("run_id")
    if spec.capable_only():  # which results apply reads each result's evaluator: from the atoms
        return _batched(parts, from_current)
    by_code = {id_code(r): r for r in run_ids}
    key_codes = {k: name_code(k) for k in keys | set(spec.required) | set(spec.ignore)
                 | {k for g in spec.threshold for k in g.keys}}
    if len(by_code) < len(run_ids) or len(set(key_codes.values())) < len(key_codes):
        return _batched(parts, from_current)
    scan = ws.lake.scan("run_key_counts", where).filter(pl.col("run").is_in(list(by_code)))
    counts = ws.lake.collect(scan.select(COUNT_COLUMNS), "run_key_counts", where)  # read once: a row per (run, key)
    if counts["case_runs"].has_nulls():
        def from_history(batch: list[str]) -> pl.DataFrame:
            mine = FileFilter(runs=batch)
            atoms = ws.lake.scan("assertion_results", mine).filter(pl.col("run_id").is_in(batch))
            return ws.lake.collect(run_verdicts(atoms, spec), "assertion_results", mine)

        return _batched(parts, from_history)
    with ws.engine.connect() as conn:
        names = codes.names_of(conn)
    coded = counted_run_verdicts(counts.lazy(), spec, key_codes, names).collect()
    # each code back to its id by lookup (every code is one of by_code's: the counts were read for those only);
    # a join here gathers the nested verdict columns, 50-70 ms for 20,000 runs against 4 ms. A suite with no
    # runs maps nothing, and Polars (2.1) then returns the codes' column unchanged, whatever the return type
    # or a cast after it ask for: there, the empty column is cast on its own
    run_id = (pl.col("run").replace_strict(pl.Series(list(by_code), dtype=coded.schema["run"]),
                                           pl.Series(list(by_code.values()), dtype=pl.String))
              if by_code else pl.col("run").cast(pl.String))
    return coded.select(run_id.alias("run_id"), *VERDICT_COLUMNS).sort("run_id")


def rescore(
    ws: Workspace,
    suite: str,
    consumer: str,
    *,
    version: int | None = None,
    spec: CriteriaSpec | None = None,
    run_ids: Sequence[str] | None = None,
    materialise: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Apply a criteria version (or a candidate spec) to the suite's judged history.

    Reports every run's verdict under it (oldest run first, each with its runner) and which runs flip against their stamped verdict for this
    consumer. It writes nothing unless ``materialise``, which appends the verdicts to the lake's
    ``verdicts`` table. ``progress(scored, total)`` hears of the runs: none once they are listed, all
    once scored (one query: there is nothing in between to tell).
    """
    with ws.engine.connect() as conn:
        s = find_suite(conn, suite)
        if spec is None:
            version, spec = criteria_spec(conn, s.suite_id, consumer, version)
            label = f"v{version}"
        else:
            label = "candidate"
        keys = suite_assertion_keys(conn, s.suite_id)
        resolve(consumer, spec, keys)
        runs = finalised_runs(conn, s.suite_id, consumer, run_ids)
    if progress is not None:
        progress(0, runs.height)
    verdicts = with_coverage(_rescored(ws, s.suite_id, runs, spec, keys),
                             runs.select(COVERAGE_COLUMNS), spec)
    coverage = ("counted", "excluded", "case_runs", "case_runs_counted")
    table = (verdicts.select("run_id", "verdict", "reason", *coverage)
             .join(runs.select("run_id", "stamped", "stamped_version", "created_at", "runner"), on="run_id", how="left")
             .sort("created_at", "run_id"))
    if progress is not None:
        progress(runs.height, runs.height)
    flipped = flips(verdicts, table.select("run_id", "stamped").drop_nulls())
    judged = verdicts.filter(pl.col("verdict").is_not_null())
    if materialise and judged.height:
        from assay.storage.judgments import write_verdicts

        where = runs.select("run_id", "team_id", date="lake_date")
        write_verdicts(ws.lake, judged.join(where, on="run_id"), suite_id=s.suite_id, consumer=consumer,
                       criteria=label, spec_hash=content_hash(spec.model_dump()))
    return {
        "suite": f"{s.team_id}/{s.suite_key}", "consumer": consumer, "criteria": label, "spec": spec.model_dump(),
        "runs": table.select("run_id", "runner", "verdict", "reason", "stamped", _iso("created_at"),
                              "stamped_version", *coverage).to_dicts(),
        "flips": flipped.to_dicts(),
    }


__all__ = ["current_atoms", "rescore"]
