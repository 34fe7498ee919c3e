"""The bodies of the documents about the catalog: ``assay.init``, ``assay.load``, ``assay.plan`` and ``assay.ls``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .criteria import CriteriaSpec
from .document_runs import Body
from .document_templates import TemplatePlan

Tier = Literal["none", "re-score", "re-judge", "re-run"]


class InitDoc(Body):
    """``assay init``."""

    home: str
    """ASSAY_HOME, resolved."""
    catalog: str
    """The catalog's URL (a password masked)."""
    lake: str
    """The lake's URL (a password masked)."""


class SchemaRow(Body):
    """A machine-readable document this build can produce."""

    schema_id: str = Field(alias="schema")
    """The document's schema id (``assay.run``); its JSON Schema is ``docs/schemas/<schema id>.json``."""
    revision: int
    """The revision this build writes: it grows when the shape changes."""
    stability: str
    """experimental, stable or deprecated."""


class ExitCodeRow(Body):
    """One exit code of the command line's contract."""

    code: int
    name: str
    """PASS, FAILURE, USAGE, FAIL, DRIFT, NO_VERDICT or STALE."""
    meaning: str


class VersionDoc(Body):
    """``assay version``: this build, the documents it can produce, and its exit codes."""

    version: str
    """The installed ``assay`` distribution's version."""
    python: str
    """The Python running it."""
    schemas: list[SchemaRow]
    """Every document this build can produce, by schema id."""
    exit_codes: list[ExitCodeRow]
    """The exit codes every command shares; verdict codes from most to least severe: 82, 80, 81, 83, 0."""


class LoadCounts(Body):
    """What a load did to one kind of thing."""

    created: int
    """New."""
    updated: int
    """Changed in place (names, titles, situations, targets)."""
    new_version: int
    """Given a new version (assertions, criteria)."""
    unchanged: int
    """Left as they were."""
    kept: int
    """In the catalog, not in the bundle: left as they are."""


class LoadDoc(Body):
    """``assay load``."""

    file: str
    """The bundle loaded."""
    changed: bool
    """Whether anything was created, updated or given a new version."""
    counts: dict[str, LoadCounts]
    """Per kind (teams, consumers, cases, suites, assertions, criteria)."""
    new_versions: list[str]
    """``TEAM/SUITE: assertion KEY vN`` and ``... criteria CONSUMER vN`` lines."""
    kept: list[str]
    """What the catalog holds that the bundle no longer names."""


class History(Body):
    """A suite's finalised runs."""

    runs: int
    """How many."""
    case_runs: int
    """Their case runs."""


class RejudgeCost(Body):
    """What a re-judge would take."""

    assertions: list[str]
    """The assertion changes that call for it."""
    outcomes: int
    """New outcomes it would write."""
    results: int
    """Results to evaluate."""
    judge_calls: int
    """Judge calls (rubric results)."""
    judge_configured: bool
    """Whether a judge is configured."""


class ConsumerPlan(Body):
    """One consumer's tier."""

    consumer: str
    """The consumer."""
    tier: Tier
    """What its verdict needs."""
    why: str
    """Why."""


class SuitePlan(Body):
    """One suite's tier."""

    suite: str
    """TEAM/SUITE."""
    tier: Tier
    """The most any consumer (or a changed assertion) needs."""
    rerun_reasons: list[str]
    """The changes that need the runner again."""
    in_place: list[str]
    """Edits made in place that need nothing redone (a suite's name or tags, a case's title)."""
    history: History
    """What stored history a re-judge or re-score would cover."""
    rejudge: RejudgeCost
    """What a re-judge would take."""
    consumers: list[ConsumerPlan]
    """Per consumer with criteria on the suite."""


class PlanDoc(Body):
    """``assay plan``: what loading a bundle would need."""

    file: str
    """The bundle compared."""
    changes: list[str]
    """What loading it would create, update or version, one line each."""
    suites: list[SuitePlan]
    """Per suite of the bundle."""
    templates: list[TemplatePlan]
    """Per template given a new version: the cases made from it, which keep their content until re-applied."""


# --- assay ls: one body per kind, told apart by ``kind`` ----------------------------------------------


class LsScope(Body):
    """What the listing is narrowed to."""

    team: str | None
    """``--team`` (or the suite's team)."""
    suite: str | None
    """``--suite`` as TEAM/SUITE."""


