"""The bodies of the documents about runs and verdicts: ``assay.run``, ``assay.runs``, ``assay.verdicts``,
``assay.judge`` and ``assay.rejudge`` (those of ``assay.rescore`` are in :mod:`.document_rescore`).

Every model forbids unknown fields: a document that grows a field without its model fails the tests.
:mod:`.document_models` wraps each body with the document's envelope and writes the JSON Schemas.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


Verdict = Literal["pass", "fail", "error"]
RunStatus = Literal["pending", "running", "released", "completed", "error", "timed_out"]


class Body(BaseModel):
    """A document body, or a part of one: unknown fields are errors; each field's docstring describes it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class RunRow(Body):
    """A run as the ledger holds it."""

    run_id: str
    """The run's id (32 hex digits)."""
    suite_id: str
    """The suite's id."""
    team_id: str
    """The team the suite belongs to."""
    suite_key: str
    """The suite's key within its team."""
    runner: str
    """The runner that executes it."""
    status: RunStatus
    """pending, running, released, completed, error or timed_out (the last three are final)."""
    status_reason: str | None
    """Why it has this status: the error, the time-out, or the most severe stamped verdict's reason."""
    lease_owner: str | None
    """Who holds the run's lease now; null when nobody does."""
    lease_expires_at: str | None
    """When that lease lapses (ISO 8601)."""
    deadline_at: str | None
    """After this the run is not worth waiting for (ISO 8601); null: no deadline."""
    created_at: str
    """When the run was created (ISO 8601)."""
    finalised_at: str | None
    """When it became final (ISO 8601); null while it is not."""
    outcome: str | None
    """The most severe verdict stamped at finalisation over its consumers (error, then fail, then pass); null
    before finalisation. A summary for listings: each consumer's own verdict is in ``verdicts``."""
    case_count: int
    """Cases in the run's snapshot."""
    case_runs: int
    """Case runs stored."""
    evaluations: int
    """Runner evaluations stored."""
    lake_date: str
    """The lake partition date of its evidence (YYYY-MM-DD)."""
    provider_ref: str | None
    """An asynchronous runner's reference at its vendor; null for the others."""
    repeat: int
    """Replays of each case the run started with (each replay is a case run)."""
    budget: int | None
    """The most replays escalation may give a case the evidence has not decided; null: no escalation."""


class Lease(Body):
    """The run's lease and its times."""

    owner: str | None
    """Who holds it; null when nobody does."""
    expires_at: str | None
    """When it lapses."""
    claimed_at: str | None
    """When the run was first claimed."""
    last_report_at: str | None
    """When the last report was accepted."""
    deadline_at: str | None
    """The run's deadline."""


class Stamped(Body):
    """A consumer's criteria stamped at the run's start, with the verdict stamped at finalisation."""

    consumer: str
    """The consumer's key."""
    version: int
    """The criteria version the run is judged under."""
    verdict: Verdict | None
    """The verdict stamped at finalisation (never changes); null before it."""
    reason: str | None
    """Why."""


class Accepted(Body):
    """The reports accepted, in total."""

    reports: int
    """How many."""
    case_runs: int
    """Case runs they carried."""
    evaluations: int
    """Runner evaluations they carried."""
    last_at: str | None
    """When the last one came."""


class Report(Body):
    """One accepted report."""

    request_id: str
    """Its idempotency key."""
    owner: str | None = None
    """Who sent it (the lease owner)."""
    case_runs: int
    """Case runs it carried."""
    evaluations: int
    """Runner evaluations it carried."""
    received_at: str | None = None
    """When it came."""


class Rejected(Body):
    """A report refused (a lost lease, a final run), kept with its reason."""

    request_id: str
    """Its idempotency key."""
    owner: str | None
    """Who sent it."""
    reason: str
    """Why it was refused."""
    received_at: str | None = None
    """When it came."""


class Judging(Body):
    """What judging made of the run's evidence."""

    judged: bool
    """Whether any outcome exists."""
    outcomes: int
    """Outcomes written (one per case run per judging pass)."""
    case_runs_judged: int
    """Case runs with at least one outcome."""
    case_runs: int
    """Case runs stored."""
    passes: int
    """Judging passes that wrote outcomes."""
    last_judged_at: str | None
    """When the latest pass ran."""
    last_trigger: str | None
    """What started it: run, judge, rejudge, collect."""


class RunDetails(RunRow):
    """A run with its stamped criteria and its reports."""

    lease: Lease | None = None
    """The lease and its times."""
    criteria: dict[str, int]
    """Consumer -> the criteria version stamped at the run's start."""
    stamped: list[Stamped] | None = None
    """Per consumer: criteria version and stamped verdict."""
    accepted: Accepted | None = None
    """The accepted reports in total."""
    reports: list[Report]
    """The accepted reports, oldest first."""
    rejected_reports: list[Rejected]
    """The refused reports."""
    judged: Judging | None = None
    """What judging made of its evidence (present when the lake was read)."""


