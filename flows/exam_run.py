"""Administering exams: ``assay run EXAM`` and ``assay ci`` — a verdict per exam, under a named condition.

For each exam, cheapest first:

1. **STALE** before anything is spent: the pin or the toolchain fingerprint no longer applies
   (:func:`.exam_stale.stale_reasons`). Never a failure; exit 83 only with ``strict_stale``.
2. **FLAKY** before anything is spent: calibration (``calibration.toml``, :mod:`.exam_calibrate`) found the
   exam cannot hold the healthy rate; it is quarantined — reported, excluded from counts, never a FAIL.
3. Every other exam is loaded into the record as its own suite (:mod:`.exam_suite`: one case, the reviewed
   assertions, consumer ``exam_gate`` with the exam rule) and run through the ordinary ``run-suite`` flow with
   the runner of its harness: a first batch of replays, escalation while the series is undecided, judging
   (outcome and trajectory gate; profile and judged are diagnostics; the judge only sees replays whose
   cheaper tiers held). The consumer's series decision is the verdict: ``pass``, ``fail`` (only from an
   escalated series), ``drift`` (escalated, undecided at the budget) or ``error`` (every replay errored, or
   the run itself failed: our plumbing or the harness).

The report of each exam is read back from the record, so ``assay verdicts RUN`` and ``assay.connect()`` see
the same replays. Exit codes are the CLI's one contract (:mod:`assay.core.exit_codes`).
"""

from __future__ import annotations

import json
import statistics
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from assay.core.document_exam_runs import ExamsDoc, ExamVerdict
from assay.core.errors import NotFoundError
from assay.core.exam import Exam, load_exam
from assay.core.exit_codes import ExitCode, most_severe
from assay.core.plugins import registered

from .exam_calibrate import CALIBRATION_FILE
from .exam_stale import stale_reasons
from .gates import NO_VERDICT_STATUSES
from .exam_suite import CONSUMER, find_exams, gates, load_exams
from .workspace import Workspace

__all__ = ["RunSuite", "exam_code", "exam_report", "run_exams", "runner_for", "sweep_dead_replays"]

MEASURES = ("cost_usd", "turns", "wall_seconds")

RunSuite = Callable[[str, str, dict[str, Any], int | None, int | None], dict[str, Any]]
"""Runs one suite: (suite, runner, runner options, repeat, budget) -> the run's details (``run_details``)."""


def exam_code(verdict: str, strict_stale: bool = False) -> ExitCode:
    """The exit code of one exam's verdict."""
    return {"pass": ExitCode.PASS, "flaky": ExitCode.PASS, "fail": ExitCode.FAIL, "drift": ExitCode.DRIFT,
            "error": ExitCode.NO_VERDICT,
            "stale": ExitCode.STALE if strict_stale else ExitCode.PASS}[verdict]


def runner_for(harness: str) -> str:
    """The registered runner that replays exams of ``harness`` (its class's ``harness``)."""
    names = sorted(name for name, cls in registered().items()
                   if "exam" in cls.target_kinds and getattr(cls, "harness", None) == harness)
    if not names:
        known = sorted(getattr(c, "harness", "") for c in registered().values() if "exam" in c.target_kinds)
        raise NotFoundError("runner", f"for harness {harness!r}", "an exam replays with a runner of the harness its "
                            "exam.toml names (runner.name)", known=known, known_as="harnesses with a runner")
    return names[0]


def _calibrated_flaky(exam: Exam) -> dict[str, Any] | None:
    """The calibration figures when calibration found ``exam`` flaky, else None."""
    path = exam.path / CALIBRATION_FILE
    if not path.is_file():
        return None
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    if document.get("state") != "flaky":
        return None
    return {"when": str(document.get("when", "")), **dict(document.get("figures") or {})}


def _skipped(exam: Exam, verdict: str, reason: str, strict_stale: bool, *, stale: Sequence[str] = (),
             calibration: dict[str, Any] | None = None) -> ExamVerdict:
    return ExamVerdict(exam=exam.spec.slug, path=str(exam.path), verdict=verdict,  # type: ignore[arg-type]
                       code=int(exam_code(verdict, strict_stale)), reason=reason, suite=None, run_id=None, how=None,
                       at=None, lower=None, condition=None, counts=None, spread={}, cost_usd=None, receipts=[],
                       diagnostics={}, errors=[], stale=list(stale), calibration=calibration, adapters=[])


