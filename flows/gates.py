"""Gates for CI: consumers' verdicts as one exit code, and the same verdicts as a JUnit XML report.

A gate names consumers (``--gate CONSUMER``); the command exits with the most severe of their verdict
codes (:mod:`assay.core.exit_codes`). A consumer with no criteria where it is asked to gate is an
error, never a silent pass. The report holds one ``<testcase>`` per case and consumer, plus one per
consumer for the run's own verdict (a partial run or a run that ended in error has cases that never
ran, so no case row would carry that verdict).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from assay.core.errors import ConfigError, GateError
from assay.core.exit_codes import ExitCode, most_severe, verdict_code

from .workspace import Workspace

NO_VERDICT_STATUSES = frozenset({"error", "timed_out"})
"""Run statuses after which no verdict is possible: ``assay run`` exits 82 on them."""

RUN_VERDICT = "run verdict"
"""The name of the report's test case that carries a consumer's verdict on the whole run."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry (a vendor's message may hold a control character)."""


def check_consumers(option: str, consumers: Iterable[str], known: Iterable[str], where: str) -> None:
    """Raise :class:`GateError` naming the ``consumers`` not among ``known`` (those with criteria ``where``)."""
    have = sorted(set(known))
    missing = [c for c in dict.fromkeys(consumers) if c not in have]
    if missing:
        raise GateError(option, missing, where, have)


def check_suite_gates(ws: Workspace, suite: str, gates: Sequence[str]) -> None:
    """Before a run: every gated consumer has criteria on ``suite`` (so the run will stamp it a verdict)."""
    from assay.storage.catalog.runs import current_criteria, find_suite

    with ws.engine.connect() as conn:
        s = find_suite(conn, suite)
        known = [r.consumer_key for r in current_criteria(conn, s.suite_id)]
    check_consumers("--gate", gates, known, f"suite {s.team_id}/{s.suite_key}")


def gate_code(rows: Sequence[dict[str, Any]], gates: Sequence[str], where: str) -> ExitCode:
    """The exit code of the gated consumers' verdicts in ``rows`` (``verdicts_for`` entries), most severe first."""
    check_consumers("--gate", gates, (r["consumer"] for r in rows), where)
    return most_severe(verdict_code(r["verdict"]) for r in rows if r["consumer"] in gates)


def run_code(status: str, rows: Sequence[dict[str, Any]], gates: Sequence[str]) -> ExitCode:
    """``assay run``'s exit code: 82 for a run that ended error or timed out, else its gated consumers' code."""
    ended = ExitCode.NO_VERDICT if status in NO_VERDICT_STATUSES else ExitCode.PASS
    return most_severe([ended, gate_code(rows, gates, "this run")]) if gates else ended


def _case_names(cases: Sequence[dict[str, Any]]) -> list[str]:
    """Each case row's test name: its case key, plus which case run when one case ran more than once."""
    counts = Counter(c["case_key"] for c in cases)
    seen: Counter[str] = Counter()
    names = []
    for c in cases:
        key = c["case_key"]
        seen[key] += 1
        ref = c.get("call_id") or c.get("case_run_id") or f"#{seen[key]}"
        names.append(f"{key} [{ref}]" if counts[key] > 1 else key)
    return names


def _testcase(parent: ET.Element, classname: str, name: str, verdict: str | None, reason: str | None) -> str | None:
    """Add one ``<testcase>``; return ``failure``/``error`` for a case that did not pass, else None."""
    case = ET.SubElement(parent, "testcase", classname=classname, name=name)
    kind = {"pass": None, "fail": "failure"}.get(verdict or "", "error")
    if kind:
        text = _NOT_XML.sub("\ufffd", reason or ("no verdict possible" if verdict is None else verdict))
        ET.SubElement(case, kind, message=text, type=verdict or "no verdict").text = text
    return kind


def junit(rows: Sequence[dict[str, Any]], suites: dict[str, str]) -> ET.Element:
    """A ``<testsuites>`` tree: one ``<testsuite>`` per run (``suites``: run id -> TEAM/SUITE)."""
    root = ET.Element("testsuites", name="assay")
    totals: Counter[str] = Counter()
    for run_id in dict.fromkeys(r["run_id"] for r in rows):
        mine = [r for r in rows if r["run_id"] == run_id]
        suite = ET.SubElement(root, "testsuite", name=suites[run_id], id=run_id)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="run_id", value=run_id)
        for r in mine:
            ET.SubElement(props, "property", name=f"criteria.{r['consumer']}", value=str(r["criteria_version"]))
        counts: Counter[str] = Counter()
        for r in mine:
            classname = f"{suites[run_id]}.{r['consumer']}"
            cases = r.get("cases", [])
            for c, name in zip(cases, _case_names(cases), strict=True):
                counts.update(["tests", _testcase(suite, classname, name, c["verdict"], c["reason"]) or "passed"])
            counts.update(["tests", _testcase(suite, classname, RUN_VERDICT, r["verdict"], r["reason"]) or "passed"])
        _count(suite, counts)
        suite.set("skipped", "0")
        totals.update(counts)
    _count(root, totals)
    return root


def _count(element: ET.Element, counts: Counter[str]) -> None:
    element.set("tests", str(counts["tests"]))
    element.set("failures", str(counts["failure"]))
    element.set("errors", str(counts["error"]))


def write_junit(ws: Workspace, path: str, rows: Sequence[dict[str, Any]]) -> None:
    """Write the JUnit XML report of ``rows`` (``verdicts_for(..., cases=True)`` entries) to ``path``."""
    from assay.storage.catalog.runs import get_run

    suites = {}
    for run_id in dict.fromkeys(r["run_id"] for r in rows):
        run = get_run(ws.engine, run_id)
        suites[run_id] = f"{run.team_id}/{run.suite_key}"
    tree = ET.ElementTree(junit(rows, suites))
    ET.indent(tree)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tree.write(target, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise ConfigError(f"--junit {path}: cannot write the report: {exc.strerror or exc}; name a writable file") from None


__all__ = ["NO_VERDICT_STATUSES", "RUN_VERDICT", "check_consumers", "check_suite_gates", "gate_code", "junit",
           "run_code", "write_junit"]
