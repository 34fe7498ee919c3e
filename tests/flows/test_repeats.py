"""Repeats through the real CLI against the fake VAPI: every replay is a case run, each case is decided over
its replays under a consumer's ``pass_rate`` (the sequential test, else the Wilson bounds), undecided cases
escalate up to the budget and then stay FLAKY, excluded from the counts and never a silent pass; re-scoring
a repeated run under another per-case rate is a query; bad repeat plans are refused before anything runs.

The demo's fake agent fumbles one call in ten on ``faucet-in-area`` (a rated reply rule, spread evenly: the
10th, 20th and 30th replays fail) and never on ``water-heater-outside-area``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from command_line import assay

from assay.core.document_models import validate
from assay.flows.demo import DEMO, REPEATS

SUITE = REPEATS


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict]:
    from assay.fakes.serve import running
    from assay.flows.demo_vendors import steer

    with running() as fakes:
        steer(fakes)
        yield fakes


@pytest.fixture(scope="module")
def fakes_env(fakes: dict) -> dict[str, str]:
    from assay.fakes.serve import settings_env

    return settings_env(fakes)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, fakes_env: dict[str, str]) -> Path:
    home = tmp_path_factory.mktemp("repeats") / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    return home


def _run(home: Path, env: dict[str, str], *options: str) -> dict:
    doc = json.loads(assay("run", SUITE, "--runner", "vapi_chat", *options, "--json", home=home, extra_env=env).stdout)
    validate(doc)
    return doc


def _series(verdict: dict) -> dict[str, dict]:
    return {s["case_key"]: s for s in verdict["series"]}


@pytest.fixture(scope="module")
def escalated(home: Path, fakes_env: dict[str, str]) -> dict:
    """The suite run with its own plan: 10 replays per case, escalation up to 30."""
    return _run(home, fakes_env)


def test_undecided_cases_escalate_to_the_budget_and_stay_flaky(home: Path, escalated: dict) -> None:
    doc = escalated
    run = doc["run"]
    assert (run["repeat"], run["budget"], run["case_count"]) == (10, 30, 2)
    # the steady case: 10 passes do not decide; 4 more reach the sequential test's accept bound at 14
    assert run["case_runs"] == 14 + 30 and doc["executed"]["case_runs"] == 44
    by = {v["consumer"]: v for v in doc["verdicts"]}
    # the same replays, three consumers: every replay must pass (3 fumbled: fail); the average of all 44 (0.93)
    # passes and hides the fumbling case; each case on its own replays: one passes, one is FLAKY
    assert (by["blueprint_ci"]["verdict"], by["publish_gate"]["verdict"]) == ("fail", "pass")
    assert "series" not in by["blueprint_ci"] or by["blueprint_ci"]["series"] is None
    v = by["nightly_sweep"]
    assert (v["verdict"], v["stamped"]) == ("pass", "pass")
    series = _series(v)
    steady, flaky = series["water-heater-outside-area"], series["faucet-in-area"]
    assert (steady["verdict"], steady["how"], steady["at"], steady["runs"]) == ("pass", "sequential", 14, 14)
    assert (flaky["verdict"], flaky["how"], flaky["passes"], flaky["runs"]) == ("flaky", "undecided", 27, 30)
    assert "stopped at the escalation budget of 30 replays" in flaky["reason"]
    assert v["reason"].startswith("1 of 2 cases pass on their replays; 1 flaky, excluded: faucet-in-area (27 of 30")

    # every replay is a case run of its own, numbered in replay order
    shown = json.loads(assay("verdicts", run["run_id"], "--cases", "--json", home=home).stdout)
    refs = sorted(c["call_id"] or "" for c in shown["verdicts"][0]["cases"] if c["case_key"] == "faucet-in-area")
    assert refs == [f"replay-{n:04d}" for n in range(1, 31)]
    nightly = next(v for v in shown["verdicts"] if v["consumer"] == "nightly_sweep")
    failed = [c["call_id"] for c in nightly["cases"] if c["verdict"] == "fail"]
    assert sorted(failed) == ["replay-0010", "replay-0020", "replay-0030"]

    # what a person reads: the FLAKY case with its pass rate and bounds
    text = assay("verdicts", run["run_id"], home=home, columns=120).stdout
    assert "FLAKY" in text and "27/30" in text and "0.77-0.96" in text and "sequential test at replay 14" in text


def test_without_a_budget_nothing_escalates_and_nothing_decided_is_an_error(home: Path, fakes_env: dict[str, str]) -> None:
    doc = _run(home, fakes_env, "--repeat", "3", "--budget", "3")
    run = doc["run"]
    assert (run["repeat"], run["budget"], run["case_runs"]) == (3, None, 6)
    v = next(v for v in doc["verdicts"] if v["consumer"] == "nightly_sweep")
    assert {s["verdict"] for s in v["series"]} == {"flaky"}
    assert v["verdict"] == "error" and v["reason"].startswith("no case decided: 2 flaky")
    assert all("no escalation budget" in s["reason"] for s in v["series"])
    code = assay("run", SUITE, "--runner", "vapi_chat", "--repeat", "3", "--budget", "3", "--gate", "nightly_sweep",
                 home=home, extra_env=fakes_env, check=None).returncode
    assert code == 82  # a flaky case never passes a gate silently


def test_rescoring_a_repeated_run_under_another_rate_is_a_query(home: Path, tmp_path: Path) -> None:
    spec = tmp_path / "wilson.yaml"
    spec.write_text("required: [answers_the_area]\npass_rate: {min: 0.75, sequential: null}\n")
    doc = json.loads(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--spec", str(spec), "--json",
                           home=home).stdout)
    verdicts = sorted((r["verdict"], r["reason"].split(":")[0].split(";")[0]) for r in doc["runs"])
    # under Wilson alone at 0.75: the escalated run's 27/30 has a lower bound of 0.77 and its 14/14 one of 0.84,
    # so both cases pass; the runs of 3 replays decide nothing (3/3: 0.53)
    assert verdicts == [("error", "no case decided"), ("error", "no case decided"),
                        ("pass", "2 of 2 cases pass on their replays")], doc["runs"]
    strict = tmp_path / "strict.yaml"
    strict.write_text("required: [answers_the_area]\npass_rate: {min: 0.99, sequential: null}\n")
    doc = json.loads(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--spec", str(strict), "--json",
                           home=home).stdout)
    assert all(r["verdict"] != "pass" for r in doc["runs"])  # nothing shows 0.99: flaky or failing, never a pass


def test_bad_repeat_plans_are_refused_before_anything_runs(home: Path, tmp_path: Path, fakes_env: dict[str, str]) -> None:
    proc = assay("run", "northside-hvac/recorded-calls", "--repeat", "2", home=home, check=1)
    assert "cannot replay a case" in proc.stderr and "without --repeat" in proc.stderr
    proc = assay("run", SUITE, "--runner", "vapi_chat", "--repeat", "5", "--budget", "3", home=home,
                 extra_env=fakes_env, check=1)
    assert "budget must be 5..1000" in proc.stderr
    bundle = (DEMO / "bundle.yaml").read_text().replace("repeat: {count: 10, budget: 30}", "repeat: {count: 10, budget: 5}")
    bad = tmp_path / "bundle.yaml"
    bad.write_text(bundle)
    for path in (DEMO / "configs").iterdir():
        (tmp_path / "configs").mkdir(exist_ok=True)
        (tmp_path / "configs" / path.name).write_text(path.read_text())
    (tmp_path / "calls").mkdir()
    for path in (DEMO / "calls").iterdir():
        (tmp_path / "calls" / path.name).write_text(path.read_text())
    proc = assay("load", str(bad), home=home, check=1)
    assert "budget (5) must be at least count (10)" in proc.stderr
    runs = json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"]
    assert all(r["suite_key"] == "chat-repeats" for r in runs)  # nothing else ran


def test_judge_noise_is_measured_on_stored_calls_apart_from_the_agents(home: Path, escalated: dict, fakes: dict,
                                                                       fakes_env: dict[str, str]) -> None:
    run_id = escalated["run"]["run_id"]
    before = json.loads(assay("verdicts", run_id, "--cases", "--json", home=home).stdout)
    # a judge that fails one answer in five on the in-area calls, asked in order (one question at a time)
    rule = {"match": "60604", "rate": 0.2, "reply": {"verdict": "fail", "rationale": "noise"}}
    fakes["openai"].faults.scripts["rules"] = [rule, *fakes["openai"].faults.scripts["rules"]]
    fakes["openai"].faults.hits.clear()
    asked = fakes["openai"].completions()
    env = {**fakes_env, "ASSAY_JUDGE_CONCURRENCY": "1"}
    doc = json.loads(assay("judge-noise", run_id, "--times", "5", "--json", home=home, extra_env=env).stdout)
    validate(doc)
    assert (doc["questions"], doc["times"], doc["judge_calls"]) == (44, 5, 220)
    assert fakes["openai"].completions() - asked == 220  # fresh answers: nothing came from the judge cache
    [key] = doc["keys"]
    assert (key["assertion_key"], key["calls"], key["answers"]) == ("settles_the_area", 44, 220)
    # 27 in-area calls answered 4 pass / 1 fail (0.4 each); the 3 fumbled calls and 14 out-of-area ones unanimous
    assert key["judge_split_calls"] == 27 and key["judge_disagreement"] == pytest.approx(27 * 0.4 / 44)
    # the agent: by majority, the in-area case's replays pass 27 of 30 (2*27*3/(30*29)); the other never varies
    assert key["agent_cases"] == 2 and key["agent_disagreement"] == pytest.approx((2 * 27 * 3 / (30 * 29)) / 2)
    after = json.loads(assay("verdicts", run_id, "--cases", "--json", home=home).stdout)
    assert after == before  # kept apart: no outcome, result or verdict changed
    text = assay("judge-noise", run_id, "--times", "2", "--key", "settles_the_area", home=home, extra_env=env).stdout
    assert "settles_the_area: judge disagreement" in text and "nothing stored" in text