class TeamRow(Body):
    """A team."""

    team: str
    """Its id."""
    name: str
    """Its name."""
    suites: int
    """Its suites."""
    cases: int
    """Its cases."""


class SuiteRow(Body):
    """A suite."""

    suite: str
    """TEAM/SUITE."""
    team: str
    """Its team."""
    key: str
    """Its key."""
    name: str
    """Its name."""
    target_kind: Literal["config", "call_set", "exam"]
    """What it targets."""
    target: str
    """The compiled config's name, the call set's file name, or the exam's directory."""
    cases: int
    """Its cases."""
    consumers: list[str]
    """Consumers with criteria on it."""
    tags: list[str]
    """Its tags, sorted (``nightly``: the nightly sweep re-runs it)."""
    runners: list[str]
    """The runners it declares, in order (a run on each); none: its target's default runner."""


class CaseRow(Body):
    """A case."""

    team: str
    """Its team."""
    key: str
    """Its key."""
    title: str
    """Its title."""
    suites: list[str]
    """The suites (keys) that run it."""


class AssertionRow(Body):
    """An assertion's latest version."""

    team: str
    """Its team."""
    key: str
    """The behaviour's key."""
    scope: Literal["suite", "case"]
    """Whether a suite or a case owns it."""
    of: str
    """The owner's key."""
    mechanism: str
    """How it is checked."""
    version: int
    """Its latest version."""
    versions: int
    """How many versions exist."""


class CriteriaRow(Body):
    """A consumer's latest criteria on a suite."""

    suite: str
    """TEAM/SUITE."""
    consumer: str
    """The consumer."""
    version: int
    """The latest version."""
    versions: int
    """How many versions exist."""
    summary: str
    """The spec in a line."""
    spec: CriteriaSpec
    """The spec."""


class ConsumerRow(Body):
    """A consumer."""

    consumer: str
    """Its key."""
    description: str | None
    """What it decides."""
    suites: list[str]
    """Suites (TEAM/SUITE) it has criteria on."""


class OverviewCounts(Body):
    """How many of each kind."""

    teams: int
    """Teams."""
    suites: int
    """Suites."""
    cases: int
    """Cases."""
    assertions: int
    """Assertions (latest versions)."""
    criteria: int
    """Criteria (latest versions)."""
    consumers: int
    """Consumers."""
    assertion_versions: int
    """Assertion versions in all."""


class TeamTree(Body):
    """A team with its suites."""

    team: str
    """Its id."""
    name: str
    """Its name."""
    suites: list[SuiteRow]
    """Its suites."""
    cases: int
    """Its cases."""


class LsOverview(LsScope):
    """``assay ls``: counts and the team/suite tree."""

    kind: Literal["overview"]
    """No kind was named."""
    counts: OverviewCounts
    """How many of each kind."""
    teams: list[TeamTree]
    """Teams with their suites."""
    consumers: list[ConsumerRow]
    """Consumers."""


class LsTeams(LsScope):
    """``assay ls teams``."""

    kind: Literal["teams"]
    """The kind listed."""
    teams: list[TeamRow]
    """The rows."""


class LsSuites(LsScope):
    """``assay ls suites``."""

    kind: Literal["suites"]
    """The kind listed."""
    suites: list[SuiteRow]
    """The rows."""


class LsCases(LsScope):
    """``assay ls cases``."""

    kind: Literal["cases"]
    """The kind listed."""
    cases: list[CaseRow]
    """The rows."""


class LsAssertions(LsScope):
    """``assay ls assertions``."""

    kind: Literal["assertions"]
    """The kind listed."""
    assertions: list[AssertionRow]
    """The rows."""


class LsCriteria(LsScope):
    """``assay ls criteria``."""

    kind: Literal["criteria"]
    """The kind listed."""
    criteria: list[CriteriaRow]
    """The rows."""


class LsConsumers(LsScope):
    """``assay ls consumers``."""

    kind: Literal["consumers"]
    """The kind listed."""
    consumers: list[ConsumerRow]
    """The rows."""


LS_BODIES = (LsOverview, LsTeams, LsSuites, LsCases, LsAssertions, LsCriteria, LsConsumers)
"""The bodies of ``assay.ls``, one per ``kind``."""
