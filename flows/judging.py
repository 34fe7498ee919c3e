"""Judging as a separate act: new outcomes over stored evidence, and verdicts read from them.

Orchestration only: the catalog is read through :mod:`assay.storage.catalog`, what to evaluate is the
policy of :mod:`assay.transforms.carry`, evaluation is :mod:`assay.transforms.judge`, our judge answers the
rubric results in :mod:`.judge_calls`, and what a pass concluded is written by
:mod:`assay.storage.judgments`.

- :func:`judge_runs` writes one outcome per case run per judging pass, with one result per current
  assertion version. Unchanged pairs (same assertion version, same evidence, same evaluator version,
  same judge) are carried forward from the previous outcome instead of re-evaluated, unless ``force``.
  It reads the lake and the catalog and calls the judge; it never calls a runner.
- :func:`verdicts_for` reads each run's verdict per consumer under its stamped criteria version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.core.criteria import CriteriaSpec
from assay.core.errors import ConcurrentWriteError, HistoryError
from assay.core.names import listed
from assay.core.plugins import registered
from assay.storage.catalog.assertions import assignments, stamped_criteria
from assay.storage.catalog.runs import history_runs, run_budgets, run_coverage
from assay.storage.judgments import write_pass
from assay.storage.lake import FileFilter
from assay.transforms.carry import STORED, new_outcomes, pass_results, plan_pass
from assay.transforms.judge import evaluate
from assay.transforms.mechanisms import evaluator_versions
from assay.transforms.repeats import repeated_run_verdicts, without_pass_rate
from assay.transforms.rescore import key_counts
from assay.transforms.verdicts import latest, run_verdicts, with_coverage

from .drill import case_detail, case_entries
from .rescoring import coverage_frame, current_atoms, replay_order
from .judge_calls import answer_rubrics
from .workspace import Workspace


def supported_mechanisms() -> dict[str, frozenset[str]]:
    """Runner name -> mechanisms its evidence supports, from the registry (capabilities as data)."""
    return {name: frozenset(cls.mechanisms) for name, cls in registered().items()}


def _in(column: str, values: Sequence[str]) -> pl.Expr:
    return pl.col(column).is_in(list(values))


def judgeable(ws: Workspace, run_ids: Sequence[str]) -> list[str]:
    """``run_ids`` without imported history (legacy runs hold stored verdicts, nothing of ours to judge);
    a :class:`HistoryError` when every run named is history."""
    with ws.engine.connect() as conn:
        history = set(history_runs(conn, run_ids))
    if history and history >= set(run_ids):
        raise HistoryError(
            f"imported history: nothing to judge in {listed(sorted(history))}: a legacy run keeps its legacy "
            "verdict as one opaque result per case run, as imported; read them with `assay runs show RUN` and "
            "`assay show CASE_RUN`")
    return [r for r in run_ids if r not in history]


ATTEMPTS = 3
"""How many times a pass is planned and written when other passes keep changing the same runs meanwhile
(each refusal re-plans over what they committed: their results may now be carried)."""


def judge_runs(
    ws: Workspace,
    run_ids: Sequence[str],
    *,
    trigger: str = "judge",
    keys: Iterable[str] | None = None,
    new_versions_only: bool = False,
    force: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Write a new outcome for every case run of ``run_ids`` whose judgement would change.

    Which pairs are evaluated afresh and which are carried forward is the policy of
    :mod:`assay.transforms.carry`: ``keys`` limits re-evaluation to those assertion keys,
    ``new_versions_only`` to pairs with no earlier result, and ``force`` re-evaluates unchanged pairs.
    ``progress(done, total, unit)`` hears how far the pass is: ``"case runs"`` judged (none once they
    are read, all once the pass, one transaction, is written) and, in between, the ``"judge answers"``
    received, one by one, when our judge is asked.

    A pass refused because another pass on the same runs committed first (:class:`ConcurrentWriteError`)
    is planned again over what that one wrote, up to :data:`ATTEMPTS` times.
    """
    run_ids = judgeable(ws, list(dict.fromkeys(run_ids)))
    lake = ws.lake
    these = FileFilter(runs=run_ids)
    case_runs = lake.read("case_runs", these).filter(_in("run_id", run_ids))
    evaluations = lake.read("runner_evaluations", these).filter(_in("run_id", run_ids))
    tell = progress or (lambda done, total, unit: None)
    tell(0, case_runs.height, "case runs")
    with ws.engine.connect() as conn:
        todo = assignments(conn, run_ids, case_runs)
    judge = ws.settings.judge_model if ws.settings.judge_base_url else None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            done = _one_pass(ws, run_ids, case_runs, evaluations, todo, judge, trigger=trigger, keys=keys,
                             new_versions_only=new_versions_only, force=force, progress=progress)
            break
        except ConcurrentWriteError as exc:
            if attempt == ATTEMPTS:
                raise ConcurrentWriteError(
                    f"judging {listed(run_ids)}: other passes changed these runs' current results {ATTEMPTS} times "
                    "while this one was written, and it was planned again each time; nothing was written; "
                    "judge again once the other passes are done") from exc
    tell(case_runs.height, case_runs.height, "case runs")
    return {"runs": len(run_ids), "case_runs": case_runs.height, **done}


