"""The proof, end to end at the command line, with the fake harness in real git repositories and worktrees.

One exam, distilled from a real (fake-harness) session and reviewed, is administered under conditions that
must each come out as their verdict, with its exit code:

- healthy: PASS on a clean first batch (exit 0), every replay in the record;
- degraded, regressing 30 % of the time: caught blind as FAIL by the escalated series (exit 80), with the
  receipts of each failed replay;
- the same with a budget too small for the sequential test: drift suspected (exit 81);
- flaky at 50 %: calibration quarantines it, and the run reports FLAKY without spending a replay (exit 0);
- a moved pin: STALE before any replay (exit 0; 83 with --strict-stale), and a regression elsewhere wins;
- a crashing harness: ERROR (exit 82), never a FAIL.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.adapters.runners.exam_runner import replays_parent
from assay.core.document_models import validate
from assay.core.exam import EXAM_FILE, load_exam

from command_line import assay
from test_exam_calibrate import environment, replays_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import reviewed_exam  # noqa: E402

SLUG = "half-cent"


@pytest.fixture(scope="module")
def exam_replays(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """What every test here replays, many times, in worktrees: a repository whose exam is distilled and
    reviewed, and the fake harness's wrapper (repo, wrapper)."""
    repo, _, fake = reviewed_exam(tmp_path_factory.mktemp("proof"), SLUG)
    return repo, fake


@pytest.fixture
def repo(exam_replays: tuple[Path, Path], tmp_path: Path) -> Path:
    """A copy of the repository and its exam, for a test to change."""
    return Path(shutil.copytree(exam_replays[0], tmp_path / "shop", symlinks=True))


def administer(repo: Path, tmp_path: Path, fake: Path, mode: str, *args: str, code: int) -> dict:
    """``assay ARGS --repo REPO --json`` under the fake harness in ``mode``: the ``assay.exams`` document."""
    env = environment(fake, tmp_path, mode)
    done = assay(*args, "--repo", str(repo), "--json", home=tmp_path / "assay-home", check=code, extra_env=env)
    body = json.loads(done.stdout)
    validate(body)
    assert body["schema"] == "assay.exams" and body["code"] == code
    return body


def test_a_healthy_condition_passes_on_a_clean_first_batch(exam_replays, repo: Path, tmp_path: Path) -> None:
    body = administer(repo, tmp_path, exam_replays[1], "good", "ci", "--condition", "baseline", code=0)
    (exam,) = body["exams"]
    assert (exam["verdict"], exam["how"], exam["code"]) == ("pass", "held", 0)
    assert exam["counts"] == {"replays": 5, "held": 5, "failed": 0, "errored": 0}
    assert exam["condition"]["name"] == "baseline" and exam["condition"]["harness"] == "claude-code"
    assert exam["condition"]["harness_versions"] == ["2.1.3"]
    assert exam["cost_usd"] > 0 and set(exam["spread"]) == {"cost_usd", "turns", "wall_seconds"}
    assert exam["adapters"] and all(a["guarantees"] for a in exam["adapters"])
    assert body["excluded"] == [] and exam["receipts"] == []
    # the replays are case runs of the record: the ordinary commands read them
    verdicts = json.loads(assay("verdicts", exam["run_id"], "--json", home=tmp_path / "assay-home").stdout)
    (gate,) = [v for v in verdicts["verdicts"] if v["consumer"] == "exam_gate"]
    assert gate["verdict"] == "pass" and gate["series"][0]["runs"] == 5


def test_worktrees_a_dead_run_left_are_swept_at_start_up(exam_replays, repo: Path, tmp_path: Path) -> None:
    first = administer(repo, tmp_path, exam_replays[1], "good", "ci", code=0)["exams"][0]["run_id"]
    dead, foreign = replays_parent(first), replays_parent(f"not-a-run-{tmp_path.name}")
    for folder in (dead, foreign):  # as a replay killed with its process leaves them
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(folder / "left"), "HEAD"], cwd=repo, check=True)
    try:
        administer(repo, tmp_path, exam_replays[1], "good", "ci", code=0)
        listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
        assert str(dead) not in listed and not dead.exists()  # a final run's: swept
        assert str(foreign / "left") in listed  # a run this workspace does not know: left alone
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(foreign / "left")], cwd=repo)
        shutil.rmtree(foreign, ignore_errors=True)


def test_a_degraded_condition_is_caught_blind_as_fail_with_receipts(exam_replays, repo: Path, tmp_path: Path) -> None:
    body = administer(repo, tmp_path, exam_replays[1], "regress:0.3", "ci", "--condition", "degraded", code=80)
    (exam,) = body["exams"]
    # replays 4, 7 and 10 regress (the fake spreads 30 % evenly); the sequential test flags at the tenth
    assert (exam["verdict"], exam["how"], exam["at"]) == ("fail", "sequential", 10)
    assert exam["counts"] == {"replays": 10, "held": 7, "failed": 3, "errored": 0}
    assert sorted(r["replay"] for r in exam["receipts"]) == ["replay-0004", "replay-0007", "replay-0010"]
    assert all(r["failed"] and all(f["key"] and f["reason"] for f in r["failed"]) for r in exam["receipts"])
    assert [r["steps"] for r in replays_run(tmp_path)].count("regressed") == 3


