"""The consumers' verdicts as a JUnit XML report that says what the gate says.

A ``<testsuite>`` per run; per consumer, a ``<testcase>`` per case and one (:data:`RUN_VERDICT`) for its
verdict on the whole run (a partial run has cases that never ran, so no case would carry that verdict).
A case's test case reads the consumer's own rule for that case:

- each result of a required key must be met: a case with an unmet one is a ``<failure>``;
- a threshold group is a ratio over the whole run, so a case's own ratio is a ``<property>``
  (``ratio.KEY+KEY``: ``met/determined``, then the group's ``min``), never a failure;
- an undetermined counted result the consumer does not exclude is an ``<error>``;
- under a per-case pass rate a test case is a case over its replays: a ``fail`` or ``error`` decision as
  such, and a ``flaky`` one (excluded from the verdict) ``<skipped>`` with a ``flaky:`` message, plus a
  ``<flakyFailure>`` per failing replay (the Maven Surefire form Jenkins reads; GitLab and the GitHub
  report actions read the ``<skipped>``).

A case never reads worse than its consumer's verdict on the run, the verdict a gate exits with: a case
that would (an undetermined result the run's allowance excludes) is ``<skipped>``, saying so. So a reader
that calls the file red on any ``<failure>`` or ``<error>`` agrees with ``--gate``'s exit code. A failure's
text gives each deciding result's reason and evaluator, the call id, the line that decided it (when one
does) and the ``assay show`` command to run next. ``time`` is in seconds: a case run's duration, a
series' replays together; a run verdict takes none of its own.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.core.errors import ConfigError

from .workspace import Workspace

RUN_VERDICT = "run verdict"
"""The name of the report's test case that carries a consumer's verdict on the whole run."""

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry (a vendor's message may hold a control character)."""

_RANK = {"pass": 0, "flaky": 0, "skipped": 0, "fail": 1, "error": 2}
_ELEMENT = {"fail": "failure", "error": "error", "flaky": "skipped", "skipped": "skipped"}


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _seconds(ms: float | None) -> str:
    return f"{(ms or 0) / 1000:.3f}"


def _verdict(v: str | None) -> str:
    """A verdict as the report reads it: none (no verdict possible), or any it does not know, is an error."""
    return v if v in _RANK else "error"


def _result_lines(c: dict[str, Any]) -> list[str]:
    """Each deciding result of one case run: key, how it came out, its reason and evaluator, its line."""
    out = []
    for r in c.get("results") or []:
        state = "undetermined" if r.get("met") is None else "met" if r["met"] else "not met"
        out.append(f"- {r['assertion_key']}: {state}: {r.get('reason') or 'no reason given'} "
                   f"(evaluator {r.get('evaluator') or 'unknown'})")
        line = r.get("line")
        out.append(f"  deciding line: {line}" if line else "  deciding line: none (no single line decides it)")
    return out


def _case_text(c: dict[str, Any], run_id: str) -> list[str]:
    ref = c.get("case_run_id")
    return [f"case {c['case_key']}, call {c.get('call_id') or 'none'}, case run {ref or 'none'}, run {run_id}",
            *_result_lines(c),
            *([f"next: assay show {ref}"] if ref else [])]


def _outcome(parent: ET.Element, state: str, message: str, body: Sequence[str]) -> None:
    """Add the element for ``state`` (none for a pass) with ``message`` and the ``body`` lines as its text."""
    kind = _ELEMENT.get(state)
    if kind is None:
        return
    el = ET.SubElement(parent, kind, message=_xml(message))
    if kind != "skipped":
        el.set("type", state)
    el.text = _xml("\n".join([message, *body]))


def _properties(parent: ET.Element, props: dict[str, str]) -> None:
    if props:
        el = ET.SubElement(parent, "properties")
        for name, value in props.items():
            ET.SubElement(el, "property", name=name, value=_xml(value))


def _capped(state: str, message: str, run_verdict: str) -> tuple[str, str]:
    """A case never reads worse than its consumer's verdict on the run (what the gate exits with)."""
    if _RANK[state] <= _RANK[run_verdict]:
        return state, message
    return "skipped", f"not counted against the run ({state}: {message}); the consumer's verdict on the run is {run_verdict}"


def _case_state(c: dict[str, Any]) -> tuple[str, str]:
    """One case run under its consumer's own rule: a threshold-only failure is no failure of the case."""
    verdict = _verdict(c.get("verdict"))
    reason = c.get("reason") or ("no verdict possible" if c.get("verdict") is None else verdict)
    if verdict == "fail" and c.get("rule_verdict", "fail") != "fail":
        return "pass", reason
    return verdict, reason


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


