"""Gates through the real CLI: `assay run --gate` and `assay verdicts --gate` exit with the gated consumers'
verdict code (0 pass, 80 fail, 82 error or no verdict possible), `--consumer` filters, `--junit` writes a
report a CI reads, and a consumer with no criteria is refused before anything runs.

On the demo bundle, acme-plumbing/main-line passes blueprint_ci and nightly_sweep and fails publish_gate;
northside-hvac/recorded-calls (no judge configured, one call that did not execute) is an error for all three.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from command_line import assay

from assay.flows.demo import DEMO

MAIN, RECORDED = "acme-plumbing/main-line", "northside-hvac/recorded-calls"
CONSUMERS = ["blueprint_ci", "nightly_sweep", "publish_gate"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo bundle loaded; main-line run gated on blueprint_ci (with a report), recorded-calls gated on
    publish_gate (as JSON). The home, both runs' process results and ids, and the reports."""
    root = tmp_path_factory.mktemp("gates")
    home = root / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    main = assay("run", MAIN, "--gate", "blueprint_ci", "--junit", str(root / "main.xml"), home=home, check=None)
    recorded = assay("run", RECORDED, "--gate", "publish_gate", "--json", home=home, check=None)
    runs = json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"]
    ids = {f"{r['team_id']}/{r['suite_key']}": r["run_id"] for r in runs}
    return {"root": root, "home": home, "main": main, "recorded": recorded, "ids": ids}


def test_run_gated_on_a_passing_consumer_exits_0_and_prints_every_verdict(demo: dict) -> None:
    assert demo["main"].returncode == 0, demo["main"].stderr
    out = demo["main"].stdout
    assert "verdicts per consumer" in out
    for consumer in CONSUMERS:
        assert consumer in out


def test_run_gated_on_an_erroring_consumer_exits_82_and_its_json_carries_the_verdicts(demo: dict) -> None:
    assert demo["recorded"].returncode == 82, demo["recorded"].stderr
    doc = json.loads(demo["recorded"].stdout)
    assert (doc["schema"], doc["revision"]) == ("assay.run", 3)
    assert doc["run"]["status"] == "completed"
    verdicts = {v["consumer"]: v["verdict"] for v in doc["verdicts"]}
    assert verdicts == dict.fromkeys(CONSUMERS, "error")
    assert all(v["run_id"] == doc["run"]["run_id"] for v in doc["verdicts"])


def test_run_gated_on_a_failing_consumer_exits_80(demo: dict, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(demo["home"], home)
    proc = assay("run", MAIN, "--gate", "publish_gate", "--gate", "blueprint_ci", home=home, check=80)
    assert "publish_gate" in proc.stdout and "fail" in proc.stdout


def test_a_run_that_ends_in_error_exits_82_without_a_gate(tmp_path: Path) -> None:
    """No verdict is possible: the call set changed after loading, so the runner refuses it."""
    bundle = tmp_path / "demo"
    shutil.copytree(DEMO, bundle)
    home = tmp_path / "home"
    assay("init", home=home)
    assay("load", str(bundle / "bundle.yaml"), home=home)
    with (bundle / "calls" / "northside-recorded.jsonl").open("a") as calls:
        calls.write("\n")
    proc = assay("run", RECORDED, "--json", "--junit", str(tmp_path / "r.xml"), home=home, check=82)
    doc = json.loads(proc.stdout)
    assert doc["run"]["status"] == "error"
    assert {v["verdict"] for v in doc["verdicts"]} == {"error"}
    # no case ran, yet the report still fails the CI: one error per consumer for the run's verdict
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("errors")) == ("3", "3")
    assert {c.get("name") for c in suite.iter("testcase")} == {"run verdict"}


def test_a_gate_on_a_consumer_without_criteria_is_refused_before_running(demo: dict) -> None:
    proc = assay("run", MAIN, "--gate", "nobody", home=demo["home"], check=1)
    assert proc.stderr.startswith("error: --gate: 'nobody' has no criteria on suite acme-plumbing/main-line")
    assert "blueprint_ci, nightly_sweep, publish_gate" in proc.stderr
    runs = json.loads(assay("runs", "list", "--json", home=demo["home"]).stdout)["runs"]
    assert len(runs) == 2  # nothing was run


@pytest.mark.parametrize(("gates", "code"), [
    (["blueprint_ci"], 0),
    (["nightly_sweep", "blueprint_ci"], 0),
    (["publish_gate"], 80),
    (["blueprint_ci", "publish_gate"], 80),
])
def test_verdicts_gate_exits_with_the_most_severe_gated_verdict(demo: dict, gates: list[str], code: int) -> None:
    args = [a for g in gates for a in ("--gate", g)]
    assay("verdicts", demo["ids"][MAIN], *args, home=demo["home"], check=code)


def test_verdicts_gate_over_a_suite_and_an_error_verdict_exits_82(demo: dict) -> None:
    assay("verdicts", demo["ids"][RECORDED], "--gate", "blueprint_ci", home=demo["home"], check=82)
    assay("verdicts", "--suite", RECORDED, "--gate", "nightly_sweep", home=demo["home"], check=82)
    assay("verdicts", "--suite", MAIN, "--gate", "nightly_sweep", home=demo["home"], check=0)