def _one_pass(
    ws: Workspace, run_ids: Sequence[str], case_runs: pl.DataFrame, evaluations: pl.DataFrame, todo: pl.DataFrame,
    judge: str | None, *, trigger: str, keys: Iterable[str] | None, new_versions_only: bool, force: bool,
    progress: Callable[[int, int, str], None] | None,
) -> dict[str, Any]:
    """Plan the pass over the latest outcomes as they stand now, evaluate, write: one attempt of :func:`judge_runs`
    (:class:`ConcurrentWriteError` when another pass on the same runs committed first)."""
    previous = (
        latest(ws.lake.scan("assertion_results", runs=run_ids).filter(_in("run_id", run_ids)))
        .select("case_run_id", "assertion_id", *STORED)
        .collect()
    )
    versions = evaluator_versions()
    plan = plan_pass(todo, previous, versions=versions, judge=judge, keys=keys,
                     new_versions_only=new_versions_only, force=force)
    evaluated = evaluate(case_runs, evaluations, plan.fresh, supported_mechanisms(), judge)
    asked = (lambda done, total: progress(done, total, "judge answers")) if progress else None
    evaluated, spent = answer_rubrics(ws, evaluated, case_runs, judge, asked, plan.carried)  # cache, then requests
    results = pass_results(evaluated, plan.carried, versions)
    outcomes = new_outcomes(case_runs.select("case_run_id", "run_id", "case_key", "team_id", "date"), results, previous)
    written = write_pass(ws.lake, outcomes, results, trigger=trigger, judge=judge, summarise=key_counts)
    return {"outcomes": written, "evaluated": evaluated.height, "carried": plan.carried.height,
            "unjudged": plan.left_out, **spent}


COVERAGE = ("counted", "excluded", "case_runs", "case_runs_counted")
SERIES_FIELDS = ("case_key", "verdict", "passes", "runs", "errors", "lower", "upper", "how", "at", "reason")
"""What a verdict under a per-case pass rate says of each case: its decision over its replays."""
"""What each verdict says it counted, next to its reason."""


def verdicts_for(ws: Workspace, run_ids: Sequence[str], *, cases: bool = False) -> list[dict[str, Any]]:
    """Each run's verdict per consumer under its stamped criteria version, from the latest outcomes, in
    the order of ``run_ids`` (then by consumer).

    Next to it, the verdict stamped at finalisation (which never changes): they differ only when a
    re-judge has since produced newer outcomes. With ``cases``, each entry's ``cases`` lists its case
    runs (:func:`.drill.case_entries`): case key, case-run id, call id, verdict, reason and the results
    that decided a fail or an error.
    """
    with ws.engine.connect() as conn:
        stamped = stamped_criteria(conn, run_ids)
        coverage = coverage_frame(run_coverage(conn, run_ids))
        budgets = run_budgets(conn, run_ids)
    detail = case_detail(ws, run_ids) if cases else None
    out: list[dict[str, Any]] = []
    by_spec: dict[tuple[str, int, str], list[sa.Row]] = {}
    for row in stamped:
        by_spec.setdefault((row.consumer_key, row.version, str(row.spec)), []).append(row)
    for (consumer, version, _), rows in by_spec.items():
        spec = CriteriaSpec.model_validate(rows[0].spec)
        ids = [r.run_id for r in rows]
        decisions: dict[str, list[dict[str, Any]]] = {}  # run id -> this consumer's case decisions
        if spec.pass_rate is None:
            judged = run_verdicts(current_atoms(ws, ids), spec).collect()
        else:
            judged, decided = repeated_run_verdicts(current_atoms(ws, ids), spec, replay_order(ws, ids), budgets)
            for d in decided.iter_rows(named=True):
                decisions.setdefault(d["run_id"], []).append(d)
        covered = with_coverage(judged, coverage.filter(pl.col("run_id").is_in(ids)), spec)
        computed = {v["run_id"]: v for v in covered.to_dicts()}
        breakdown = case_entries(detail, without_pass_rate(spec), ids) if detail is not None else None
        for r in rows:
            v = computed.get(r.run_id, {"verdict": None, "reason": "not judged yet"})
            entry = {
                "run_id": r.run_id, "consumer": consumer, "criteria_version": version,
                "stamped": r.verdict, "verdict": v["verdict"], "reason": v["reason"],
                "evaluators": v.get("evaluators", []), **{c: v.get(c) for c in COVERAGE},
            }
            if breakdown is not None:
                entry["cases"] = breakdown.get(r.run_id, [])
            if spec.pass_rate is not None:
                entry["series"] = [{k: d[k] for k in SERIES_FIELDS} for d in decisions.get(r.run_id, [])]
            out.append(entry)
    order = {run_id: n for n, run_id in enumerate(run_ids)}  # the runs as chosen: a suite's oldest first
    return sorted(out, key=lambda e: (order.get(e["run_id"], len(order)), e["run_id"], e["consumer"]))
