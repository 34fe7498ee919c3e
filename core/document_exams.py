"""The bodies of the documents about coding-agent exams: ``assay.sessions``, ``assay.bless``, ``assay.distil``,
``assay.review``, ``assay.calibrate`` and ``assay.export``."""

from __future__ import annotations

from typing import Literal

from .document_runs import Body


class SessionRow(Body):
    """A coding-agent session found on this machine."""

    session_id: str
    harness: str
    """The capture adapter that reads it."""
    path: str
    """Its transcript file."""
    cwd: str | None
    """The working directory it started in."""
    started_at: str | None
    ended_at: str | None
    first_prompt: str | None
    """The first thing the person asked, on one line."""
    blessed: bool
    """Kept as a standard (``assay bless``)."""


class SessionsDoc(Body):
    """``assay sessions``: the sessions of a repository, newest first."""

    repo: str
    """The repository they ran in (the directory or one inside it)."""
    sessions: list[SessionRow]


class SessionSummary(Body):
    """What a session did, counted."""

    turns: int
    tool_calls: int
    tools: list[str]
    """Tool names used, in order of first use."""
    files_read: int
    files_written: list[str]
    commands: int
    test_runs: int
    tokens: int
    """Input, output and cache tokens over its distinct responses (subagents not included)."""
    cost_usd: float | None
    """What the harness reported it cost; None when its transcripts carry no cost."""
    wall_seconds: float | None
    subagents: int
    unknown_types: dict[str, int]
    """Record types the reader did not know, counted (never fatal)."""
    unmatched_calls: int
    """Tool calls that never got a result."""


class BlessDoc(Body):
    """``assay bless``: a finished session kept as the standard."""

    session_id: str
    harness: str
    harness_version: str | None
    model: str | None
    transcript: str
    """The transcript file it was read from."""
    blessed: str
    """Where the workspace keeps it."""
    created: bool
    """False when it was blessed already (nothing written)."""
    summary: SessionSummary


class DistilledAssertion(Body):
    """A suggested assertion of an exam."""

    key: str
    tier: Literal["outcome", "trajectory", "profile", "judged"]
    check: str
    status: Literal["draft", "accepted"]
    evidence: list[str]
    """What it was drawn from: call ids, commands and exit codes, turns."""


class DistilDoc(Body):
    """``assay distil``: an exam directory written from a blessed session."""

    session_id: str
    exam: str
    """The exam's slug."""
    path: str
    """The exam directory, to commit with the code."""
    files: list[str]
    """The files written there."""
    commit: str
    """The workspace pin."""
    patch: bool
    """Whether a ``workspace.patch`` carries uncommitted state the session started from."""
    fingerprint: str
    """The environment fingerprint the exam was distilled under."""
    tools: list[str]
    """The tool allowlist: the tools the session used."""
    assertions: list[DistilledAssertion]
    """Every suggestion, each a draft until reviewed (``assay review``)."""


class ReviewDoc(Body):
    """``assay review``: drafts accepted or deleted; what is still a draft."""

    exam: str
    path: str
    accepted: list[str]
    """Keys accepted by this command."""
    deleted: list[str]
    """Keys deleted by this command."""
    drafts: list[DistilledAssertion]
    """Still drafts: an exam with drafts does not run."""
    reviewed: list[DistilledAssertion]
    """Accepted, in the file's order."""


class ExportRedaction(Body):
    """One secret span replaced on the way out (never the secret itself)."""

    file: str
    """The file written, relative to the export's directory."""
    line: int
    """Its line in that file, from 1."""
    rule: str
    """The redaction rule that fired (``aws access key id``, ``named value``, ``private key block``, ...)."""


class ExportDoc(Body):
    """``assay export``: an exam directory copied out of the repository with its secrets redacted, as it is or
    as a Harbor task."""

    exam: str
    """The exam's slug."""
    path: str
    """The directory written: ``<out>/<slug>``."""
    harbor: bool
    """Whether it is a Harbor (terminal-bench 2) task directory rather than a copy of the exam directory."""
    files: list[str]
    """Every file written, relative to ``path``."""
    redacted: dict[str, int]
    """Spans redacted per file (files with none are left out)."""
    redactions: list[ExportRedaction]
    """Each span redacted: its file, line and rule."""


class CalibrationSpread(Body):
    """A measure over the replays that did not error: least, median, most."""

    min: float
    median: float
    max: float


class CalibratedBand(Body):
    """A ``band`` assertion calibrated from the reproduced replays."""

    key: str
    measure: Literal["turns", "cost_usd", "wall_seconds"]
    k: float
    """The spread multiplier: the band is ``center`` +/- ``k`` x ``spread``."""
    center: float
    """The median of the reproduced replays' measure."""
    spread: float
    """Their median absolute deviation scaled by 1.4826, at least 1 % of the centre and never 0."""
    within: int
    """How many reproduced replays lie within the band, judged with it."""


class CalibrateDoc(Body):
    """``assay calibrate``: an exam replayed under fixed conditions, how often it reproduced, and its state."""

    exam: str
    """The exam's slug."""
    path: str
    """The exam directory."""
    state: Literal["reproducible", "flaky", "error"]
    """``reproducible``: the rate's Wilson upper bound reaches ``healthy``; ``flaky``: it does not (the exam is
    quarantined, never a FAIL); ``error``: every replay errored (nothing written)."""
    n: int
    """Replays run."""
    reproduced: int
    """Replays that met every outcome and trajectory assertion (bands aside) and verify.sh."""
    errored: int
    """Replays that errored: left out of the rate."""
    rate: float | None
    """Reproduced over the replays that did not error; None when every replay errored."""
    lower: float | None
    """The rate's one-sided 95 % Wilson lower bound."""
    upper: float | None
    """The rate's one-sided 95 % Wilson upper bound."""
    healthy: float
    """The reproduction rate an exam is held to (the exam policy's)."""
    cost_mean: float | None
    """Mean cost of a replay that did not error, in USD; None when the harness reported none."""
    cost_median: float | None
    turns: CalibrationSpread | None
    wall_seconds: CalibrationSpread | None
    failing: dict[str, int]
    """Per assertion key: how many replays (not errored) it failed in."""
    undetermined: dict[str, int]
    """Per assertion key: how many replays it could not be decided in (each counted as not reproduced)."""
    errors: list[str]
    """Why each errored replay errored."""
    bands: list[CalibratedBand]
    bands_unset: dict[str, str]
    """Band keys left as they were, and why."""
    harness: str
    """The harness adapter that replayed the exam."""
    harness_version: str | None
    model: str | None
    fingerprint: str
    """The exam's environment fingerprint."""
    when: str
    """When the calibration finished, UTC."""
    written: list[str]
    """Files written in the exam directory: ``calibration.toml`` and, when a band was set, ``assertions.toml``."""
