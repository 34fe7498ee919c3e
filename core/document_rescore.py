"""The bodies of ``assay rescore``: a criteria applied to a suite's history (``assay.rescore``), and the
what-if of a candidate over the whole fleet's (``assay.whatif``)."""

from __future__ import annotations

from .criteria import CriteriaSpec
from .document_runs import Body, Verdict


class RescoredRun(Body):
    """One run under the applied criteria."""

    run_id: str
    """The run."""
    runner: str
    """The runner it ran on."""
    verdict: Verdict | None
    """Its verdict under these criteria."""
    reason: str | None
    """Why."""
    stamped: Verdict | None
    """Its stamped verdict for this consumer."""
    created_at: str
    """When the run was created."""
    stamped_version: int | None
    """The criteria version that verdict was stamped under."""
    counted: int | None = None
    """Counted results that decided it (undetermined ones left out under ``allow_undetermined`` are not
    counted); null when nothing was judged."""
    excluded: int | None = None
    """Undetermined counted results left out under the criteria's ``allow_undetermined``."""
    case_runs: int | None = None
    """Case runs judged."""
    case_runs_counted: int | None = None
    """Of them, those with a counted result that was not left out: the verdict's coverage."""


class Flip(Body):
    """A run whose verdict under these criteria differs from its stamped one."""

    run_id: str
    """The run."""
    stamped: Verdict
    """Stamped."""
    verdict: Verdict | None
    """Under these criteria."""
    reason: str | None
    """Why."""


class RescoreDoc(Body):
    """``assay rescore``."""

    suite: str
    """TEAM/SUITE."""
    consumer: str
    """Whose criteria."""
    criteria: str
    """``vN`` (a stored version) or the candidate spec's label."""
    spec: CriteriaSpec
    """The spec applied."""
    runs: list[RescoredRun]
    """Every finalised run of the suite, oldest first."""
    flips: list[Flip]
    """Those whose verdict flips."""


class WhatifGroup(Body):
    """One team, suite and consumer under the candidate criteria."""

    team: str
    """The team."""
    suite: str
    """TEAM/SUITE."""
    consumer: str
    """Whose stamped verdicts the candidate is compared with."""
    runs: int
    """Runs with a stamped verdict for this consumer."""
    flips: int
    """Of those, runs whose verdict under the candidate differs."""
    pass_to_fail: int
    """Stamped pass, fail under the candidate."""
    fail_to_pass: int
    """Stamped fail, pass under the candidate."""
    to_error: int
    """Flips to error."""
    from_error: int
    """Flips from a stamped error."""


class WhatifFlip(Body):
    """A run and consumer whose stamped verdict the candidate flips."""

    run_id: str
    """The run."""
    team: str
    """Its team."""
    suite: str
    """TEAM/SUITE."""
    consumer: str
    """The consumer whose stamped verdict flips."""
    created_at: str
    """When the run was created."""
    stamped: Verdict
    """Stamped at finalisation."""
    verdict: Verdict
    """Under the candidate, over the current results."""
    reason: str | None
    """Why, under the candidate."""
    keys: list[str]
    """The keys that decide one verdict and not the other (required keys failed, threshold groups missed)."""


class WhatifSkip(Body):
    """A suite in scope the candidate does not resolve against."""

    suite: str
    """TEAM/SUITE."""
    why: str
    """The keys the candidate names that the suite's assertions lack."""


class WhatifDoc(Body):
    """``assay rescore --spec FILE`` without a suite: a candidate criteria over history."""

    since: str | None
    """First day in scope (runs created on or after it), or null."""
    team: str | None
    """The team in scope, or null for every team."""
    consumer: str | None
    """The consumer in scope, or null for every consumer."""
    spec: CriteriaSpec
    """The candidate."""
    runs: int
    """Finalised runs of the suites the candidate applies to."""
    groups: list[WhatifGroup]
    """By team, suite and consumer."""
    flips: list[WhatifFlip]
    """Every flip, oldest first within its group."""
    skipped: list[WhatifSkip]
    """Suites in scope the candidate does not apply to."""
