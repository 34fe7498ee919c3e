"""A new user's path, as the README shows it: their own bundle, a run gated in CI with a JUnit report,
a drill into the failing call, and a changed criteria re-scored — then adopted, so the gate fails on the
real failure instead of erroring on a hang-up.

The block under "## Your own suite" runs line by line as processes (:mod:`readme_blocks`); what the
prose after it promises is then done as a user would: edit the bundle, plan, load, run the gate again.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from readme_blocks import ROOT, Typed, assay, assert_walked, checkout

OWN_SUITE = "## Your own suite"
SUITE = "brightwire-electric/answering-line"


@pytest.fixture(scope="module")
def walked(readme_walk, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Typed]]:
    home = tmp_path_factory.mktemp("own-suite") / "home"
    examples = checkout(home) / "examples"
    examples.unlink()  # the user's own copy, which they will edit
    shutil.copytree(ROOT / "examples", examples)
    return home, readme_walk(OWN_SUITE, home)


def said(done: list[Typed], command: str) -> str:
    """What the first line starting ``assay COMMAND`` printed."""
    return next(proc.stdout for line, _, proc in done if line.command.startswith(f"assay {command}"))


def test_the_new_user_path_runs_as_written(walked) -> None:
    home, done = walked
    assert_walked(OWN_SUITE, done)
    # the gate's report: the failing call is a failure, the hung-up one an error, each with its reason
    report = ET.parse(home.parent / "checkout" / "reports" / "brightwire.xml").getroot()
    cases = {c.get("name"): c for c in report.iter("testcase") if c.get("classname") == f"{SUITE}.ci-gate"}
    failed = cases["sparking-outlet [call-bw-102]"].find("failure")
    assert failed is not None and "dispatch_emergency" in failed.get("message")
    errored = cases["flickering-lights"].find("error")
    assert errored is not None and "could not be determined" in errored.get("message")
    assert cases["sparking-outlet [call-bw-101]"].find("failure") is None
    # the drill-down names the call, the behaviour and why
    drilled = said(done, "verdicts")
    assert "call-bw-102" in drilled and "dispatch_emergency" in drilled and "was not called" in drilled.replace("\n", " ")
    assert "caller hung up" in drilled.replace("\n", " ")
    shown = said(done, "show")
    assert "call-bw-102" in shown and "Our office opens at eight tomorrow" in shown
    # the what-if: tolerating the hang-up turns error into the real failure
    what_if = said(done, "rescore").replace("\n", " ")
    assert "candidate" in what_if and "1 run(s) flip" in what_if and "error -> fail" in what_if
    assert re.search(r"1 run\(s\) re-scored in \d+(\.\d)? (ms|s|min)( \d+ s)? \([\d,]+ runs/s\)", what_if), what_if  # a total and a rate


def test_the_candidate_criteria_shown_is_the_example_file() -> None:
    """The README's `--spec` example is the file the walk re-scores with (comments aside)."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("**A candidate criteria (`--spec FILE`).**"):]
    shown = block[block.index("```yaml\n") + 8:block.index("\n```", block.index("```yaml"))]
    example = ROOT / "examples" / "brightwire" / "ci-gate-tolerant.yaml"
    assert yaml.safe_load(shown) == yaml.safe_load(example.read_text())


def test_adopting_the_criteria_makes_the_gate_fail_on_the_real_failure(walked) -> None:
    home, _ = walked
    edited = checkout(home) / "examples" / "brightwire" / "bundle.yaml"
    bundle = yaml.safe_load(edited.read_text())
    (suite,) = bundle["teams"][0]["suites"]
    suite["criteria"]["ci-gate"]["allow_undetermined"] = {"count": 1}  # the edit the README describes
    edited.write_text(yaml.safe_dump(bundle, sort_keys=False))

    planned = assay(home, "plan", "examples/brightwire/bundle.yaml")
    assert planned.returncode == 0, planned.stderr
    assert "ci-gate: re-score" in planned.stdout.replace("\n", " "), planned.stdout
    loaded = assay(home, "load", "examples/brightwire/bundle.yaml")
    assert loaded.returncode == 0, loaded.stderr
    gated = assay(home, "run", SUITE, "--gate", "ci-gate")
    assert gated.returncode == 80, gated.stdout + gated.stderr
    assert "1 undetermined result excluded" in gated.stdout.replace("\n", " ").replace("  ", " "), gated.stdout
