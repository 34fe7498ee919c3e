"""Judging as a separate act: new outcomes over stored evidence, and verdicts read from them.

- :func:`judge_runs` writes one outcome per case run per judging pass, with one result per current
  assertion version. Unchanged deterministic pairs (same assertion version, same evidence) are
  carried forward from the previous outcome instead of re-evaluated, unless ``force``. It reads the
  lake and the catalog and calls the judge; it never calls a runner.
- :func:`verdicts_for` reads each run's verdict per consumer under its stamped criteria version.
- :func:`rescore` applies another criteria version (or a candidate spec) to stored history: a query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl
import sqlalchemy as sa

import assay.adapters.runners  # noqa: F401  (registers the runners)
from assay.core.criteria import CriteriaSpec, resolve
from assay.core.ids import content_hash, new_id, stable_id
from assay.core.runner import registered
from assay.storage.catalog import tables as t
from assay.storage.catalog.assertions import criteria_spec, current_assertions, stamped_criteria
from assay.storage.catalog.runs import find_suite, suite_assertion_keys
from assay.transforms.judge import AWAITING_JUDGE, evaluate
from assay.transforms.verdicts import case_verdicts, flips, latest, run_verdicts

from .workspace import Workspace

_ASSIGNMENT = {
    "case_run_id": pl.String, "assertion_id": pl.String, "assertion_key": pl.String,
    "assertion_version": pl.Int32, "mechanism": pl.String, "params": pl.String,
}


def supported_mechanisms() -> dict[str, frozenset[str]]:
    """Runner name -> mechanisms its evidence supports, from the registry (capabilities as data)."""
    return {name: frozenset(cls.mechanisms) for name, cls in registered().items()}


def _in(column: str, values: Sequence[str]) -> pl.Expr:
    return pl.col(column).is_in(list(values))


def judge_evaluator(judge: str | None) -> str:
    """The evaluator name rubric results get from the judge configured now (see transforms.judge)."""
    return f"assay:judge:{judge}" if judge else "assay:judge"


def assignments(ws: Workspace, run_ids: Sequence[str], case_runs: pl.DataFrame) -> pl.DataFrame:
    """One row per (case run, current assertion version) that applies to it: suite-level and its case's."""
    parts = []
    with ws.engine.connect() as conn:
        suites = dict(conn.execute(sa.select(t.runs.c.run_id, t.runs.c.suite_id).where(t.runs.c.run_id.in_(run_ids))).all())
        for suite_id in sorted(set(suites.values())):
            runs_of_suite = [r for r, s in suites.items() if s == suite_id]
            these = case_runs.filter(_in("run_id", runs_of_suite)).select("case_run_id", "case_id")
            rows = current_assertions(conn, suite_id, these["case_id"].unique().to_list())
            if not rows or these.is_empty():
                continue
            catalog = pl.DataFrame(
                rows, schema_overrides={"assertion_version": pl.Int32, "case_id": pl.String, "suite_id": pl.String}
            )
            suite_level = these.join(catalog.filter(pl.col("suite_id").is_not_null()), how="cross")
            case_level = these.join(catalog.filter(pl.col("case_id").is_not_null()), on="case_id")
            parts += [suite_level.select(list(_ASSIGNMENT)), case_level.select(list(_ASSIGNMENT))]
    return pl.concat(parts) if parts else pl.DataFrame(schema=_ASSIGNMENT)


