"""The bodies of the documents about upkeep and the demo: ``assay.reap``, ``assay.collect``,
``assay.lake.migrate``, ``assay.lake.compact``, ``assay.lake.vacuum``, ``assay.lake.verify``, ``assay.judge-agreement`` and
``assay.demo``."""

from __future__ import annotations

from typing import Literal

from .document_catalog import LoadDoc, PlanDoc
from .document_rescore import RescoreDoc
from .document_runs import Body, Judged, JudgeSpend, RunDetails, VerdictRow


class ReapDoc(Body):
    """``assay reap``: run ids by what happened to them."""

    deadline_passed: list[str]
    """Timed out: the deadline passed."""
    lease_expired: list[str]
    """Timed out: the lease expired."""
    never_started: list[str]
    """Timed out: never started."""
    finalised_released: list[str]
    """Left released: judged and finalised."""
    finalisation_deferred: list[str]
    """Left released: not finalised for a failure that passes (a full disk); the next reap tries again."""
    scratch_deleted: list[str]
    """Vendor objects left by dead runs, deleted."""
    scratch_failed: list[str]
    """Those that could not be deleted."""


class CollectDoc(Body):
    """``assay collect``: one pass over asynchronous runs, by run id."""

    outstanding: int
    """Runs outstanding at the start."""
    waiting: list[str]
    """Polled; the vendor is still working."""
    collected: list[str]
    """Results stored, run released."""
    finalised: list[str]
    """Judged and finalised."""
    timed_out: list[str]
    """Past their deadline."""
    failed: dict[str, str]
    """Run -> the error that ended it."""
    retry: dict[str, str]
    """Run -> the transient failure left for the next pass."""
    late_reports: int
    """Reports that came after their run was final."""
    late_runs: list[str]
    """Their runs."""
    warnings: list[str]
    """Anything worth a look."""
    lease_renewals: int
    """Leases renewed while collecting."""


class MigratedTable(Body):
    """What migrating one lake table did."""

    files: int
    """Files listed in the manifest."""
    rewritten: int
    """Files rewritten to drop duplicate rows."""
    duplicates_dropped: int
    """Duplicate rows dropped."""


class LakeMigrateDoc(Body):
    """``assay lake migrate``."""

    tables: dict[str, MigratedTable]
    """Per table; empty when the manifest already listed the lake."""


class LakeCompactDoc(Body):
    """``assay lake compact``."""

    partitions: int
    """Partitions compacted."""
    refused: int
    """Partitions a concurrent compaction swapped first."""
    files_in: int
    """Files retired."""
    files_out: int
    """Files written."""
    rows: int
    """Rows they hold."""
    bytes_in: int
    """Bytes retired."""
    bytes_out: int
    """Bytes written."""


class LakeVacuumDoc(Body):
    """``assay lake vacuum``: files deleted."""

    retired: int
    """Superseded files past the grace period."""
    unnamed: int
    """Files no manifest entry names, past the grace period."""


class BadLakeFile(Body):
    """A listed lake file that is not what the manifest says."""

    table: str
    team_id: str
    date: str
    address: str
    """Where the file is (a local path, or its URL on an object store)."""
    what: str
    """What differs: missing, its size, its footer, its columns or its sha256."""


class LakeVerifyDoc(Body):
    """``assay lake verify``: every listed file checked against the manifest."""

    checked: int
    """Files checked."""
    bad: list[BadLakeFile]
    """The files that differ; readers of their partitions are refused until they are restored."""


class LabelledVerdict(Body):
    """The judge's verdict on one labelled item."""

    id: str
    """The item's id."""
    expected: Literal["pass", "fail"]
    """The person's label."""
    verdict: Literal["pass", "fail"] | None
    """The judge's verdict; null: undetermined."""
    reason: str | None
    """The judge's reason."""


class KeyNoise(Body):
    """One assertion key's noise: the judge's on the same call, the agent's across replays of a case."""

    assertion_key: str
    """The rubric's key."""
    calls: int
    """Stored calls (case runs) whose rubric result our judge gave."""
    answers: int
    """Answers asked for: calls times ``times``."""
    judge_disagreement: float | None
    """Mean over the calls of the chance two answers to the same call differ; null under two verdicts."""
    judge_split_calls: int
    """Calls whose answers were not unanimous."""
    agent_cases: int
    """Cases with at least two replays that each got a majority verdict."""
    agent_disagreement: float | None
    """Mean over those cases of the chance two replays differ (each replay: the majority of its answers)."""


class JudgeNoiseDoc(Body):
    """``assay judge-noise``: our judge's own noise on a run's stored calls, kept apart from the agent's."""

    run_id: str
    """The run measured."""
    judge: str
    """The judge's model."""
    times: int
    """Answers asked per question."""
    questions: int
    """(Case run, rubric) questions asked."""
    judge_calls: int
    """Requests sent to the judge, retries included (nothing came from or went to the cache)."""
    keys: list[KeyNoise]
    """Per rubric key, in key order."""