def test_a_budget_spent_before_the_test_decides_is_drift(exam_replays, repo: Path, tmp_path: Path) -> None:
    body = administer(repo, tmp_path, exam_replays[1], "regress:0.3", "run", SLUG, "--budget", "6", code=81)
    (exam,) = body["exams"]
    assert (exam["verdict"], exam["how"]) == ("drift", "undecided") and exam["counts"]["replays"] == 6
    assert "drift" in exam["reason"]


def test_a_flaky_exam_is_quarantined_by_calibration_and_not_replayed(exam_replays, repo: Path, tmp_path: Path) -> None:
    env = environment(exam_replays[1], tmp_path, "flaky:0.5")
    calibrated = assay("calibrate", SLUG, "-n", "4", "--repo", str(repo), "--json", home=tmp_path / "assay-home",
                       extra_env=env)
    assert json.loads(calibrated.stdout)["state"] == "flaky"
    spent = len(replays_run(tmp_path))
    body = administer(repo, tmp_path, exam_replays[1], "flaky:0.5", "run", SLUG, code=0)
    (exam,) = body["exams"]
    assert exam["verdict"] == "flaky" and exam["calibration"]["reproduced"] == 2 and exam["run_id"] is None
    assert body["excluded"] == [{"exam": SLUG, "verdict": "flaky", "why": exam["reason"]}]
    assert len(replays_run(tmp_path)) == spent  # quarantined: not a replay spent


def _move_pin(repo: Path, slug: str = SLUG) -> None:
    path = repo / ".assay" / "exams" / slug / EXAM_FILE
    text = path.read_text()
    commit = load_exam(path.parent).spec.workspace.commit
    path.write_text(text.replace(commit, "0" * 40))


def test_a_moved_pin_is_stale_and_counts_only_when_asked(exam_replays, repo: Path, tmp_path: Path) -> None:
    _move_pin(repo)
    body = administer(repo, tmp_path, exam_replays[1], "good", "run", SLUG, code=0)
    (exam,) = body["exams"]
    assert exam["verdict"] == "stale" and "pinned commit" in exam["stale"][0] and exam["run_id"] is None
    assert replays_run(tmp_path) == []
    strict = administer(repo, tmp_path, exam_replays[1], "good", "run", SLUG, "--strict-stale", code=83)
    assert strict["exams"][0]["code"] == 83


def test_a_regression_outranks_a_stale_exam(exam_replays, repo: Path, tmp_path: Path) -> None:
    exams = repo / ".assay" / "exams"
    shutil.copytree(exams / SLUG, exams / "half-cent-copy")
    text = (exams / "half-cent-copy" / EXAM_FILE).read_text()
    (exams / "half-cent-copy" / EXAM_FILE).write_text(text.replace(f'slug = "{SLUG}"', 'slug = "half-cent-copy"'))
    _move_pin(repo, "half-cent-copy")
    body = administer(repo, tmp_path, exam_replays[1], "regress:0.3", "ci", "--strict-stale", code=80)
    assert {e["exam"]: e["verdict"] for e in body["exams"]} == {SLUG: "fail", "half-cent-copy": "stale"}
    assert body["counts"]["fail"] == 1 and body["counts"]["stale"] == 1


def test_a_crashing_harness_is_error_never_fail(exam_replays, repo: Path, tmp_path: Path) -> None:
    body = administer(repo, tmp_path, exam_replays[1], "crash", "run", SLUG, code=82)
    (exam,) = body["exams"]
    assert exam["verdict"] == "error" and exam["counts"]["errored"] == exam["counts"]["replays"] == 5
    assert exam["errors"] and body["excluded"][0]["verdict"] == "error"


def test_an_exam_with_drafts_is_refused_before_anything_runs(exam_replays, repo: Path, tmp_path: Path) -> None:
    path = repo / ".assay" / "exams" / SLUG / "assertions.toml"
    path.write_text(path.read_text().replace('status = "accepted"', 'status = "draft"', 1))
    done = assay("run", SLUG, "--repo", str(repo), home=tmp_path / "assay-home", check=1,
                 extra_env=environment(exam_replays[1], tmp_path, "good"))
    assert "assay review" in done.stderr and replays_run(tmp_path) == []


def test_the_judge_sees_only_replays_whose_cheaper_tiers_held_and_never_decides(exam_replays, repo: Path,
                                                                               tmp_path: Path) -> None:
    from assay.core.exam import ASSERTIONS_FILE, ExamAssertion, write_assertions
    from assay.fakes.serve import running, settings_env

    exam_dir = repo / ".assay" / "exams" / SLUG
    rubric = ExamAssertion(key="does-what-was-asked", tier="judged", check="rubric", status="accepted",
                           params={"text": "The agent fixed the rounding and touched nothing else."})
    write_assertions(exam_dir / ASSERTIONS_FILE, [*load_exam(exam_dir).assertions, rubric])
    with running() as fakes:
        judge = {k: v for k, v in settings_env(fakes).items() if k.startswith("ASSAY_JUDGE_")}
        env = environment(exam_replays[1], tmp_path, "regress:0.3") | judge
        done = assay("ci", "--repo", str(repo), "--json", home=tmp_path / "assay-home", check=80, extra_env=env)
    (exam,) = json.loads(done.stdout)["exams"]
    assert (exam["verdict"], exam["at"]) == ("fail", 10)  # as without the rubric: it never decides
    assert exam["diagnostics"][rubric.key] == {"met": 7, "not_met": 0, "undetermined": 3}
    shown = assay("show", exam["receipts"][0]["case_run_id"], "--json", home=tmp_path / "assay-home",
                  extra_env=env)
    assert "not shown to the judge: a cheaper tier already failed" in shown.stdout