def judge_runs(
    ws: Workspace,
    run_ids: Sequence[str],
    *,
    trigger: str = "judge",
    keys: Iterable[str] | None = None,
    new_versions_only: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Write a new outcome for every case run of ``run_ids`` whose judgement would change.

    ``keys`` limits re-evaluation to those assertion keys (others are carried forward, or left out
    when they have no earlier result); ``new_versions_only`` evaluates only pairs with no earlier
    result; ``force`` re-evaluates even unchanged pairs.
    """
    run_ids = list(dict.fromkeys(run_ids))
    lake = ws.lake
    case_runs = lake.scan("case_runs").filter(_in("run_id", run_ids)).collect()
    evaluations = lake.scan("runner_evaluations").filter(_in("run_id", run_ids)).collect()
    todo = assignments(ws, run_ids, case_runs)
    previous = (
        latest(lake.scan("assertion_results").filter(_in("run_id", run_ids)))
        .select("case_run_id", "assertion_id", "met", "value", "reason", "evaluator")
        .collect()
    )
    marked = todo.join(previous, on=["case_run_id", "assertion_id"], how="left", maintain_order="left")
    has_prev = pl.col("evaluator").is_not_null()
    chosen = pl.lit(True) if keys is None else _in("assertion_key", sorted(set(keys)))
    judge = ws.settings.judge_model if ws.settings.judge_base_url else None
    # A rubric result is only as good as the judge that gave it: a change of judge is a change of pair.
    rejudged_rubric = (
        (pl.col("mechanism") == "rubric")
        & pl.col("evaluator").str.starts_with("assay:judge")
        & ((pl.col("evaluator") != judge_evaluator(judge)) | (pl.col("reason") == AWAITING_JUDGE))
    )
    if force:
        fresh = chosen
    elif new_versions_only:
        fresh = chosen & ~has_prev
    else:
        fresh = chosen & (~has_prev | rejudged_rubric)
    marked = marked.with_columns(fresh=fresh, carried=~fresh & has_prev)
    evaluated = evaluate(
        case_runs, evaluations, marked.filter("fresh").select(list(_ASSIGNMENT)), supported_mechanisms(), judge
    )
    carried = marked.filter("carried").drop("fresh", "carried")
    results = pl.concat([evaluated.select(carried.columns), carried]).with_columns(
        fresh=pl.Series([True] * evaluated.height + [False] * carried.height, dtype=pl.Boolean)
    )
    unjudged = marked.filter(~pl.col("fresh") & ~pl.col("carried")).height
    written = _write_pass(ws, case_runs, results, previous, trigger, judge)
    return {
        "runs": len(run_ids), "case_runs": case_runs.height, "outcomes": written,
        "evaluated": evaluated.height, "carried": carried.height, "unjudged": unjudged,
        "judge_calls": evaluated.filter(pl.col("mechanism") == "rubric").height if judge else 0,
    }


def _write_pass(
    ws: Workspace, case_runs: pl.DataFrame, results: pl.DataFrame, previous: pl.DataFrame, trigger: str, judge: str | None
) -> int:
    """Write the pass's outcomes and results; a case run whose judgement would not change gets none."""
    now = datetime.now(UTC)
    pass_id = new_id()
    per_run = results.group_by("case_run_id").agg(
        evaluated=pl.col("fresh").sum().cast(pl.Int64),
        carried=(~pl.col("fresh")).sum().cast(pl.Int64),
        ids=pl.col("assertion_id").sort(),
    )
    before = previous.group_by("case_run_id").agg(before=pl.col("assertion_id").sort())
    judged = (
        case_runs.select("case_run_id", "run_id", "case_key", "team_id", "date")
        .join(per_run, on="case_run_id", how="left")
        .join(before, on="case_run_id", how="left")
        .with_columns(pl.col("evaluated", "carried").fill_null(0))
        # Nothing new to say: every result carried and the same assertion set as the latest outcome.
        .filter(~((pl.col("evaluated") == 0) & (pl.col("ids").fill_null([]) == pl.col("before").fill_null([]))
                  & pl.col("before").is_not_null()))
    )
    judged = judged.with_columns(
        outcome_id=pl.Series([stable_id(pass_id, c) for c in judged["case_run_id"]], dtype=pl.String)
    )
    atoms = results.join(judged.select("case_run_id", "outcome_id", "run_id", "case_key", "team_id", "date"),
                         on="case_run_id")
    atoms = atoms.with_columns(
        result_id=pl.Series([stable_id(o, a) for o, a in zip(atoms["outcome_id"], atoms["assertion_id"])],
                            dtype=pl.String),
        judged_at=pl.lit(now).dt.cast_time_unit("us"),
    )
    outcomes = judged.with_columns(
        pass_id=pl.lit(pass_id), trigger=pl.lit(trigger), judged_at=pl.lit(now).dt.cast_time_unit("us"),
        judge=pl.lit(judge, dtype=pl.String),
    )
    result_columns = [f.name for f in ws.lake.table("assertion_results").arrow_schema]
    outcome_columns = [f.name for f in ws.lake.table("outcomes").arrow_schema]
    for (team, date), part in outcomes.partition_by("team_id", "date", as_dict=True).items():
        ws.lake.write("outcomes", part.select(outcome_columns), team_id=team, date=date)
        mine = atoms.filter(pl.col("team_id") == team, pl.col("date") == date)
        if mine.height:
            ws.lake.write("assertion_results", mine.select(result_columns), team_id=team, date=date)
    return outcomes.height


def _atoms(ws: Workspace, run_ids: Sequence[str]) -> pl.LazyFrame:
    return ws.lake.scan("assertion_results").filter(_in("run_id", run_ids))


def verdicts_for(ws: Workspace, run_ids: Sequence[str], *, cases: bool = False) -> list[dict[str, Any]]:
    """Each run's verdict per consumer under its stamped criteria version, from the latest outcomes.

    Next to it, the verdict stamped at finalisation (which never changes): they differ only when a
    re-judge has since produced newer outcomes.
    """
    with ws.engine.connect() as conn:
        stamped = stamped_criteria(conn, run_ids)
    out: list[dict[str, Any]] = []
    by_spec: dict[tuple[str, int, str], list[sa.Row]] = {}
    for row in stamped:
        by_spec.setdefault((row.consumer_key, row.version, str(row.spec)), []).append(row)
    for (consumer, version, _), rows in by_spec.items():
        spec = CriteriaSpec.model_validate(rows[0].spec)
        ids = [r.run_id for r in rows]
        computed = {v["run_id"]: v for v in run_verdicts(_atoms(ws, ids), spec).collect().to_dicts()}
        breakdown = case_verdicts(_atoms(ws, ids), spec).collect() if cases else None
        for r in rows:
            v = computed.get(r.run_id, {"verdict": None, "reason": "not judged yet"})
            entry = {
                "run_id": r.run_id, "consumer": consumer, "criteria_version": version,
                "stamped": r.verdict, "verdict": v["verdict"], "reason": v["reason"],
                "evaluators": v.get("evaluators", []),
            }
            if breakdown is not None:
                entry["cases"] = breakdown.filter(pl.col("run_id") == r.run_id).select(
                    "case_key", "verdict", "reason").sort("case_key").to_dicts()
            out.append(entry)
    return sorted(out, key=lambda e: (e["run_id"], e["consumer"]))


def rescore(
    ws: Workspace,
    suite: str,
    consumer: str,
    *,
    version: int | None = None,
    spec: CriteriaSpec | None = None,
    run_ids: Sequence[str] | None = None,
    materialise: bool = False,
) -> dict[str, Any]:
    """Apply a criteria version (or a candidate spec) to the suite's judged history.

    Reports every run's verdict under it and which runs flip against their stamped verdict for this
    consumer. Calls neither a runner nor the judge: it is a query over stored atoms. It writes
    nothing unless ``materialise``, which appends the verdicts to the lake's ``verdicts`` table.
    """
    with ws.engine.connect() as conn:
        s = find_suite(conn, suite)
        if spec is None:
            version, spec = criteria_spec(conn, s.suite_id, consumer, version)
            label = f"v{version}"
        else:
            label = "candidate"
        resolve(consumer, spec, suite_assertion_keys(conn, s.suite_id))
        q = sa.select(t.runs.c.run_id, t.runs.c.created_at, t.runs.c.team_id, t.runs.c.lake_date).where(
            t.runs.c.suite_id == s.suite_id, t.runs.c.finalised_at.is_not(None)
        )
        if run_ids is not None:
            q = q.where(t.runs.c.run_id.in_(list(run_ids)))
        rows = conn.execute(q.order_by(t.runs.c.created_at)).all()
        runs = {r.run_id: r.created_at for r in rows}
        stamped = {
            r.run_id: (r.verdict, r.version) for r in stamped_criteria(conn, runs) if r.consumer_key == consumer
        }
    verdicts = run_verdicts(_atoms(ws, list(runs)), spec).collect()
    table = verdicts.select("run_id", "verdict", "reason").with_columns(
        stamped=pl.col("run_id").replace_strict({k: v[0] for k, v in stamped.items()}, default=None,
                                                 return_dtype=pl.String),
    )
    flipped = flips(verdicts, table.select("run_id", "stamped").drop_nulls()) if stamped else pl.DataFrame()
    if materialise and verdicts.height:
        _materialise(ws, verdicts, rows, s.suite_id, consumer, label, spec)
    return {
        "suite": f"{s.team_id}/{s.suite_key}", "consumer": consumer, "criteria": label, "spec": spec.model_dump(),
        "runs": [
            {**r, "created_at": runs[r["run_id"]].isoformat(),
             "stamped_version": stamped.get(r["run_id"], (None, None))[1]}
            for r in table.sort("run_id").to_dicts()
        ],
        "flips": flipped.to_dicts() if flipped.height else [],
    }


def _materialise(
    ws: Workspace, verdicts: pl.DataFrame, runs: Sequence[sa.Row], suite_id: str, consumer: str, label: str,
    spec: CriteriaSpec,
) -> None:
    """Append re-scored verdicts to the lake's ``verdicts`` table (idempotent per run, consumer, spec)."""
    spec_hash = content_hash(spec.model_dump())
    where = pl.DataFrame(
        {"run_id": [r.run_id for r in runs], "team_id": [r.team_id for r in runs], "date": [r.lake_date for r in runs]}
    )
    frame = verdicts.join(where, on="run_id")
    frame = frame.with_columns(
        verdict_id=pl.Series([stable_id(r, consumer, spec_hash) for r in frame["run_id"]], dtype=pl.String),
        suite_id=pl.lit(suite_id), consumer_key=pl.lit(consumer), criteria=pl.lit(label),
        spec_hash=pl.lit(spec_hash), computed_at=pl.lit(datetime.now(UTC)).dt.cast_time_unit("us"),
    )
    columns = [f.name for f in ws.lake.table("verdicts").arrow_schema]
    for (team, date), part in frame.partition_by("team_id", "date", as_dict=True).items():
        ws.lake.write("verdicts", part.select(columns), team_id=team, date=date)
