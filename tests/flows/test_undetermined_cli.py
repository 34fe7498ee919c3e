"""Through the real CLI: criteria that allow one undetermined result show the real failure of a night whose
call set holds one hung-up call, and a stricter candidate (allowance 0) turns it back into ``error``."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from command_line import assay

from assay.core.settings import Settings
from assay.flows.workspace import open_workspace
from assay.storage.lake import manifest

HUNG_UP = "the case run did not execute: telephony: caller hung up"
SUITE = "northside-hvac/recorded-calls"

BUNDLE = """\
schema: assay.bundle/v1
consumers:
  - key: nightly_sweep
teams:
  - id: northside-hvac
    name: Northside Heating & Cooling
    cases:
      - {key: out-of-area, title: Caller outside the area, situation: {caller: Dana, wants: a repair}}
      - {key: no-heat, title: No heat, situation: {caller: Harold, wants: his furnace fixed}}
      - {key: leaky-tap, title: Leaky tap, situation: {caller: Aisha, wants: a plumber}}
    suites:
      - key: recorded-calls
        name: Recorded calls
        target: {call_set: calls.jsonl}
        cases: [out-of-area, no-heat, leaky-tap]
        assertions:
          - key: greets_by_name
            mechanism: transcript.contains
            params: {text: Northside, role: agent}
        criteria:
          nightly_sweep:
            required: [greets_by_name]
            allow_undetermined: {count: 1}
"""


def _call(n: int, case: str, said: str, **extra: str) -> str:
    return json.dumps({"call_id": f"call-{n}", "case": case, "started_at": f"2026-11-20T1{n}:00:00Z",
                       "duration_ms": 9000, "transcript": [{"role": "agent", "text": said, "t": 0.0}],
                       "tool_calls": [], "evaluations": [], **extra})


CALLS = "\n".join([
    _call(1, "out-of-area", "Northside Heating, this is Sam."),
    _call(2, "no-heat", "Hello, who is this?"),  # the real failure: no greeting by name
    _call(3, "leaky-tap", "Northside", error="telephony: caller hung up"),  # did not execute
]) + "\n"


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A workspace with the bundle loaded and one run of the call set; the home and the run id."""
    root = tmp_path_factory.mktemp("undetermined")
    (root / "bundle.yaml").write_text(BUNDLE)
    (root / "calls.jsonl").write_text(CALLS)
    home = root / "home"
    assay("init", home=home)
    assay("load", str(root / "bundle.yaml"), home=home)
    assay("run", SUITE, home=home)
    runs = json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"]
    assert [r["status"] for r in runs] == ["completed"]
    return home, runs[0]["run_id"]


def _words(text: str) -> str:
    return " ".join(text.split())


def test_verdicts_show_the_real_failure_and_what_was_excluded(night: tuple[Path, str]) -> None:
    home, run = night
    doc = json.loads(assay("verdicts", run, "--json", home=home).stdout)
    [v] = doc["verdicts"]
    want = (f"required greets_by_name not met in 1 of 3 case runs; 2 of 3 case runs counted; "
            f"1 undetermined result excluded (allowed: 1), e.g. {HUNG_UP}")
    assert (v["stamped"], v["verdict"], v["reason"]) == ("fail", "fail", want)
    shown = assay("verdicts", run, home=home, columns=80).stdout
    assert all(len(line) <= 80 for line in shown.splitlines())
    assert "fail     fail" in shown and want in _words(shown)


def test_a_stricter_rescore_shows_error_and_the_flip(night: tuple[Path, str]) -> None:
    home, run = night
    stricter = home.parent / "stricter.yaml"
    stricter.write_text("required: [greets_by_name]\nallow_undetermined: {count: 0}\n")
    doc = json.loads(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--spec", str(stricter), "--json",
                           home=home).stdout)
    why = f"1 counted result could not be determined; more than the 0 allowed, e.g. {HUNG_UP}"
    assert [(r["run_id"], r["verdict"], r["reason"]) for r in doc["runs"]] == [(run, "error", why)]
    assert [(f["run_id"], f["stamped"], f["verdict"]) for f in doc["flips"]] == [(run, "fail", "error")]
    shown = _words(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--spec", str(stricter), home=home,
                         columns=80).stdout)
    assert "1 run(s) flip against their stamped verdict" in shown and ": fail -> error (1 counted result" in shown


def test_rescoring_the_stored_criteria_from_the_lake_state_agrees_with_verdicts(night: tuple[Path, str]) -> None:
    home, run = night
    doc = json.loads(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--json", home=home).stdout)
    verdict = json.loads(assay("verdicts", run, "--json", home=home).stdout)["verdicts"][0]
    assert doc["spec"]["allow_undetermined"] == {"count": 1} and doc["flips"] == []
    assert [(r["verdict"], r["reason"]) for r in doc["runs"]] == [(verdict["verdict"], verdict["reason"])]


def test_plan_calls_a_changed_allowance_a_rescore(night: tuple[Path, str]) -> None:
    home, _ = night
    revised = home.parent / "revised.yaml"  # next to the call set: the target is the same file
    revised.write_text(BUNDLE.replace("allow_undetermined: {count: 1}", "allow_undetermined: {ratio: 0.5}"))
    doc = json.loads(assay("plan", str(revised), "--json", home=home).stdout)
    [suite] = doc["suites"]
    assert doc["changes"] == [f"+ {SUITE}: criteria nightly_sweep v2"]
    assert suite["tier"] == "re-score" and [c["tier"] for c in suite["consumers"]] == ["re-score"]
    assert json.loads(assay("plan", str(home.parent / "bundle.yaml"), "--json", home=home).stdout)[
        "suites"][0]["tier"] == "none"


def _as_summarised_before_v2(home: Path) -> None:
    """Rewrite the lake's ``run_key_counts`` as an earlier build left them: no undetermined case runs, no
    reasons, no case-run count (what its v1 files read as, or become when compacted)."""
    ws = open_workspace(Settings(home=home))
    old = ws.lake.live("run_key_counts")
    rows = ws.lake.read("run_key_counts")
    staged = [ws.lake.stage("run_key_counts", part.drop("team_id", "date").with_columns(
        null_case_runs=None, null_reason=None, case_runs=None), team_id=team, date=day)
        for (team, day), part in rows.partition_by("team_id", "date", as_dict=True).items()]
    with ws.engine.begin() as conn:
        assert manifest.retire(conn, [path for path, _ in old], by="test", now=datetime.now(UTC)) == len(old)
        ws.lake.commit(conn, staged, origin="compaction", ref="test")
    assert ws.lake.read("run_key_counts")["case_runs"].null_count() == rows.height > 0
    ws.close()


def test_counts_summarised_before_v2_are_not_trusted_the_atoms_decide(night: tuple[Path, str], tmp_path: Path) -> None:
    home, run = night
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    _as_summarised_before_v2(copy)
    doc = json.loads(assay("rescore", SUITE, "--consumer", "nightly_sweep", "--json", home=copy).stdout)
    want = (f"required greets_by_name not met in 1 of 3 case runs; 2 of 3 case runs counted; "
            f"1 undetermined result excluded (allowed: 1), e.g. {HUNG_UP}")
    assert [(r["run_id"], r["verdict"], r["reason"]) for r in doc["runs"]] == [(run, "fail", want)]