class Executed(Body):
    """What the runner did in this command."""

    reports: int
    """Reports accepted."""
    case_runs: int
    """Case runs stored."""
    evaluations: int
    """Runner evaluations stored."""
    duplicates: int
    """Reports received twice (a retry), stored once."""
    error: str | None
    """Why the runner stopped with an error; null when it did not."""
    awaiting_vendor: bool
    """Submitted to an asynchronous runner's vendor: ``assay collect`` judges and finalises it later."""


class DecidingResult(Body):
    """A result that decided a case run's fail or error."""

    assertion_key: str
    """The behaviour."""
    met: bool | None
    """Met, not met, or null (could not be determined)."""
    value: Any = None
    """What was measured, when the mechanism measures."""
    evaluator: str | None
    """Who evaluated it."""
    reason: str | None
    """Why."""


class CaseVerdict(Body):
    """One case run's verdict under the consumer's criteria."""

    case_key: str
    """The case."""
    case_run_id: str | None = None
    """The case run."""
    call_id: str | None = None
    """Its call id (a recorded call's, or the vendor's); null when it has none."""
    verdict: Verdict | None
    """pass, fail, error; null when it has no results."""
    reason: str | None
    """Why."""
    results: list[DecidingResult] | None = None
    """The results that decided a fail or an error; empty for a pass."""


class CaseSeries(Body):
    """A repeated case's decision over its replays, under a criteria with a per-case ``pass_rate``."""

    case_key: str
    """The case."""
    verdict: Literal["pass", "fail", "flaky", "error"]
    """pass or fail only when the evidence decides; flaky when it cannot (excluded from the counts); error
    when no replay executed and was judged."""
    passes: int
    """Replays that passed."""
    runs: int
    """Replays with a pass or fail verdict (the series; errored replays are left out)."""
    errors: int
    """Replays whose verdict is error (not part of the series)."""
    lower: float | None
    """The one-sided Wilson lower bound of the pass rate at the criteria's confidence."""
    upper: float | None
    """The one-sided Wilson upper bound."""
    how: str
    """What decided: ``sequential`` (the sequential test crossed a bound), ``wilson`` (a bound cleared the
    criteria's ``min``), ``undecided`` (neither: flaky) or ``no-replays``."""
    at: int | None
    """For ``sequential``: the replay at which the test crossed its bound."""
    reason: str
    """The decision in words: passes of replays, the rate and its bounds, what decided."""


class VerdictRow(Body):
    """A run's verdict for one consumer."""

    run_id: str
    """The run."""
    consumer: str
    """The consumer."""
    criteria_version: int
    """The criteria version stamped at the run's start."""
    stamped: Verdict | None
    """The verdict stamped at finalisation (never changes); null before it."""
    verdict: Verdict | None
    """The verdict now, from each case run's latest outcome; null: no verdict possible (not judged)."""
    reason: str | None
    """Why."""
    evaluators: list[str]
    """Who evaluated the counted results."""
    counted: int | None = None
    """Counted results that decided it (undetermined ones left out under ``allow_undetermined`` are not
    counted); null when nothing was judged."""
    excluded: int | None = None
    """Undetermined counted results left out under the criteria's ``allow_undetermined``."""
    case_runs: int | None = None
    """Case runs judged."""
    case_runs_counted: int | None = None
    """Of them, those with a counted result that was not left out: the verdict's coverage."""
    cases: list[CaseVerdict] | None = None
    """Per case run (``--cases``)."""
    series: list[CaseSeries] | None = None
    """Per case, its decision over its replays: only under a criteria with a per-case ``pass_rate``."""


class RunDoc(Body):
    """``assay run`` (a run, what the runner did, its verdicts) and ``assay runs show`` (the run only)."""

    run: RunDetails
    """The run."""
    executed: Executed | None = None
    """What the runner did (``assay run`` only)."""
    verdicts: list[VerdictRow] | None = None
    """Each consumer's verdict (``assay run`` only); the command's exit code follows them under ``--gate``."""


class RunsDoc(Body):
    """``assay runs list``."""

    runs: list[RunRow]
    """Newest first."""


class VerdictsDoc(Body):
    """``assay verdicts``."""

    verdicts: list[VerdictRow]
    """Per run and consumer: the runs in the order chosen (a suite's oldest first), each run's consumers by name."""


class JudgeSpend(Body):
    """What asking our judge cost."""

    judge_calls: int
    """Requests sent to our judge, retries included."""
    judge_cached: int
    """Rubric results served from the judge cache."""
    judge_asked: int
    """Distinct questions sent to the judge."""
    judge_tokens_in: int
    """Tokens sent."""
    judge_tokens_out: int
    """Tokens received."""
    judge_cost_usd: float | None
    """What the requests cost, when the judge says."""


class Judged(JudgeSpend):
    """What a judging pass did."""

    runs: int
    """Runs judged."""
    case_runs: int
    """Their case runs."""
    outcomes: int
    """New outcomes written."""
    evaluated: int
    """Results evaluated afresh."""
    carried: int
    """Results carried forward unchanged."""
    unjudged: int
    """Pairs left out by the choice of keys or new versions."""


class JudgeDoc(Body):
    """``assay judge``."""

    judged: Judged
    """The judging pass."""
    verdicts: list[VerdictRow]
    """The run's verdicts afterwards."""


class RejudgeDoc(Judged):
    """``assay rejudge``: the judging pass."""