def sweep_dead_replays(ws: Workspace, repo: Path) -> list[Path]:
    """Remove the worktrees of ``repo`` that replays of dead runs left (a process killed mid-replay): those
    under the replay folder of a run of this workspace that is final or whose lease has expired. A live run's
    replays, and folders of runs this workspace does not know, are left alone. Returns the worktrees removed."""
    from datetime import UTC, datetime

    from assay.adapters.runners.exam_runner import replays_parent
    from assay.adapters.runners.worktree import sweep_worktrees
    import sqlalchemy as sa

    from assay.storage.catalog import tables as t

    root, swept = replays_parent("-").parent, []
    folders = sorted(root.iterdir()) if root.is_dir() else []
    with ws.engine.connect() as conn:
        runs = {r.run_id: r for r in conn.execute(
            sa.select(t.runs.c.run_id, t.runs.c.status, t.runs.c.lease_expires_at)
            .where(t.runs.c.run_id.in_([f.name for f in folders])))}
    now = datetime.now(UTC)
    for folder in folders:
        run = runs.get(folder.name)
        if run is None:
            continue
        expired = run.lease_expires_at is not None and run.lease_expires_at.replace(tzinfo=UTC) < now
        if run.status in t.FINAL_STATUSES or (run.status == "running" and expired):
            swept += sweep_worktrees(repo, folder)
            if not any(folder.iterdir()):
                folder.rmdir()
    return swept


def run_exams(ws: Workspace, repo: Path, names: Sequence[str], run_suite: RunSuite, *, team: str = "exams",
              condition: str | None = None, model: str | None = None, repeat: int | None = None,
              budget: int | None = None, parallel: int = 1, timeout: float | None = None,
              strict_stale: bool = False) -> dict[str, Any]:
    """Administer the exams of ``repo`` named by ``names`` (every exam when empty): the ``assay.exams`` body."""
    repo = Path(repo).resolve()
    exams = [load_exam(path) for path in find_exams(repo, names)]
    sweep_dead_replays(ws, repo)
    verdicts: dict[str, ExamVerdict] = {}
    live: list[Exam] = []
    for exam in exams:
        if reasons := stale_reasons(exam, repo):
            verdicts[exam.spec.slug] = _skipped(exam, "stale", "stale: " + "; ".join(reasons), strict_stale,
                                                stale=reasons)
        elif (figures := _calibrated_flaky(exam)) is not None:
            rate = figures.get("rate")
            shown = f"{rate:.2f}" if isinstance(rate, float) else "unknown"
            verdicts[exam.spec.slug] = _skipped(
                exam, "flaky", f"flaky: quarantined by calibration ({figures.get('reproduced')} of "
                f"{figures.get('n')} replays reproduced, rate {shown}); not replayed — make the exam "
                f"deterministic, then `assay calibrate {exam.spec.slug} -n 20` again", strict_stale,
                calibration=figures)
        else:
            live.append(exam)
    if live:
        kwargs = {"team": team} | ({"repeat": repeat} if repeat else {}) | ({"budget": budget} if budget else {})
        suites = load_exams(ws, repo, [e.path for e in live], **kwargs)["suites"]
        options = {"condition": condition, "model": model, "parallel": parallel, "timeout": timeout}
        for exam in live:
            suite = suites[exam.spec.slug]
            details = run_suite(suite, runner_for(exam.spec.runner.name),
                                {k: v for k, v in options.items() if v is not None}, repeat, budget)
            verdicts[exam.spec.slug] = exam_report(ws, exam, suite, details, condition, model, strict_stale)
    ordered = [verdicts[e.spec.slug] for e in exams]
    counts = {v: sum(1 for x in ordered if x.verdict == v) for v in ("pass", "fail", "drift", "flaky", "stale",
                                                                     "error")}
    excluded = [{"exam": x.exam, "verdict": x.verdict, "why": x.reason} for x in ordered
                if x.verdict in ("flaky", "stale", "error")]
    code = most_severe(exam_code(x.verdict, strict_stale) for x in ordered)
    return ExamsDoc(repo=str(repo), condition=condition, exams=ordered, counts=counts, excluded=excluded,
                    code=int(code)).model_dump(mode="json")