def _single_cases(suite: ET.Element, classname: str, row: dict[str, Any], run_verdict: str) -> list[str]:
    """A test case per case run; return their states."""
    states = []
    cases = row.get("cases") or []
    for c, name in zip(cases, _case_names(cases), strict=True):
        case = ET.SubElement(suite, "testcase", classname=classname, name=name, time=_seconds(c.get("duration_ms")))
        _properties(case, {f"ratio.{k}": v for k, v in (c.get("ratios") or {}).items()})
        state, message = _capped(*_case_state(c), run_verdict)
        _outcome(case, state, message, _case_text(c, row["run_id"]) if state != "pass" else [])
        states.append(state)
    return states


def _series_cases(suite: ET.Element, classname: str, row: dict[str, Any], run_verdict: str) -> list[str]:
    """A test case per case over its replays (a per-case pass rate); return their states."""
    states = []
    replays: dict[str, list[dict[str, Any]]] = {}
    for c in row.get("cases") or []:
        replays.setdefault(c["case_key"], []).append(c)
    for d in row.get("series") or []:
        mine = replays.get(d["case_key"], [])
        case = ET.SubElement(suite, "testcase", classname=classname, name=d["case_key"],
                             time=_seconds(sum(c.get("duration_ms") or 0 for c in mine)))
        _properties(case, {"passes": str(d["passes"]), "replays": str(d["runs"]), "errors": str(d["errors"]),
                           "wilson.lower": f"{d['lower']:.3f}", "wilson.upper": f"{d['upper']:.3f}"})
        failing = [c for c in mine if _verdict(c.get("verdict")) != "pass"]
        reason = d["reason"] or d["verdict"]
        state, message = _capped(_verdict(d["verdict"]), f"flaky: {reason}" if d["verdict"] == "flaky" else reason,
                                 run_verdict)
        body = [line for c in failing for line in _case_text(c, row["run_id"])]
        _outcome(case, state, message, body)
        if d["verdict"] == "flaky":
            for c in failing:
                el = ET.SubElement(case, "flakyFailure", message=_xml(c.get("reason") or "fail"), type="fail")
                ET.SubElement(el, "stackTrace").text = _xml("\n".join(_case_text(c, row["run_id"])))
        states.append(state)
    return states


def junit(rows: Sequence[dict[str, Any]], suites: dict[str, str]) -> ET.Element:
    """A ``<testsuites>`` tree: one ``<testsuite>`` per run (``suites``: run id -> TEAM/SUITE).

    ``rows`` are ``verdicts_for(..., cases=True)`` entries, their cases as :func:`read_case_facts` completes them.
    """
    root = ET.Element("testsuites", name="assay")
    totals: Counter[str] = Counter()
    seconds = 0.0
    for run_id in dict.fromkeys(r["run_id"] for r in rows):
        mine = [r for r in rows if r["run_id"] == run_id]
        suite = ET.SubElement(root, "testsuite", name=suites[run_id], id=run_id)
        _properties(suite, {"run_id": run_id, **{f"criteria.{r['consumer']}": str(r["criteria_version"]) for r in mine}})
        counts: Counter[str] = Counter()
        for r in mine:
            classname = f"{suites[run_id]}.{r['consumer']}"
            verdict = _verdict(r["verdict"])
            cases = _series_cases if r.get("series") is not None else _single_cases
            states = cases(suite, classname, r, verdict)
            run_case = ET.SubElement(suite, "testcase", classname=classname, name=RUN_VERDICT, time=_seconds(0))
            reason = r.get("reason") or ("no verdict possible" if r["verdict"] is None else verdict)
            _outcome(run_case, verdict, reason, [f"next: assay verdicts {run_id} --cases --consumer {r['consumer']}"])
            counts.update(_ELEMENT.get(s, "passed") for s in [*states, verdict])
            counts["tests"] += len(states) + 1
        durations = {c.get("case_run_id"): c.get("duration_ms") or 0 for r in mine for c in r.get("cases") or []}
        run_seconds = sum(durations.values()) / 1000
        seconds += run_seconds
        _count(suite, counts, run_seconds)
        totals.update(counts)
    _count(root, totals, seconds)
    return root


def _count(element: ET.Element, counts: Counter[str], seconds: float) -> None:
    for attr, key in (("tests", "tests"), ("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
        element.set(attr, str(counts[key]))
    element.set("time", f"{seconds:.3f}")


def write_junit(ws: Workspace, path: str, rows: Sequence[dict[str, Any]]) -> None:
    """Write the JUnit XML report of ``rows`` (``verdicts_for(..., cases=True)`` entries) to ``path``."""
    from assay.storage.catalog.runs import get_run

    from .junit_facts import read_case_facts

    suites = {}
    for run_id in dict.fromkeys(r["run_id"] for r in rows):
        run = get_run(ws.engine, run_id)
        suites[run_id] = f"{run.team_id}/{run.suite_key}"
    tree = ET.ElementTree(junit(read_case_facts(ws, rows), suites))
    ET.indent(tree)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tree.write(target, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise ConfigError(f"--junit {path}: cannot write the report: {exc.strerror or exc}; name a writable file") from None


__all__ = ["RUN_VERDICT", "junit", "write_junit"]
