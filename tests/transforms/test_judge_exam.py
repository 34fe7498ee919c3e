"""exam.*: a coding-agent replay judged from its case run's artefact (probes, files changed, session summary).

Each mechanism is met, not met and undetermined on hand-made artefacts (the engine and the row-wise reference
must agree on every one); the glob matcher is held to examples and to the reference's own matcher; and one
replay with the fake headless harness, good and regressed, is judged end to end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_kit import (CASE_RUN_SCHEMA, EVERYTHING, GOOD_PROBES, SESSION, assignment, case_run, frames, judged, one,
                       probe, result)
from judge_kit import replay as artefact
from reference_exam import glob_match

import assay.fakes
from assay.adapters.runners.claude_code import ClaudeCodeHarness
from assay.adapters.runners.harness import replay
from assay.core.evidence import CaseRun, Report
from assay.core.exam import (Exam, ExamAssertion, ExamCaps, ExamEnvironment, ExamRunner, ExamSource, ExamSpec,
                             ExamTools, ExamWorkspace, load_exam, write_exam)
from assay.core.mechanisms import ValidationError, validate_params
from assay.core.session import Session, SessionToolCall
from assay.transforms.judge import evaluate
from assay.transforms.mechanisms.exam import NOT_CALIBRATED
from assay.transforms.mechanisms.exam_artefact import glob_regex

EXAM_PROJECT = Path(assay.fakes.__file__).parent / "exam_project"
EV = "assay:exam"
NOT_RUN = "the runner did not run the exam's outcome probes"
BAD = [probe("command_passes", False, command="make test", exit_code=1, output="1 failed"),
       probe("file_changed", False, path="pricing.py", output="deleted"),
       probe("file_contains", False, path="NOTES.md", text="half a cent", output="no such file"),
       probe("verify", False, command="verify.sh", exit_code=1)]
UNTOLD = [probe("command_passes", None, command="make test", output="running\n[stopped after 600 s]"),
          probe("verify", None, command="verify.sh", exit_code=2),
          probe("file_changed", None, path="../x", output="the path leaves the workspace")]


def judge(artefact: Any, mechanism: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return one(case_run(artefact=artefact), mechanism, params)


def test_command_passes() -> None:
    params = {"command": "make test"}
    assert judge(artefact(), "exam.command_passes", params) == result(True, 0.0, None, EV)
    assert judge(artefact(BAD), "exam.command_passes", params) == result(False, 1.0, "`make test` exited 1", EV)
    assert judge(artefact(UNTOLD), "exam.command_passes", params) == result(
        None, None, "`make test` did not finish: [stopped after 600 s]", EV)
    assert judge(artefact(), "exam.command_passes", {"command": "npm test"}) == result(
        None, None, f"no probe ran `npm test`: {NOT_RUN}", EV)
    skipped = "no outcome probe ran: the harness failed before doing anything (boom)"
    assert judge(artefact([], probes_skipped=skipped), "exam.command_passes", params) == result(None, None, skipped, EV)


def test_verify() -> None:
    assert judge(artefact(), "exam.verify") == result(True, 0.0, None, EV)
    assert judge(artefact(BAD), "exam.verify") == result(False, 1.0, "verify.sh exited 1: the work does not hold", EV)
    assert judge(artefact(UNTOLD), "exam.verify") == result(None, 2.0, "verify.sh exited 2: the check itself failed", EV)
    assert judge(artefact(GOOD_PROBES[:3]), "exam.verify") == result(
        None, None, f"no probe ran verify.sh: the exam has none, or {NOT_RUN}", EV)


def test_file_changed_matches_the_path_as_given_or_normalised() -> None:
    for path in ("pricing.py", "./pricing.py", "src/../pricing.py"):
        assert judge(artefact(), "exam.file_changed", {"path": path}) == result(True, None, None, EV)
    assert judge(artefact(BAD), "exam.file_changed", {"path": "pricing.py"}) == result(
        False, None, 'the work left "pricing.py" deleted', EV)
    assert judge(artefact(UNTOLD), "exam.file_changed", {"path": "../x"}) == result(
        None, None, 'no verdict on "../x": the path leaves the workspace', EV)
    assert judge(artefact(), "exam.file_changed", {"path": "setup.cfg"}) == result(
        None, None, f'no probe checked "setup.cfg": {NOT_RUN}', EV)


def test_file_contains_matches_path_and_text() -> None:
    params = {"path": "NOTES.md", "text": "half a cent"}
    assert judge(artefact(), "exam.file_contains", params) == result(True, None, None, EV)
    assert judge(artefact(BAD), "exam.file_contains", params) == result(
        False, None, '"NOTES.md" does not contain "half a cent" (no such file)', EV)
    assert judge(artefact(), "exam.file_contains", {"path": "NOTES.md", "text": "rounds up"}) == result(
        None, None, f'no probe looked for "rounds up" in "NOTES.md": {NOT_RUN}', EV)


@pytest.mark.parametrize("pattern,inside,outside", [
    ("src/pricing.py", ["src/pricing.py"], ["src/pricing.pyc", "pricing.py", "lib/src/pricing.py", "src/pricingXpy"]),
    ("src/**", ["src/a.py", "src/a/b/c.py"], ["src", "srcs/a.py", "lib/src/a.py"]),
    ("src/*.py", ["src/a.py", "src/.py"], ["src/a/b.py", "src/a.pyc", "a.py"]),
    ("**/test_*.py", ["test_a.py", "tests/test_a.py", "a/b/test_.py"], ["tests/a_test.py", "tests/test_a/x.py"]),
    ("src/**/b.py", ["src/b.py", "src/a/b.py", "src/a/c/b.py"], ["src/ab.py", "b.py"]),
    ("**", ["a", "a/b/c"], []),
    ("docs/*", ["docs/a.md"], ["docs/a/b.md"]),
    ("a+b (1)[x]$.py", ["a+b (1)[x]$.py"], ["aab (1)x$.py"]),
    ("ünï/*.md", ["ünï/ß.md"], ["uni/a.md"]),
])
def test_the_glob_matcher(pattern: str, inside: list[str], outside: list[str]) -> None:
    paths = inside + outside
    engine = pl.Series(paths, dtype=pl.String).str.contains(glob_regex(pattern)).to_list()
    assert engine == [p in inside for p in paths]
    assert [glob_match(pattern, p) for p in paths] == engine
    assert [re.search(glob_regex(pattern), p) is not None for p in paths] == engine


def test_files_within() -> None:
    params = {"allow": ["pricing.py", "src/**"]}
    assert judge(artefact(changed=["pricing.py", "src/a/b.py"]), "exam.files_within", params) == result(True, 0.0, None, EV)
    assert judge(artefact(changed=[]), "exam.files_within", params) == result(True, 0.0, None, EV)
    many = ["setup.cfg", "pricing.py", "README.md", "docs/x.md", "lib/y.py"]
    assert judge(artefact(changed=many), "exam.files_within", params) == result(
        False, 4.0, '4 changed file(s) outside "pricing.py", "src/**": setup.cfg, README.md, docs/x.md and 1 more', EV)
    deleted = artefact()
    deleted["workspace"]["files_changed"] = [{"status": "deleted", "path": "setup.cfg"}]
    assert judge(deleted, "exam.files_within", params)["reason"] == '1 changed file(s) outside "pricing.py", "src/**": setup.cfg'
    unlisted = artefact()
    del unlisted["workspace"]["files_changed"]
    assert judge(unlisted, "exam.files_within", params) == result(
        None, None, "the replay's artefact does not list the files changed", EV)


def test_cap() -> None:
    assert judge(artefact(), "exam.cap", {"measure": "turns", "max": 6}) == result(True, 6.0, None, EV)
    assert judge(artefact(), "exam.cap", {"measure": "cost_usd", "max": 0.01}) == result(
        False, 0.02, "the replay's cost (USD) exceeded the cap of 0.01", EV)
    assert judge(artefact(), "exam.cap", {"measure": "wall_seconds", "max": 10})["reason"] == (
        "the replay's wall time (seconds) exceeded the cap of 10")
    no_transcript = artefact(session={"transcript": False, "cost_usd": None, "wall_seconds": 3})
    assert judge(no_transcript, "exam.cap", {"measure": "turns", "max": 6}) == result(
        None, None, "the replay recorded no turns: it kept no transcript", EV)
    assert judge(no_transcript, "exam.cap", {"measure": "cost_usd", "max": 1}) == result(
        None, None, "the replay recorded no cost: the harness reported none", EV)


def test_band_is_undetermined_until_calibrated() -> None:
    assert judge(artefact(), "exam.band", {"measure": "turns", "k": 3}) == result(None, None, NOT_CALIBRATED, EV)
    calibrated = {"measure": "turns", "k": 2, "center": 5, "spread": 0.5}
    assert judge(artefact(), "exam.band", calibrated) == result(True, 6.0, None, EV)
    assert judge(artefact(session={**SESSION, "turns": 7}), "exam.band", calibrated) == result(
        False, 7.0, "the replay's turns is outside the calibrated band [4, 6]", EV)
    assert judge(artefact(session={**SESSION, "turns": 3}), "exam.band", calibrated)["met"] is False
    with pytest.raises(ValidationError, match="give center and spread together"):
        validate_params("exam.band", {"measure": "turns", "k": 2, "center": 5})


def test_profile_is_always_met_and_records_the_measure() -> None:
    assert judge(artefact(), "exam.profile", {"measure": "reads_before_first_write"}) == result(True, 2.0, None, EV)
    assert judge(artefact(), "exam.profile", {"measure": "tool_mix"}) == result(True, 3.0, None, EV)
    assert judge(artefact(session={"transcript": False}), "exam.profile", {"measure": "tool_mix"}) == result(
        True, None, None, EV)


@pytest.mark.parametrize("artefact,reason", [
    (None, "the case run has no artefact"),
    ("{not json", "the case run's artefact is not valid JSON"),
    ('{"workspace": {}, "session": {"cost_usd": NaN}}', "the case run's artefact is not valid JSON"),
    ("[1, 2]", "the case run's artefact is not a JSON object"),
    ({"prompt": "a compiled config"}, "the case run's artefact has no workspace: it is not a replay's"),
])
def test_an_unreadable_artefact_leaves_every_workspace_check_undetermined(artefact: Any, reason: str) -> None:
    for mechanism, params in [("exam.command_passes", {"command": "make test"}), ("exam.verify", {}),
                              ("exam.file_changed", {"path": "a.py"}), ("exam.file_contains", {"path": "a", "text": "b"}),
                              ("exam.files_within", {"allow": ["**"]})]:
        assert judge(artefact, mechanism, params) == result(None, None, reason, EV)


def test_a_missing_session_summary_leaves_the_session_checks_undetermined() -> None:
    reason = "the case run's artefact has no session summary: it is not a replay's"
    for mechanism, params in [("exam.cap", {"measure": "turns", "max": 1}), ("exam.profile", {"measure": "tool_mix"}),
                              ("exam.band", {"measure": "turns", "k": 1, "center": 1, "spread": 1})]:
        assert judge({"workspace": artefact()["workspace"]}, mechanism, params) == result(None, None, reason, EV)
    mistyped = '{"workspace": {}, "session": {"turns": true, "cost_usd": "1", "wall_seconds": 1e999, "tool_mix": []}}'
    assert judge(mistyped, "exam.cap", {"measure": "turns", "max": 1}) == result(
        None, None, "the replay recorded no turns", EV)
    assert judge(mistyped, "exam.cap", {"measure": "wall_seconds", "max": 1})["reason"] == "the replay recorded no wall time"
    assert judge(mistyped, "exam.profile", {"measure": "tool_mix"}) == result(True, None, None, EV)


def test_case_runs_sharing_an_artefact_are_read_once_and_answered_each() -> None:
    good, bad = artefact(), artefact(BAD)
    runs = [case_run(f"c{k}", artefact=good if k % 2 else bad) for k in range(6)]
    case_runs, evaluations, todo = frames(runs, [assignment("exam.verify", {}, f"c{k}") for k in range(6)])
    got = evaluate(case_runs, evaluations, todo, EVERYTHING).sort("case_run_id")
    assert got["met"].to_list() == [False, True, False, True, False, True]


def _call(n: int, name: str, **arguments: Any) -> SessionToolCall:
    return SessionToolCall(call_id=f"t{n}", name=name, input=arguments, status="ok", turn=n)


def test_reads_before_the_first_write_are_counted_from_the_session() -> None:
    calls = (_call(0, "read", path="a.py"), _call(1, "shell", command="ls"), _call(2, "read", path="b.py", limit=10),
             _call(3, "patch", input="*** Update File: a.py\n-x\n+y\n"), _call(4, "read", path="a.py"))
    session = Session(session_id="s", harness="h", tool_calls=calls, files_read=("a.py", "b.py"),
                      files_written=("a.py",))
    def reads(tool_calls: tuple) -> int:
        return len(session.model_copy(update={"tool_calls": tool_calls}).reads_before_first_write()[0])

    assert session.reads_before_first_write() == (("t0", "t2"), "t3")
    edit = _call(5, "edit", path="a.py", old="x", new="y")
    assert reads((calls[0], edit, *calls[1:])) == 1
    assert reads(calls[:3] + calls[4:]) == 3


# ------------------------------------------------------------------------------------- a real replay

TEST_COMMAND = "python -m pytest -q"
REPLAY_CHECKS = [("exam.command_passes", {"command": TEST_COMMAND}), ("exam.verify", {}),
                 ("exam.file_changed", {"path": "./pricing.py"}),
                 ("exam.file_contains", {"path": "pricing.py", "text": "ROUND_HALF_UP"}),
                 ("exam.files_within", {"allow": ["pricing.py"]}), ("exam.cap", {"measure": "turns", "max": 20}),
                 ("exam.cap", {"measure": "cost_usd", "max": 5}), ("exam.cap", {"measure": "wall_seconds", "max": 600}),
                 ("exam.profile", {"measure": "reads_before_first_write"}), ("exam.profile", {"measure": "tool_mix"}),
                 ("tool.called", {"tool": "Edit"}), ("tool.not_called", {"tool": "Write"})]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout


def _exam(tmp: Path, commit: str) -> Exam:
    spec = ExamSpec(
        slug="fix-rounding", runner=ExamRunner(name="claude-code", version="2.1.3"), model="sonnet",
        workspace=ExamWorkspace(commit=commit), environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
        tools=ExamTools(allow=("Bash", "Edit", "Read")), caps=ExamCaps(),
        source=ExamSource(session_id="0b7c5e0e-4d0e-4a57-9a39-2f0c8a1d9e11", harness="claude-code"))
    assertions = [
        ExamAssertion(key="passes", tier="outcome", check="command_passes", params={"command": TEST_COMMAND},
                      status="accepted"),
        ExamAssertion(key="fix-in-pricing", tier="outcome", check="file_changed", params={"path": "./pricing.py"},
                      status="accepted"),
        ExamAssertion(key="rounds-up", tier="outcome", check="file_contains",
                      params={"path": "pricing.py", "text": "ROUND_HALF_UP"}, status="accepted"),
        ExamAssertion(key="verified", tier="outcome", check="verify", status="accepted"),
    ]
    verify = "#!/bin/sh\npython -m pytest -q tests/test_pricing.py >/dev/null 2>&1 || exit 1\n"
    return load_exam(write_exam(tmp / "exams" / "fix-rounding", spec, "fix the rounding in pricing.py", assertions,
                                verify=verify))


def _row(case: CaseRun, case_run_id: str) -> dict[str, Any]:
    """The case run as the lake stores it (the runner's report), with its id and runner."""
    stored = pl.from_arrow(Report.from_case_runs(case_run_id, [case]).case_runs).row(0, named=True)
    return {**{name: stored.get(name) for name in CASE_RUN_SCHEMA}, "case_run_id": case_run_id, "runner": "r"}


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The sample project replayed with the fake headless harness, good then regressed: their case runs' rows."""
    tmp = tmp_path_factory.mktemp("replay")
    repo = tmp / "shop"
    shutil.copytree(EXAM_PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "shop pricing")
    exam = _exam(tmp, _git(repo, "rev-parse", "HEAD").strip())
    (tmp / "bin").mkdir()
    (tmp / "bin" / "claude").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay.fakes.harness "$@"\n')
    (tmp / "bin" / "claude").chmod(0o755)
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith(("ASSAY_FAKE_HARNESS_", "ASSAY_CLAUDE_BIN", "CLAUDE_", "PYTEST_"))}
    env = {**inherited, "PATH": os.pathsep.join([str(tmp / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]]),
           "HOME": str(tmp), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    rows = []
    for mode, harness_mode in (("good", "good"), ("regressed", "regress:1.0")):
        mode_env = {**env, "ASSAY_FAKE_HARNESS_MODE": harness_mode}
        done = replay(exam, repo, ClaudeCodeHarness(environ=mode_env), parent=tmp / "worktrees", env=mode_env,
                      replay_name=mode)
        assert done.outcome.status == "executed", done.outcome.error
        rows.append(_row(done.case_run("fix-rounding", mode), mode))
    return rows


def test_a_real_replay_is_judged_from_its_case_run(replayed: list[dict[str, Any]]) -> None:
    todo = [assignment(m, p, row["case_run_id"], assertion_id=f"a{k:02d}")
            for k, (m, p) in enumerate(REPLAY_CHECKS) for row in replayed]
    got = judged(replayed, todo)
    results = {(r["case_run_id"], int(r["assertion_id"][1:])): r for r in got.iter_rows(named=True)}
    for k, (mechanism, _) in enumerate(REPLAY_CHECKS):
        assert results[("good", k)]["met"] is True, (mechanism, results[("good", k)]["reason"])
    assert results[("good", 8)]["value"] == 2.0  # read pricing.py and the tests, then the edit
    assert results[("good", 9)]["value"] == 3.0  # Read, Bash, Edit
    assert results[("regressed", 0)]["met"] is False
    assert results[("regressed", 0)]["reason"] == f"`{TEST_COMMAND}` exited 1"
    assert results[("regressed", 1)]["reason"] == "verify.sh exited 1: the work does not hold"
    assert (results[("regressed", 4)]["met"], results[("regressed", 4)]["reason"]) == (
        False, '1 changed file(s) outside "pricing.py": setup.cfg')
    assert results[("regressed", 8)]["value"] == 1.0  # read pricing.py, then the edit
