"""Criteria what-if over history (``assay rescore --spec FILE`` without a suite), through the real CLI:
by team and consumer, which runs flip against their stamped verdicts and on which keys; suites the
candidate does not resolve against are skipped and said so; the scope options narrow it; and options that
do not go together are a usage error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_line import assay

from assay.core.document_models import validate
from assay.flows.demo import DEMO, SUITES

CANDIDATE = """\
required: [checks_service_area_tool]
threshold:
  - keys: [every_variable_resolves, books_with_tool]
    min: 0.5
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("whatif") / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    for suite in SUITES:
        assay("run", suite, home=home, check=None)  # the demo's gates fail on purpose; the runs are final
    return home


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spec") / "candidate.yaml"
    path.write_text(CANDIDATE)
    return path


def test_a_candidate_over_history_says_which_runs_flip_and_on_which_keys(home: Path, candidate: Path) -> None:
    doc = json.loads(assay("rescore", "--spec", str(candidate), "--json", home=home).stdout)
    validate(doc)
    assert doc["schema"] == "assay.whatif" and doc["runs"] == 1  # main-line only: the call set lacks the keys
    assert [s["suite"] for s in doc["skipped"]] == ["northside-hvac/recorded-calls"]
    assert "checks_service_area_tool" in doc["skipped"][0]["why"]
    groups = {g["consumer"]: g for g in doc["groups"]}
    assert set(groups) == {"blueprint_ci", "publish_gate", "nightly_sweep"}
    assert (groups["publish_gate"]["flips"], groups["publish_gate"]["fail_to_pass"]) == (1, 1)
    assert groups["blueprint_ci"]["flips"] == groups["nightly_sweep"]["flips"] == 0
    [flip] = doc["flips"]
    # publish_gate required every_variable_resolves, which fails; the candidate only asks half of its group
    assert (flip["consumer"], flip["stamped"], flip["verdict"], flip["keys"]) == (
        "publish_gate", "fail", "pass", ["every_variable_resolves"])

    # the same verdict as re-scoring that one suite under the candidate
    one = json.loads(assay("rescore", "acme-plumbing/main-line", "--consumer", "publish_gate", "--spec", str(candidate),
                           "--json", home=home).stdout)
    assert [(r["run_id"], r["verdict"]) for r in one["runs"]] == [(flip["run_id"], flip["verdict"])]

    text = assay("rescore", "--spec", str(candidate), home=home, columns=80).stdout
    assert "1 verdict(s) flip against the stamped one" in text
    assert flip["run_id"] in text and "on every_variable_resolves" in " ".join(text.split())
    assert "skipped northside-hvac/recorded-calls" in text


def test_scope_options_narrow_the_history(home: Path, candidate: Path) -> None:
    other = json.loads(assay("rescore", "--spec", str(candidate), "--team", "northside-hvac", "--json", home=home).stdout)
    assert (other["runs"], other["groups"], other["team"]) == (0, [], "northside-hvac")
    later = json.loads(assay("rescore", "--spec", str(candidate), "--since", "2999-01-01", "--json", home=home).stdout)
    assert (later["runs"], later["since"]) == (0, "2999-01-01")
    one = json.loads(assay("rescore", "--spec", str(candidate), "--consumer", "publish_gate", "--json", home=home).stdout)
    assert [g["consumer"] for g in one["groups"]] == ["publish_gate"] and len(one["flips"]) == 1


@pytest.mark.parametrize(("args", "says"), [
    ((), "name a SUITE to re-score, or give --spec"),
    (("--spec", "{candidate}", "--materialise"), "--version and --materialise need a SUITE"),
    (("acme-plumbing/main-line", "--consumer", "publish_gate", "--team", "acme-plumbing"), "--since and --team scope"),
    (("acme-plumbing/main-line",), "needs --consumer"),
])
def test_options_that_do_not_go_together_are_a_usage_error(home: Path, candidate: Path, args, says) -> None:
    done = assay("rescore", *(a.format(candidate=candidate) for a in args), home=home, check=2)
    assert says in " ".join((done.stdout + done.stderr).split())