class JudgeAgreementDoc(JudgeSpend):
    """``assay judge-agreement``: the judge measured against a labelled set."""

    agreement_id: str
    """The stored measurement's id."""
    judge_model: str
    """The judge's model."""
    prompt_version: int
    """The judge prompt's version."""
    labels: str
    """The labelled set's file."""
    labels_sha256: str
    """The sha256 of its bytes."""
    items: int
    """Labelled items in all."""
    undetermined: int
    """Items the judge gave no verdict on (counted in neither figure)."""
    unparsed: int
    """Of the undetermined items, those whose answer came back but could not be read as a verdict."""
    both_pass: int
    """Labelled pass, judged pass."""
    label_pass_judge_fail: int
    """Labelled pass, judged fail."""
    label_fail_judge_pass: int
    """Labelled fail, judged pass."""
    both_fail: int
    """Labelled fail, judged fail."""
    agreement: float | None
    """Share of decided items where judge and label agree."""
    kappa: float | None
    """Cohen's kappa over the decided items."""
    disagreements: list[LabelledVerdict]
    """Items where judge and label disagree."""
    undetermined_items: list[LabelledVerdict]
    """Items with no verdict."""


class StoredCaseRuns(Body):
    """Case runs stored, grouped."""

    team_id: str
    """The team."""
    runner: str
    """The runner."""
    case_key: str
    """The case."""
    status: str
    """executed or error."""
    case_runs: int
    """How many."""
    cost_usd: float
    """Their cost."""
    turns: int
    """Transcript turns."""
    tool_calls: int
    """Tool calls."""


class StoredEvaluations(Body):
    """Runner evaluations stored, grouped."""

    evaluator: str
    """The vendor's evaluator."""
    verdict: str
    """Its verdict, or ``score``."""
    n: int
    """How many."""


class Stored(Body):
    """What the lake holds for the demo's runs."""

    case_runs: list[StoredCaseRuns]
    """Case runs."""
    runner_evaluations: list[StoredEvaluations]
    """Runner evaluations."""
    lake_files: dict[str, int]
    """Files per table."""


class VendorResult(Body):
    """One assertion's result on one vendor."""

    assertion_key: str
    """The behaviour."""
    runner: str
    """The vendor's runner."""
    met: bool | None
    """Met, not met, undetermined."""
    evaluator: str
    """Who evaluated it."""
    reason: str | None
    """Why."""


class Disagreement(Body):
    """Our judge and the vendor's own evaluator disagree on a behaviour."""

    case_key: str
    """The case."""
    assertion_key: str
    """Our behaviour."""
    ours: bool | None
    """Our result."""
    our_evaluator: str
    """Our evaluator."""
    theirs_name: str
    """The vendor's criterion."""
    theirs: bool | None
    """The vendor's result."""
    their_evaluator: str
    """The vendor's evaluator."""
    rationale: str | None
    """The vendor's rationale."""


class Vendors(Body):
    """One situation run on every vendor."""

    runs: dict[str, str]
    """Runner -> run id."""
    collected: list[str]
    """Asynchronous runs collected."""
    rows: list[VendorResult]
    """Results side by side."""
    disagreements: list[Disagreement]
    """Where our judge and a vendor's evaluator disagree."""
    verdicts: list[VerdictRow]
    """The vendor runs' verdicts."""


class DemoDoc(Body):
    """``assay demo``: every step's document."""

    loaded: LoadDoc
    """The demo bundle loaded."""
    runs: list[RunDetails]
    """Both suites run."""
    stored: Stored
    """What the lake holds."""
    verdicts: list[VerdictRow]
    """Each consumer's verdict."""
    plan: PlanDoc
    """The revised bundle's plan."""
    reloaded: LoadDoc
    """The revised bundle loaded."""
    rejudged: Judged
    """The re-judge."""
    rescored: RescoreDoc
    """The re-score."""
    verdicts_after: list[VerdictRow]
    """Verdicts after both."""
    rerun: RunDetails
    """The suite re-run."""
    vendors: Vendors
    """One situation on every vendor."""
    repeated: RunDetails
    """The suite whose runs replay each case (on VAPI's chat), escalating the undecided ones."""
    repeated_verdicts: list[VerdictRow]
    """Its verdicts, each case decided over its replays (one of them flaky)."""


class BenchResult(Body):
    """One benchmark's measurement."""

    name: str
    """``area.measure``."""
    value: float
    """What was measured."""
    unit: str
    """Its unit."""
    baseline: float | None
    """What it is compared with, when anything."""
    ratio: float | None
    """value / baseline (or the other way, as the target reads)."""
    target: str
    """The target, as a person reads it."""
    met: bool
    """Whether the target is met."""
    note: str
    """How it was measured."""
    measured_at: str | None
    """When."""


class BenchDoc(Body):
    """``bench/results.json``, written by ``make bench``."""

    machine: str
    """Cores, memory, platform, Python."""
    generated_at: str
    """When the file was written."""
    results: list[BenchResult]
    """Every benchmark's measurement."""


class ProjectDoc(Body):
    """``assay project``: one pass of the projections."""

    full: bool
    """True when every run was recomputed (asked for, or the first pass)."""
    suites: int
    """Suites with a run recomputed."""
    runs: int
    """Finalised runs recomputed: those whose evidence, judging, finalisation or criteria changed since the last pass."""
    rows: dict[str, int]
    """Rows written per projected table for those runs."""
