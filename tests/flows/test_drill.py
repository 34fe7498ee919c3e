"""Why a verdict came out, as a user asks it: `assay verdicts --cases`, `assay show` and `assay diff`,
through the real command line on a workspace where the demo's recorded calls ran twice, the second
time after one assertion was reworded.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from command_line import assay

from assay.flows.demo import DEMO

SUITE = "northside-hvac/recorded-calls"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run A of the recorded calls; the bundle reworded (declines_out_of_area now looks for "not served",
    which call-nh-0101 never says); run B; and one run of another suite."""
    root = tmp_path_factory.mktemp("drill")
    home = root / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    run_a = json.loads(assay("run", SUITE, "--json", home=home).stdout)["run"]["run_id"]
    revised = root / "revised"
    shutil.copytree(DEMO, revised)
    bundle = revised / "bundle.yaml"
    old = "params: {text: outside, role: agent, case_insensitive: true}"
    assert old in bundle.read_text()
    bundle.write_text(bundle.read_text().replace(old, "params: {text: not served, role: agent, case_insensitive: true}"))
    assay("load", str(bundle), home=home)
    run_b = json.loads(assay("run", SUITE, "--json", home=home).stdout)["run"]["run_id"]
    other = json.loads(assay("run", "acme-plumbing/main-line", "--json", home=home).stdout)["run"]["run_id"]
    return {"home": home, "a": run_a, "b": run_b, "other": other}


def readable_at_80(text: str) -> str:
    """``text`` checked to fit 80 columns with no id cut short; returned with its whitespace collapsed."""
    assert all(len(line.rstrip()) <= 80 for line in text.splitlines()), text
    assert "…" not in text
    return " ".join(text.split())


def test_verdicts_by_case_name_each_call_and_the_results_that_decided_it(ws: dict[str, Any]) -> None:
    doc = json.loads(assay("verdicts", ws["a"], "--cases", "--json", home=ws["home"]).stdout)
    gate = next(v for v in doc["verdicts"] if v["consumer"] == "blueprint_ci")
    by_call = {c["call_id"]: c for c in gate["cases"]}
    assert len(by_call) == len(gate["cases"]) == 12  # every case run told apart by its call id
    assert by_call["call-nh-0101"]["verdict"] == "pass" and by_call["call-nh-0101"]["results"] == []
    failed = by_call["call-nh-0102"]
    assert failed["verdict"] == "fail" and len(failed["case_run_id"]) == 32
    assert failed["results"] == [{"assertion_key": "declines_out_of_area", "met": False, "value": None,
                                  "evaluator": "assay:transcript",
                                  "reason": 'no turn by the agent contains "outside" (ignoring case)'}]
    not_executed = by_call["call-nh-0203"]
    assert not_executed["verdict"] == "error"
    [undetermined] = not_executed["results"]
    assert undetermined["assertion_key"] == "books_same_day" and undetermined["met"] is None
    assert undetermined["reason"].startswith("the case run did not execute: ")

    text = readable_at_80(assay("verdicts", ws["a"], "--cases", home=ws["home"], columns=80).stdout)
    assert "water-heater-outside-area (call call-nh-0102): fail" in text
    assert 'declines_out_of_area not met value - assay:transcript no turn by the agent contains "outside"' in text
    assert "no-heat-elderly-caller (call call-nh-0203): error" in text
    assert "books_same_day undetermined value - assay:execution the case run did not execute:" in text


