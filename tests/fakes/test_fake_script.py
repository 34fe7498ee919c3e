"""A team scripts the fake vendors for its own bundle (``assay fake-vendors --script``): the script is
checked against the bundle, and a run on every fake vendor follows it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from command_line import assay

from assay.flows.fake_script import ScriptError, load_script, steer, steering

DENTAL = Path(__file__).resolve().parents[2] / "examples" / "maple-street-dental"
SUITE = "maple-street-dental/front-desk"
RUNNERS = ("vapi_chat", "elevenlabs_chat", "hamming")


def _script(tmp_path: Path, change: dict | None = None, drop: tuple[str, ...] = ()) -> Path:
    """The dental script, beside a copy of its bundle, with ``change`` merged into its cases."""
    for name in ("bundle.yaml", "front-desk.json"):
        shutil.copy(DENTAL / name, tmp_path / name)
    doc = yaml.safe_load((DENTAL / "fakes.yaml").read_text())
    for key in drop:
        doc.pop(key)
    for key, value in (change or {}).items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "fakes.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("change", "field", "valid"), [
    ({"cases": {"new-patient": {"replies": ["Hi"]}}}, "cases.new-patient", "new-patient-cleaning"),
    ({"cases": {"cancel-late": {"judge": {"states_policy": "fail"}}}}, "cases.cancel-late.judge.states_policy",
     "states_the_policy"),
    ({"cases": {"cancel-late": {"evaluations": {"told_2": "fail"}}}}, "cases.cancel-late.evaluations.told_2",
     "told_1"),
    ({"transcripts": {"Ana": "Agent: Hello"}}, "transcripts.Ana", "Ana Ruiz"),
    ({"team": "acme"}, "team", "maple-street-dental"),
    ({"schema": "assay.fake-script/v9"}, "schema", "assay.fake-script/v1"),
    ({"cases": {"cancel-late": {"judge": {"states_the_policy": "maybe"}}}}, "cases.cancel-late.judge", "'pass'"),
])
def test_a_script_naming_what_the_bundle_lacks_is_refused_by_file_field_and_valid_values(
        tmp_path: Path, change: dict, field: str, valid: str) -> None:
    path = _script(tmp_path, change)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and field in message and valid in message, message


def test_the_command_refuses_a_bad_script_before_serving(tmp_path: Path) -> None:
    path = _script(tmp_path, {"cases": {"no-such-case": {"replies": ["Hi"]}}})
    done = assay("fake-vendors", "--script", str(path), "--seconds", "0", home=tmp_path / "home", check=1)
    assert "no-such-case" in done.stderr and "new-patient-cleaning" in done.stderr
    assay("fake-vendors", "--script", str(path), "--demo", home=tmp_path / "home", check=2)


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict]:
    from assay.fakes.serve import running

    with running() as fakes:
        yield fakes


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("dental") / "home"
    assay("init", home=home)
    assay("load", str(DENTAL / "bundle.yaml"), home=home)
    return home


def _run_everywhere(home: Path, fakes: dict, plan: dict) -> dict[str, str]:
    """The suite run on every fake vendor steered by ``plan``: per runner, ``ci_gate``'s verdict."""
    from assay.fakes.serve import settings_env

    for fake in fakes.values():
        fake.reset()
    steer(fakes, plan)
    env = settings_env(fakes)
    runs = {r: json.loads(assay("run", SUITE, "--runner", r, "--json", home=home, extra_env=env).stdout)["run"]["run_id"]
            for r in RUNNERS}
    assay("collect", home=home, extra_env=env)
    verdicts = {}
    for runner, run_id in runs.items():
        doc = json.loads(assay("verdicts", run_id, "--json", home=home).stdout)
        gate = next(v for v in doc["verdicts"] if v["consumer"] == "ci_gate")
        # the tool key counts where tool calls are seen, and a verdict says what it left out
        assert ("`books_with_tool` is not evaluated by hamming" in gate["reason"]) == (runner == "hamming"), gate
        verdicts[runner] = gate["verdict"]
    return verdicts


def _query(home: Path, sql: str) -> list[dict]:
    return json.loads(assay("query", "--format", "json", sql, home=home).stdout)


