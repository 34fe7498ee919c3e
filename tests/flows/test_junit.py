"""The JUnit report agrees with the gate: read by a real JUnit parser, the file is red exactly when the gate's
exit code says a gated verdict did not pass, for pass, fail, a threshold pass with cases below the ratio, a
flaky case under a per-case pass rate, and error.

The bundle is written here: one suite of recorded calls, two cases of three calls each, and a second suite
whose one call hung up. Its consumers each show one rule:

- ``polite``: every call greets with the company name (pass);
- ``no-promises``: no call says "guarantee" (fail: call a3 does, on its third line);
- ``books``: 5 of 6 calls book a visit, against a ratio of 0.75 (pass; call b3's own ratio is 0 of 1);
- ``names``: case A uses the caller's name in 3 of 3 calls, case B in 2 of 3, against a per-case pass rate
  of 0.5 (pass; case B is flaky: 3 replays cannot decide it).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from command_line import assay
from junitparser import Error, Failure, Skipped
from junitparser.xunit2 import JUnitXml, TestCase

LINE, HANGUPS = "junit-co/line", "junit-co/hangups"

CHECKS = """\
        assertions:
          - {key: greets, mechanism: transcript.contains, params: {text: Junit Co, role: agent}}
          - {key: no_guarantee, mechanism: transcript.not_contains, params: {text: guarantee, role: agent}}
          - {key: books_visit, mechanism: tool.called, params: {tool: book_visit}}
          - {key: uses_name, mechanism: transcript.contains, params: {text: Dana, role: agent}}
        criteria:
          polite: {required: [greets]}
          no-promises: {required: [greets, no_guarantee]}
          books:
            required: [greets]
            threshold: [{keys: [books_visit], min: 0.75}]
          names:
            required: [uses_name]
            pass_rate: {min: 0.5, sequential: null}
"""
"""Both suites' assertions and criteria."""

BUNDLE = """\
schema: assay.bundle/v1
consumers:
  - {key: polite, description: Every call greets with the company name.}
  - {key: no-promises, description: Never promises what the company cannot keep.}
  - {key: books, description: Most calls end with a booked visit.}
  - {key: names, description: Each case mostly uses the name of the caller over its calls.}
teams:
  - id: junit-co
    name: Junit Co
    cases:
      - key: case-a
        title: A leaking tap
        situation: {caller: Dana, wants: A plumber tomorrow}
      - key: case-b
        title: A blocked drain
        situation: {caller: Dana, wants: A plumber today}
    suites:
      - key: line
        name: Recorded calls
        target: {call_set: calls.jsonl}
        cases: [case-a, case-b]
{CHECKS}      - key: hangups
        name: Recorded calls, one hung up
        target: {call_set: hangups.jsonl}
        cases: [case-a]
{CHECKS}"""


def _call(call_id: str, case: str, *, name: bool = True, books: bool = True, promise: bool = False,
          error: str | None = None) -> dict:
    agent = ["Junit Co, this is Sam.", "Thanks, Dana." if name else "Thanks.",
             "We guarantee a fix today." if promise else "A plumber can come."]
    turns = [{"role": "agent", "text": text, "t": 4.0 * i} for i, text in enumerate(agent)]
    calls = [{"name": "book_visit", "arguments": {"day": "tomorrow"}, "result": {"ok": True}, "is_error": False,
              "t": 9.0}] if books else []
    return {"call_id": call_id, "case": case, "started_at": "2026-11-30T10:00:00Z", "duration_ms": 1500.0,
            "transcript": [] if error else turns, "tool_calls": [] if error else calls,
            **({"error": error} if error else {})}