def test_show_marks_the_turn_and_the_tool_call_that_decided_a_result(ws: dict[str, Any]) -> None:
    doc = json.loads(assay("show", "call-nh-0101", "--run", ws["a"], "--json", home=ws["home"]).stdout)
    assert doc["schema"] == "assay.show"
    case = doc["case_run"]
    assert (case["run_id"], case["suite"], case["case_key"], case["call_id"]) == (
        ws["a"], SUITE, "water-heater-outside-area", "call-nh-0101")
    results = {r["assertion_key"]: r for r in doc["results"]}
    declines, tool = results["declines_out_of_area"], results["checks_area_with_tool"]
    assert declines["met"] is True and declines["counted_by"] == ["blueprint_ci", "nightly_sweep", "publish_gate"]
    [turn] = declines["decided_by"]["turns"]
    assert "outside our service area" in doc["transcript"][turn]["text"]
    assert "declines_out_of_area" in doc["transcript"][turn]["decides"]
    assert [t["index"] for t in doc["transcript"] if "declines_out_of_area" in t["decides"]] == [turn]
    assert tool["decided_by"] == {"calls": [0]} and doc["tool_calls"][0]["name"] == "check_service_area"
    assert doc["tool_calls"][0]["decides"] == ["checks_area_with_tool"]
    assert results["answers_question"]["decided_by"] is None  # a rubric points at no line
    assert results["stays_short"]["counted_by"] == []

    by_prefix = json.loads(assay("show", case["case_run_id"][:10], "--json", home=ws["home"]).stdout)
    assert by_prefix["case_run"]["case_run_id"] == case["case_run_id"]

    text = assay("show", case["case_run_id"], home=ws["home"], columns=80).stdout
    flat = readable_at_80(text)
    assert f"case run {case['case_run_id']}" in flat and f"run {ws['a']}" in flat
    marked = [line for line in text.splitlines() if line.startswith(">")]
    assert marked[0].split()[:3] == [">", str(turn), "agent"]
    assert marked[-1].split()[:3] == [">", "0", "check_service_area"]
    assert "^ decides declines_out_of_area" in flat and "^ decides checks_area_with_tool" in flat
    assert f"counted by: blueprint_ci, nightly_sweep, publish_gate; decided by turn {turn}" in flat
    # the duration as a person reads it: the recorded call lasted 70.5 s
    assert case["duration_ms"] == 70_500
    [duration] = [line.split(None, 1)[1].strip() for line in text.splitlines() if line.startswith("duration ")]
    assert duration == "1 min 10 s"


def test_show_of_a_call_replayed_in_two_runs_asks_which(ws: dict[str, Any]) -> None:
    proc = assay("show", "call-nh-0101", home=ws["home"], check=1)
    assert proc.stderr.startswith("error: 'call-nh-0101' names 2 case runs")
    assert ws["a"] in proc.stderr and ws["b"] in proc.stderr and "--run RUN" in proc.stderr


def test_show_of_an_unknown_id_suggests_what_exists(ws: dict[str, Any]) -> None:
    proc = assay("show", "call-nh-0110", home=ws["home"], check=1)
    assert proc.stderr.startswith("error: no case run 'call-nh-0110'; did you mean call-nh-01")
    assert "`assay verdicts RUN --cases` lists both" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_diff_shows_what_the_reworded_assertion_changed(ws: dict[str, Any]) -> None:
    doc = json.loads(assay("diff", ws["a"], ws["b"], "--json", home=ws["home"]).stdout)
    assert (doc["schema"], doc["suite"], doc["run_a"], doc["run_b"]) == ("assay.diff", SUITE, ws["a"], ws["b"])
    assert {c["consumer"] for c in doc["consumers"]} == {"blueprint_ci", "nightly_sweep", "publish_gate"}
    flipped = [c for c in doc["cases"] if c["changed"]]
    assert {"case_key": "water-heater-outside-area", "source_ref": "call-nh-0101", "consumer": "blueprint_ci",
            "a": "pass", "b": "fail", "changed": True} in flipped
    assert all(c["case_key"] == "water-heater-outside-area" for c in flipped)
    keys = {k["assertion_key"]: k for k in doc["keys"]}
    declines = keys["declines_out_of_area"]
    assert (declines["a"]["met"], declines["b"]["met"], declines["a"]["results"]) == (1, 0, 3)
    [change] = declines["changed"]
    assert (change["source_ref"], change["met_a"], change["met_b"]) == ("call-nh-0101", True, False)
    assert '"not served"' in change["reason_b"]
    assert all(k["changed"] == [] for name, k in keys.items() if name != "declines_out_of_area")

    text = readable_at_80(assay("diff", ws["a"][:8], ws["b"][:8], home=ws["home"], columns=80).stdout)
    assert f"a: run {ws['a']} b: run {ws['b']}" in text
    assert "water-heater-outside-area (call call-nh-0101) blueprint_ci: pass -> fail" in text
    assert "declines_out_of_area: 1/3 met -> 0/3 met, 1 result(s) changed" in text
    assert "water-heater-outside-area (call call-nh-0101): met -> not met" in text


