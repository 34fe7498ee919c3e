"""The body of ``assay.exams``: what ``assay run EXAM`` and ``assay ci`` say of each exam they administered.

Every exam gets one verdict — ``pass``, ``fail``, ``drift``, ``flaky``, ``stale`` or ``error`` — with the
conditions it was reached under, the counts, the spread, the cost, the receipts of failed replays and the
adapters that produced the evidence, each with what it guarantees. Exclusions (flaky, stale, errored) are
listed, never dropped.
"""

from __future__ import annotations

from typing import Any, Literal

from .document_runs import Body

ExamVerdictName = Literal["pass", "fail", "drift", "flaky", "stale", "error"]


class ExamCondition(Body):
    """What the replays ran under."""

    name: str | None
    """The condition's name as given (``--condition``), or None."""
    harness: str
    """The harness the exam names (``exam.toml`` ``runner.name``)."""
    harness_versions: list[str]
    """The harness versions the replays reported."""
    models: list[str]
    """The models the replays reported."""
    model_asked: str | None
    """The model asked for (``--model``); None: the exam's own."""
    fingerprint: str
    """The exam's environment fingerprint, which still matched when it ran."""


class ExamCounts(Body):
    """How the replays went."""

    replays: int
    held: int
    """Replays whose every gating (outcome and trajectory) assertion held."""
    failed: int
    errored: int
    """Replays the harness or our plumbing failed: excluded from the series."""


class ExamSpread(Body):
    """A measure over the replays that did not error: least, median, most."""

    min: float
    median: float
    max: float


class ExamReceipt(Body):
    """One failed replay and the assertions it failed."""

    replay: str
    """Which replay (``replay-0004``)."""
    case_run_id: str
    failed: list[dict[str, Any]]
    """``{key, reason}`` of each gating assertion that failed."""


class ExamAdapter(Body):
    """An adapter behind the evidence, and what it guarantees about it."""

    name: str
    guarantees: list[str]


class ExamVerdict(Body):
    """One exam's verdict and everything it rests on."""

    exam: str
    """The exam's slug."""
    path: str
    verdict: ExamVerdictName
    code: int
    """The exit code this verdict maps to."""
    reason: str
    suite: str | None
    """The suite it ran as (``TEAM/exam-SLUG``); None when it was not run (stale, flaky)."""
    run_id: str | None
    how: str | None
    """How the series was decided: ``held``, ``sequential``, ``undecided`` (budget spent), ``no-replays``."""
    at: int | None
    """For ``sequential``: the replay where the test crossed its bound."""
    lower: float | None
    """The one-sided 95 % Wilson lower bound of the rate the replays held at."""
    condition: ExamCondition | None
    counts: ExamCounts | None
    spread: dict[str, ExamSpread]
    """``cost_usd``, ``turns``, ``wall_seconds``."""
    cost_usd: float | None
    """What every replay cost together, errored ones included (they were paid for); None when unreported."""
    receipts: list[ExamReceipt]
    diagnostics: dict[str, dict[str, int]]
    """Per assertion that never decides the verdict (profile, judged, a band not calibrated yet): ``met``,
    ``not_met``, ``undetermined``."""
    errors: list[str]
    """Why replays errored (each distinct reason once)."""
    stale: list[str]
    """Why the pin or toolchain no longer applies (``stale`` only)."""
    calibration: dict[str, Any] | None
    """The figures that quarantined a ``flaky`` exam (``calibration.toml``)."""
    adapters: list[ExamAdapter]


class ExamsDoc(Body):
    """``assay run EXAM`` / ``assay ci``: each exam's verdict, the exclusions, and the exit code."""

    repo: str
    condition: str | None
    exams: list[ExamVerdict]
    counts: dict[str, int]
    """Exams per verdict."""
    excluded: list[dict[str, str]]
    """``{exam, verdict, why}`` of every exam left out of the counts of held and failed: flaky, stale, error."""
    code: int
    """The exit code: the most severe of the exams' (82, 80, 81, 83, 0)."""