CALLS = [
    _call("a1", "case-a"), _call("a2", "case-a"), _call("a3", "case-a", promise=True),
    _call("b1", "case-b"), _call("b2", "case-b"), _call("b3", "case-b", name=False, books=False),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The bundle loaded and both suites run; the home and each suite's run id."""
    root = tmp_path_factory.mktemp("junit")
    (root / "bundle.yaml").write_text(BUNDLE.replace("{CHECKS}", CHECKS))
    (root / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    hangup = _call("h1", "case-a", error="telephony: caller hung up after 2s")
    (root / "hangups.jsonl").write_text(json.dumps(hangup) + "\n")
    home = root / "home"
    assay("init", home=home)
    assay("load", str(root / "bundle.yaml"), home=home)
    ids = {}
    for suite in (LINE, HANGUPS):
        doc = json.loads(assay("run", suite, "--json", home=home).stdout)
        ids[suite] = doc["run"]["run_id"]
    return {"home": home, "ids": ids, "root": root}


def file_code(xml: JUnitXml) -> int:
    """The file's verdict as a CI reads it: red on any error (82) or failure (80), else green (0)."""
    results = [r for suite in xml for case in suite for r in case.result]
    if any(isinstance(r, Error) for r in results):
        return 82
    return 80 if any(isinstance(r, Failure) for r in results) else 0


def _cases(xml: JUnitXml) -> dict[tuple[str, str], TestCase]:
    return {(c.classname.rsplit(".", 1)[1], c.name): c for suite in xml for c in suite}


@pytest.mark.parametrize(("suite", "gates", "code"), [
    (LINE, ["polite"], 0),
    (LINE, ["no-promises"], 80),
    (LINE, ["books"], 0),
    (LINE, ["names"], 0),
    (LINE, ["polite", "books", "no-promises"], 80),
    (HANGUPS, ["polite"], 82),
    (HANGUPS, ["polite", "no-promises"], 82),
])
def test_the_report_read_by_a_junit_parser_says_what_the_gate_exits_with(
        runs: dict, tmp_path: Path, suite: str, gates: list[str], code: int) -> None:
    report = tmp_path / "report.xml"
    args = [a for g in gates for a in ("--gate", g)]
    assay("verdicts", runs["ids"][suite], *args, "--junit", str(report), home=runs["home"], check=code)
    xml = JUnitXml.fromfile(str(report))
    assert file_code(xml) == code
    assert {consumer for consumer, _ in _cases(xml)} == set(gates)  # only the gated consumers


def test_assay_run_writes_the_gated_consumers_report_with_its_exit_code(runs: dict, tmp_path: Path) -> None:
    report = tmp_path / "run.xml"
    assay("run", LINE, "--gate", "books", "--gate", "no-promises", "--junit", str(report), home=runs["home"],
          check=80)
    xml = JUnitXml.fromfile(str(report))
    assert file_code(xml) == 80
    assert {consumer for consumer, _ in _cases(xml)} == {"books", "no-promises"}


def _report(runs: dict, tmp_path: Path, suite: str, gate: str) -> dict[tuple[str, str], TestCase]:
    report = tmp_path / f"{gate}.xml"
    assay("verdicts", runs["ids"][suite], "--gate", gate, "--junit", str(report), home=runs["home"], check=None)
    return _cases(JUnitXml.fromfile(str(report)))


def test_a_case_below_the_ratio_is_a_property_not_a_failure(runs: dict, tmp_path: Path) -> None:
    cases = _report(runs, tmp_path, LINE, "books")
    b3 = cases[("books", "case-b [b3]")]
    assert b3.is_passed
    assert {p.name: p.value for p in b3.properties()} == {"ratio.books_visit": "0/1 met (min 0.75)"}
    assert {p.value for p in cases[("books", "case-b [b1]")].properties()} == {"1/1 met (min 0.75)"}
    assert cases[("books", "run verdict")].is_passed


def test_a_failure_names_the_reason_the_call_the_deciding_line_and_the_command_to_run_next(
        runs: dict, tmp_path: Path) -> None:
    cases = _report(runs, tmp_path, LINE, "no-promises")
    failing = {name for (_, name), c in cases.items() if not c.is_passed}
    assert failing == {"case-a [a3]", "run verdict"}
    a3 = cases[("no-promises", "case-a [a3]")]
    (failure,) = a3.result
    assert isinstance(failure, Failure)
    body = failure.text or ""
    assert "call a3" in body
    assert "- no_guarantee: not met:" in body
    assert "deciding line: transcript line 2 (agent): 'We guarantee a fix today.'" in body
    show = next(line for line in body.splitlines() if line.startswith("next: assay show "))
    shown = json.loads(assay(*show.removeprefix("next: assay ").split(), "--json", home=runs["home"]).stdout)
    assert shown["case_run"]["call_id"] == "a3"
    assert a3.time == pytest.approx(1.5)
    assert "assay verdicts" in (cases[("no-promises", "run verdict")].result[0].text or "")


def test_a_flaky_case_is_skipped_with_its_failing_replays_as_flaky_failures(runs: dict, tmp_path: Path) -> None:
    cases = _report(runs, tmp_path, LINE, "names")
    assert set(cases) == {("names", "case-a"), ("names", "case-b"), ("names", "run verdict")}
    a, b = cases[("names", "case-a")], cases[("names", "case-b")]
    assert a.is_passed and a.time == pytest.approx(4.5)
    (skipped,) = b.result
    assert isinstance(skipped, Skipped) and (skipped.message or "").startswith("flaky")
    assert [f.message for f in b.flaky_failures()] and "call b3" in (b.flaky_failures()[0].stack_trace or "")
    assert {p.name: p.value for p in b.properties()}["passes"] == "2"


def test_the_suite_counts_and_times_what_it_holds(runs: dict, tmp_path: Path) -> None:
    report = tmp_path / "all.xml"
    assay("verdicts", runs["ids"][LINE], "--junit", str(report), home=runs["home"])
    xml = JUnitXml.fromfile(str(report))
    (suite,) = list(xml)
    cases = list(suite)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
        len(cases), sum(isinstance(r, Failure) for c in cases for r in c.result),
        sum(isinstance(r, Error) for c in cases for r in c.result),
        sum(isinstance(r, Skipped) for c in cases for r in c.result))
    assert suite.time == pytest.approx(9.0)  # six calls of 1.5 s, each counted once
    assert {c.classname.rsplit(".", 1)[1] for c in cases} == {"polite", "no-promises", "books", "names"}


def _pure(rows: list[dict]) -> JUnitXml:
    from assay.flows.junit import junit

    return JUnitXml.fromstring(ET.tostring(junit(rows, {"r1": "t/s"}), encoding="unicode"))


@pytest.mark.parametrize(("run_verdict", "code"), [("pass", 0), ("fail", 80), ("error", 82), (None, 82)])
def test_a_case_never_reads_worse_than_its_consumers_verdict_on_the_run(run_verdict: str | None, code: int) -> None:
    """An undetermined result the run's allowance excludes errs in the case's own reading, not in the gate's."""
    cases = [{"case_key": "k", "case_run_id": "cr1", "verdict": "error", "reason": "1 undetermined", "results": []},
             {"case_key": "j", "case_run_id": "cr2", "verdict": "fail", "reason": "required x not met", "results": []}]
    xml = _pure([{"run_id": "r1", "consumer": "c", "criteria_version": 1, "verdict": run_verdict,
                  "reason": "the run", "cases": cases}])
    assert file_code(xml) == code
    by_name = {c.name: c for suite in xml for c in suite}
    if run_verdict == "pass":
        assert all(isinstance(r, Skipped) for n in ("k", "j") for r in by_name[n].result)
        assert (by_name["k"].result[0].message or "").startswith("not counted against the run (error: 1 undetermined)")


def test_a_verdict_the_report_does_not_know_is_an_error_never_a_pass() -> None:
    xml = _pure([{"run_id": "r1", "consumer": "c", "criteria_version": 1, "verdict": "maybe", "reason": None,
                  "cases": []}])
    assert file_code(xml) == 82