def _met(home: Path) -> dict[tuple[str, str, str], bool | None]:
    """(runner, case, assertion key) -> met, over every run so far."""
    rows = _query(home, """
        SELECT c.runner, c.case_key, a.assertion_key, a.met
        FROM assertion_results a JOIN latest_outcomes l ON l.outcome_id = a.outcome_id
             JOIN case_runs c ON c.case_run_id = a.case_run_id""")
    return {(r["runner"], r["case_key"], r["assertion_key"]): r["met"] for r in rows}


def test_a_scripted_bundle_passes_on_every_fake_vendor_and_a_scripted_failure_fails_everywhere(
        home: Path, fakes: dict, tmp_path: Path) -> None:
    script, team = load_script(DENTAL / "fakes.yaml")
    assert _run_everywhere(home, fakes, steering([team], script)) == dict.fromkeys(RUNNERS, "pass")
    met = _met(home)
    # the scripted tool call, on the runners that see tools; Hamming's own assertion, failed where scripted
    assert met[("vapi_chat", "new-patient-cleaning", "books_with_tool")] is True
    assert met[("elevenlabs_chat", "new-patient-cleaning", "books_with_tool")] is True
    assert met[("hamming", "cancel-late", "resolves_request")] is False
    assert met[("hamming", "toothache-tonight", "resolves_request")] is True
    told = _query(home, """SELECT c.case_key, e.name, e.met FROM runner_evaluations e
                           JOIN case_runs c ON c.case_run_id = e.case_run_id WHERE c.runner = 'elevenlabs_chat'""")
    assert {(r["case_key"], r["name"]): r["met"] for r in told if r["name"].startswith("told")} == {
        ("new-patient-cleaning", "told_1"): True, ("new-patient-cleaning", "told_2"): False,
        ("cancel-late", "told_1"): True, ("toothache-tonight", "told_1"): True}

    # the same agent words, but the judge scripted to find the policy missing on one case: fails on all three
    cases = {**script.model_dump()["cases"], "cancel-late": {
        "replies": ["Maple Street Dental here. I've cancelled it. Goodbye."], "judge": {"states_the_policy": "fail"}}}
    failing, _ = load_script(_script(tmp_path, {"cases": cases}))
    assert _run_everywhere(home, fakes, steering([team], failing)) == dict.fromkeys(RUNNERS, "fail")


def test_without_a_script_the_fakes_answer_from_each_case_s_own_situation(home: Path, fakes: dict) -> None:
    from assay.core.bundle import read_bundle

    _run_everywhere(home, fakes, steering(read_bundle(DENTAL / "bundle.yaml").teams))
    rows = _query(home, "SELECT runner, case_key, CAST(transcript AS VARCHAR) AS said FROM case_runs")
    for case, fact in (("toothache-tonight", "The after-hours line is 555-0142."),
                       ("cancel-late", "Cancellations less than 24 hours ahead carry a 50 dollar fee.")):
        told = {r["runner"] for r in rows if r["case_key"] == case and fact in r["said"]}
        assert told == set(RUNNERS), (case, told)
    assert not any("plumb" in r["said"].lower() or "zip" in r["said"].lower() for r in rows)  # no demo data


def test_the_readme_walk_through_with_a_script_gates_green_on_every_vendor(tmp_path: Path) -> None:
    """The README block typed line by line in this process, the fakes steered as its first line says."""
    import shlex

    from readme_blocks import ROOT, expected_exit, sh_block

    from assay.fakes.serve import running, settings_env
    from assay.flows.cli_vendors import steering_plan

    lines = sh_block("### Fake vendors that play your own bundle")
    first = shlex.split(lines[0].command)
    assert first[:4] == ["assay", "fake-vendors", "--env-file", "fakes.env"] and lines[1].command == ". ./fakes.env"
    home = tmp_path / "home"
    with running() as fakes:
        steer(fakes, steering_plan(ROOT / first[first.index("--script") + 1], None, False))
        env = settings_env(fakes)
        for line in lines[2:]:
            argv = shlex.split(line.command)
            assert argv[0] == "assay", line
            assay(*argv[1:], home=home, cwd=ROOT, extra_env=env, check=expected_exit(line))
    runs = json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"]
    verdicts = {}
    for run in runs:
        doc = json.loads(assay("verdicts", run["run_id"], "--json", home=home).stdout)
        verdicts[run["runner"]] = next(v["verdict"] for v in doc["verdicts"] if v["consumer"] == "ci_gate")
    assert verdicts == dict.fromkeys(RUNNERS, "pass")