def test_verdicts_without_a_gate_exit_0_whatever_the_verdicts(demo: dict) -> None:
    assay("verdicts", demo["ids"][RECORDED], home=demo["home"], check=0)


def test_verdicts_consumer_filters_and_an_unknown_one_is_named(demo: dict) -> None:
    run = demo["ids"][MAIN]
    doc = json.loads(assay("verdicts", run, "--consumer", "publish_gate", "--consumer", "nightly_sweep", "--json",
                           home=demo["home"]).stdout)
    assert [(v["consumer"], v["verdict"]) for v in doc["verdicts"]] == [("nightly_sweep", "pass"),
                                                                       ("publish_gate", "fail")]
    assert all("cases" not in v for v in doc["verdicts"])
    proc = assay("verdicts", run, "--consumer", "nobody", "--gate", "blueprint_ci", home=demo["home"], check=1)
    assert proc.stderr.startswith(f"error: --consumer: 'nobody' has no criteria on run {run}")
    proc = assay("verdicts", run, "--gate", "nobody", home=demo["home"], check=1)
    assert "consumers with criteria there: blueprint_ci, nightly_sweep, publish_gate" in proc.stderr


def _cases(suite: ET.Element) -> list[ET.Element]:
    return list(suite.iter("testcase"))


def _check_counts(element: ET.Element, cases: list[ET.Element]) -> None:
    assert element.get("tests") == str(len(cases))
    assert element.get("failures") == str(sum(c.find("failure") is not None for c in cases))
    assert element.get("errors") == str(sum(c.find("error") is not None for c in cases))


def test_run_junit_holds_only_the_gated_consumer_a_case_per_case_with_properties(demo: dict) -> None:
    root = ET.parse(demo["root"] / "main.xml").getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = _cases(suite)
    _check_counts(suite, cases)
    _check_counts(root, cases)
    assert suite.get("name") == MAIN
    props = {p.get("name"): p.get("value") for p in suite.find("properties").iter("property")}
    assert props == {"run_id": demo["ids"][MAIN], "criteria.blueprint_ci": "1"}  # publish_gate fails, ungated
    keys = ["burst-pipe-emergency", "price-quote-request", "reschedule-appointment", "water-heater-outside-area"]
    assert {c.get("classname") for c in cases} == {f"{MAIN}.blueprint_ci"}
    assert sorted(c.get("name") for c in cases) == sorted([*keys, "run verdict"])
    assert (root.get("failures"), root.get("errors")) == ("0", "0")  # as the exit code, 0, says


def test_verdicts_junit_names_each_case_run_of_a_case_that_ran_several_times(demo: dict) -> None:
    report = demo["root"] / "reports" / "recorded.xml"
    assay("verdicts", demo["ids"][RECORDED], "--consumer", "blueprint_ci", "--junit", str(report),
          home=demo["home"])
    (suite,) = ET.parse(report).getroot().findall("testsuite")
    cases = _cases(suite)
    _check_counts(suite, cases)
    names = [c.get("name") for c in cases]
    assert len(names) == len(set(names)) == 13  # 12 case runs (4 cases, 3 calls each) and the run's verdict
    assert {c.get("classname") for c in cases} == {f"{RECORDED}.blueprint_ci"}
    assert sum(n.startswith("no-heat-elderly-caller [") for n in names) == 3
    assert suite.find("testcase[@name='run verdict']/error") is not None
    assert int(suite.get("errors") or 0) >= 2 and int(suite.get("failures") or 0) >= 1


def test_the_gate_options_say_the_exit_codes(demo: dict) -> None:
    for command in ("run", "verdicts"):
        out = assay(command, "--help", home=demo["home"]).stdout
        assert "--gate" in out and "--junit" in out
        assert "80 fail" in " ".join(out.split())


def test_the_report_carries_any_reason_as_valid_xml_and_counts_what_it_holds() -> None:
    from assay.flows.junit import junit

    rows = [{"run_id": "r1", "consumer": "c", "criteria_version": 2, "verdict": None, "reason": "vendor said \x00\x1b",
             "cases": [{"case_key": "k", "verdict": "fail", "reason": "bell \x07"},
                       {"case_key": "k", "verdict": "pass", "reason": "ok"},
                       {"case_key": "j", "verdict": None, "reason": None}]}]
    root = ET.fromstring(ET.tostring(junit(rows, {"r1": "t/s"}), encoding="unicode"))
    (suite,) = root.findall("testsuite")
    _check_counts(suite, _cases(suite))
    assert [c.get("name") for c in _cases(suite)] == ["k [#1]", "k [#2]", "j", "run verdict"]
    assert (suite.get("failures"), suite.get("errors")) == ("1", "2")
    assert suite.find("testcase[@name='j']/error").get("message") == "no verdict possible"
    assert suite.find("testcase[@name='run verdict']/error").get("message") == "vendor said \ufffd\ufffd"
