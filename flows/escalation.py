"""Escalation: more replays for the repeated cases the evidence has not decided, within the run's budget.

A run that repeats its cases (``assay run --repeat N``) and has an escalation budget (``--budget M``, or the
suite's ``repeat: {count, budget}``) does not stop at N replays when a consumer's criteria asks for a per-case
``pass_rate`` and a case is still undecided (flaky). Under the same lease, after each round :func:`escalation`
judges what the run has reported so far and, for each undecided case, adds the fewest further replays that
could decide it (:func:`assay.transforms.series.replays_to_decide`), never past the budget. It stops when every
case is decided for every such consumer, or at the budget; the verdict then says which (a case still
undecided at the budget is flaky, with its pass rate and bounds).

The decision of a case is read again at judging from all its replays, so the rounds change how many replays
there are, never how they are judged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from assay.core.criteria import CriteriaSpec
from assay.core.runner import CaseSpec, Heartbeat, RunJob
from assay.storage.catalog.assertions import stamped_criteria
from assay.storage.catalog.runs import RunRow, replay_ref
from assay.transforms.repeats import escalation_needs

from .workspace import Workspace

log = logging.getLogger(__name__)


RENEW_SECONDS = 10.0
"""While a round is judged, the lease is renewed at most this often (each renewal is a catalog write)."""


def _every(seconds: float, beat: Heartbeat) -> Callable[[int, int, str], None]:
    """A judging progress callback that calls ``beat`` at most once every ``seconds``."""
    last = time.monotonic()

    def heard(done: int, total: int, unit: str) -> None:
        nonlocal last
        if time.monotonic() - last >= seconds:
            last = time.monotonic()
            beat()

    return heard


def escalation(ws: Workspace, run: RunRow, job: RunJob) -> Callable[[Heartbeat], RunJob | None] | None:
    """The ``more`` of :func:`assay.core.runner.drive` for ``run``: None when it has no budget, or no
    consumer's criteria asks for a per-case pass rate (there is then nothing to decide)."""
    if run.budget is None or run.budget <= run.repeat:
        return None
    with ws.engine.connect() as conn:
        specs = [CriteriaSpec.model_validate(r.spec) for r in stamped_criteria(conn, [run.run_id])]
    specs = [s for s in specs if s.pass_rate is not None]
    if not specs:
        log.info("run %s: a budget of %d replays, but no consumer asks for a per-case pass rate: no escalation",
                 run.run_id, run.budget)
        return None
    budget = run.budget
    replays = {c.case_key: run.repeat for c in job.cases}
    first = {c.case_key: c for c in job.cases}

    def more(heartbeat: Heartbeat) -> RunJob | None:
        from .judging import judge_runs
        from .rescoring import current_atoms, replay_order

        # judging a round may take a while (our judge answers the rubrics): the lease is renewed as it goes
        judge_runs(ws, [run.run_id], trigger="run", progress=_every(RENEW_SECONDS, heartbeat))
        heartbeat()
        atoms, order = current_atoms(ws, [run.run_id]).collect().lazy(), replay_order(ws, [run.run_id])
        needs: dict[str, int] = {}
        for spec in specs:
            for key, n in escalation_needs(atoms, spec, order).items():
                needs[key] = max(needs.get(key, 0), n)
        cases: list[CaseSpec] = []
        for key in sorted(needs):
            start, add = replays[key], min(needs[key], budget - replays[key])
            cases += [CaseSpec(case_id=first[key].case_id, case_key=key, content=first[key].content,
                               source_ref=replay_ref(n)) for n in range(start + 1, start + add + 1)]
            replays[key] = start + add
        if not cases:
            return None
        log.info("run %s: escalating %d undecided case(s) with %d more replay(s)", run.run_id,
                 len({c.case_key for c in cases}), len(cases))
        return RunJob(run_id=job.run_id, team_id=job.team_id, suite_key=job.suite_key, target_kind=job.target_kind,
                      target=job.target, cases=tuple(cases), deadline_at=job.deadline_at, assertions=job.assertions)

    return more