def _spread(values: Sequence[float]) -> dict[str, float] | None:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)} if values else None


def _artefacts(ws: Workspace, run_id: str) -> pl.DataFrame:
    return ws.lake.read("case_runs", run_id=run_id).select("case_run_id", "source_ref", "status", "error",
                                                           "cost_usd", "artefact")


def exam_report(ws: Workspace, exam: Exam, suite: str, details: Mapping[str, Any], condition: str | None,
                model: str | None, strict_stale: bool) -> ExamVerdict:
    """One exam's verdict, read back from the record of its run ``details``."""
    from .judging import verdicts_for
    from .rescoring import current_atoms

    run_id = details["run_id"]
    entry = next((r for r in verdicts_for(ws, [run_id], cases=True) if r["consumer"] == CONSUMER), None)
    series = (entry or {}).get("series") or [{}]
    decision = series[0]
    replays = _artefacts(ws, run_id)
    if details.get("status") in NO_VERDICT_STATUSES and not decision.get("runs"):
        why = details.get("status_reason") or "no reason recorded"
        verdict, reason = "error", f"error — the run ended {details.get('status')}: {why}"
    else:
        verdict = {"pass": "pass", "fail": "fail", "flaky": "drift"}.get(decision.get("verdict") or "", "error")
        reason = decision.get("reason") or (entry or {}).get("reason") or "no verdict: nothing was judged"
    cases = (entry or {}).get("cases") or []
    held = sum(1 for c in cases if c["verdict"] == "pass")
    failed = [c for c in cases if c["verdict"] == "fail"]
    refs = dict(zip(replays["case_run_id"], replays["source_ref"]))
    receipts = [{"replay": refs.get(c["case_run_id"], ""), "case_run_id": c["case_run_id"],
                 "failed": [{"key": r.get("assertion_key"), "reason": r.get("reason")} for r in c.get("results", [])]}
                for c in failed]
    artefacts = [json.loads(a) if a else {} for a in replays["artefact"]]
    sessions = [a.get("session") or {} for a in artefacts]
    ok = [s for s, status in zip(sessions, replays["status"]) if status != "error"]
    spread = {m: s for m in MEASURES
              if (s := _spread([float(x[m]) for x in ok if isinstance(x.get(m), int | float)])) is not None}
    costs = [c for c in replays["cost_usd"] if c is not None]
    adapters = {s["adapter"]: s.get("guarantees") or [] for s in sessions if s.get("adapter")}
    watched = sorted(a.key for a in exam.assertions
                     if a.status == "accepted" and (a.tier in ("profile", "judged") or not gates(a)))
    atoms = current_atoms(ws, [run_id]).filter(pl.col("assertion_key").is_in(watched)).select(
        "assertion_key", "met").collect()
    diagnostics = {}
    for key in watched:
        mine = atoms.filter(pl.col("assertion_key") == key)["met"]
        diagnostics[key] = {"met": int(mine.eq(True).sum()), "not_met": int(mine.eq(False).sum()),
                            "undetermined": int(mine.is_null().sum())}
    return ExamVerdict(
        exam=exam.spec.slug, path=str(exam.path), verdict=verdict, code=int(exam_code(verdict, strict_stale)),  # type: ignore[arg-type]
        reason=reason, suite=suite, run_id=run_id, how=decision.get("how"), at=decision.get("at"),
        lower=decision.get("lower"),
        condition={"name": condition, "harness": exam.spec.runner.name, "model_asked": model,
                   "harness_versions": sorted({s["harness_version"] for s in sessions if s.get("harness_version")}),
                   "models": sorted({s["model"] for s in sessions if s.get("model")}),
                   "fingerprint": exam.spec.environment.fingerprint},
        counts={"replays": replays.height, "held": held, "failed": len(failed),
                "errored": int((replays["status"] == "error").sum())},
        spread=spread, cost_usd=round(sum(costs), 6) if costs else None, receipts=receipts, diagnostics=diagnostics,
        errors=sorted({e for e in replays["error"] if e}), stale=[], calibration=None,
        adapters=[{"name": n, "guarantees": list(g)} for n, g in sorted(adapters.items())])