def test_diff_refuses_runs_of_different_suites(ws: dict[str, Any]) -> None:
    proc = assay("diff", ws["a"], ws["other"], home=ws["home"], check=1)
    assert proc.stderr.startswith("error: runs of different suites cannot be compared")
    assert SUITE in proc.stderr and "acme-plumbing/main-line" in proc.stderr
    assert f"assay runs list --suite {SUITE}" in proc.stderr


def test_a_case_run_with_no_call_and_no_conversation_is_named_by_its_id_and_marks_nothing(ws: dict[str, Any]) -> None:
    doc = json.loads(assay("verdicts", ws["other"], "--cases", "--json", home=ws["home"]).stdout)
    cases = doc["verdicts"][0]["cases"]
    assert cases and all(c["call_id"] is None for c in cases)
    text = readable_at_80(assay("verdicts", ws["other"], "--cases", home=ws["home"], columns=80).stdout)
    assert f"{cases[0]['case_key']} (case run {cases[0]['case_run_id']}): " in text

    shown = json.loads(assay("show", cases[0]["case_run_id"], "--json", home=ws["home"]).stdout)
    assert shown["transcript"] == [] and shown["tool_calls"] == []
    assert shown["results"] and all(r["decided_by"] is None for r in shown["results"])
    text = readable_at_80(assay("show", cases[0]["case_run_id"], home=ws["home"], columns=80).stdout)
    assert "transcript (0; > marks a line that decided a result) none recorded" in text


def test_listings_of_a_suites_runs_go_by_time_and_name_the_runner_and_the_outcome(ws: dict[str, Any]) -> None:
    """`verdicts --suite` and `rescore` list the runs oldest first (never by id), with their runner; `runs list`
    shows each run's outcome. Ids are random: the suite is run again until id order is not time order."""
    made = [ws["a"], ws["b"]]
    while made == sorted(made):  # each run makes it less likely (1 in 2, 6, 24, ...)
        assert len(made) < 8, "run ids kept coming in time order"
        made.append(json.loads(assay("run", SUITE, "--json", home=ws["home"]).stdout)["run"]["run_id"])

    verdicts = json.loads(assay("verdicts", "--suite", SUITE, "--json", home=ws["home"]).stdout)["verdicts"]
    assert list(dict.fromkeys(v["run_id"] for v in verdicts)) == made
    rescored = json.loads(assay("rescore", SUITE, "--consumer", "blueprint_ci", "--json", home=ws["home"]).stdout)
    assert [(r["run_id"], r["runner"]) for r in rescored["runs"]] == [(run_id, "recorded") for run_id in made]

    text = assay("verdicts", "--suite", SUITE, home=ws["home"]).stdout
    assert next(line for line in text.splitlines() if line.startswith("run ")).split()[:3] == ["run", "runner", "consumer"]
    def full(cell: str) -> str | None:  # tables show each id by its shortest unique prefix (12+ characters)
        return next((run_id for run_id in made if len(cell) >= 12 and run_id.startswith(cell)), None)

    listed = [(full(line.split()[0]), line.split()[1]) for line in text.splitlines() if line.split()[:1]
              and full(line.split()[0])]
    assert listed[::3] == [(run_id, "recorded") for run_id in made]  # three consumers a run
    text = assay("rescore", SUITE, "--consumer", "blueprint_ci", home=ws["home"]).stdout
    at = [text.index(run_id[:12]) for run_id in made]
    assert at == sorted(at)

    listing = json.loads(assay("runs", "list", "--suite", SUITE, "--json", home=ws["home"]).stdout)["runs"]
    outcome = {r["run_id"]: r["outcome"] for r in listing}
    assert outcome[ws["a"]] in ("pass", "fail", "error")
    text = assay("runs", "list", "--suite", SUITE, home=ws["home"]).stdout
    header = next(line for line in text.splitlines() if line.startswith("run ")).split()
    assert header[:6] == ["run", "team/suite", "runner", "status", "(outcome)", "case"]
    row = next(line.split() for line in text.splitlines() if line.startswith(ws["a"][:12]))
    assert row[3:5] == ["completed", f"({outcome[ws['a']]})"]
