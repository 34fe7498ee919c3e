"""The body of ``assay.report``: the HTML report ``assay report --html`` wrote."""

from __future__ import annotations

from typing import Literal

from .document_runs import Body
from .document_upkeep import ProjectDoc

Section = Literal["summary", "verdicts", "failing", "trends", "costs", "agreement", "examples"]


class ReportScope(Body):
    """Which runs the report covers."""

    team: str | None
    """The team (also set when a suite was named: the suite's team); null: every team."""
    suite: str | None
    """The suite, as TEAM/SUITE; null: every suite in scope."""
    since: str | None
    """First run date included (YYYY-MM-DD); null: from the first run."""
    until: str | None
    """First run date left out (YYYY-MM-DD); null: up to the last run."""


class ReportCounts(Body):
    """What the report covers and shows."""

    runs: int
    """Finalised runs in scope (only finalised runs are projected)."""
    case_runs: int
    """Their case runs."""
    not_executed: int
    """Of those, case runs that did not execute (status not ``executed``)."""
    teams: int
    """Teams with a run in scope."""
    suites: int
    """Suites with a run in scope."""
    consumers: int
    """Consumers with a verdict on a run in scope."""
    failing_behaviours: int
    """Assertion keys with at least one result not met (the report shows the worst 25)."""
    examples: int
    """Example failed case runs shown under the failing behaviours."""
    evaluator_pairs: int
    """Case runs both our evaluator and a vendor's evaluated on the same behaviour."""
    charts: int
    """Charts drawn (inline SVG)."""


class ReportDoc(Body):
    """``assay report --html PATH``: the page written, what it covers, and whether the projections ran first."""

    path: str
    """The HTML file written (absolute)."""
    bytes: int
    """Its size."""
    scope: ReportScope
    """The runs it covers."""
    sections: list[Section]
    """Its sections, in page order: ``summary`` always; the others only when a run is in scope (``agreement`` only
    when there are evaluator pairs, ``examples`` only when a behaviour failed)."""
    counts: ReportCounts
    """What it covers and shows."""
    projected: ProjectDoc | None
    """The projection pass run first because the projected tables were behind the evidence; null: they were current."""
