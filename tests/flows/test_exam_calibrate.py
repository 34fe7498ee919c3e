"""Calibrating an exam with the fake harness in real git repositories: a good exam reproduces every time and its
bands are set; an exam that regresses in exactly half its replays is flaky, its failing assertions counted; a
harness that always crashes leaves the exam in error with nothing written; an exam with drafts, or a stale one,
is refused before any replay runs. The command prints the figures and writes a document that validates."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from assay.adapters.runners.harness import HARNESSES, harness_for
from assay.core.document_models import validate
from assay.core.errors import ConfigError, NotFoundError
from assay.core.exam import ASSERTIONS_FILE, EXAM_FILE, load_exam, write_assertions
from assay.core.exam_checks import mechanism_for
from assay.core.toml_write import toml_dumps
from assay.flows.exam_calibrate import CALIBRATION_FILE, calibrate
from assay.transforms.stats import wilson_lower, wilson_upper

from command_line import assay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import reviewed_exam  # noqa: E402

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
SLUG = "half-cent"


@pytest.fixture(scope="module")
def distilled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A repository the fake harness fixed the bug in, and its exam, reviewed: (repo, exam dir, the fake's wrapper)."""
    return reviewed_exam(tmp_path_factory.mktemp("calibrate"), SLUG)


@pytest.fixture
def exam(distilled: tuple[Path, Path, Path], tmp_path: Path) -> Path:
    """A fresh copy of the reviewed exam (calibrating writes into it)."""
    return Path(shutil.copytree(distilled[1], tmp_path / "exams" / SLUG))


def environment(fake: Path, tmp_path: Path, mode: str = "good") -> dict[str, str]:
    """The harness's environment: the fake as the harness, replays counted in ``tmp_path/state``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "CLAUDE_", "PYTEST_"))}
    (tmp_path / "state").mkdir(exist_ok=True)
    return {**inherited, "ASSAY_CLAUDE_BIN": str(fake), "ASSAY_FAKE_HARNESS_MODE": mode,
            "ASSAY_FAKE_HARNESS_STATE": str(tmp_path / "state"), "HOME": str(tmp_path / "home"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


COUNTED = "flaky:0.5"
"""A mode whose replays the fake counts (``replays.jsonl`` in its state folder): none may run when refused."""


def replays_run(tmp_path: Path) -> list[dict]:
    log = tmp_path / "state" / "replays.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def command_key(exam_dir: Path) -> str:
    (key,) = [a.key for a in load_exam(exam_dir).assertions if a.check == "command_passes"]
    return key


def test_a_good_exam_reproduces_every_time_and_its_bands_are_set(distilled, exam: Path, tmp_path: Path) -> None:
    repo, _, fake = distilled
    before = load_exam(exam)
    done = calibrate(exam, repo, 3, environ=environment(fake, tmp_path), parallel=2)
    assert (done.state, done.n, done.reproduced, done.errored, done.rate) == ("reproducible", 3, 3, 0, 1.0)
    assert done.upper == 1.0 and done.lower == pytest.approx(3 / (3 + 1.644854**2), abs=1e-6)
    assert done.failing == {} and done.undetermined == {} and done.errors == []
    assert done.cost_mean and done.cost_mean > 0 and done.cost_median and done.turns and done.turns.min > 0
    assert done.wall_seconds and done.wall_seconds.min <= done.wall_seconds.median <= done.wall_seconds.max
    assert (done.harness, done.fingerprint) == ("claude-code", before.spec.environment.fingerprint)
    assert done.written == [CALIBRATION_FILE, ASSERTIONS_FILE]

    after = {a.key: a for a in load_exam(exam).assertions}
    assert [b.key for b in done.bands] == ["band-cost-usd", "band-turns"]
    for band in done.bands:
        assertion = after[band.key]
        assert assertion.status == "accepted" and f"calibrated from 3 replays on {done.when[:10]}" in assertion.note
        assert assertion.params == {"measure": band.measure, "k": 3.0, "center": band.center, "spread": band.spread}
        assert band.spread >= 0.01 * band.center > 0
        assert band.within == 3  # the band check now evaluates, and the replays it came from lie within it
        assert mechanism_for("band", assertion.params)[1]["center"] == band.center
    assert done.bands[1].center == done.turns.median
    unchanged = [a for a in before.assertions if a.check != "band"]
    assert unchanged == [a for a in load_exam(exam).assertions if a.check != "band"]

    written = tomllib.loads((exam / CALIBRATION_FILE).read_text())
    assert (written["schema"], written["revision"], written["state"]) == ("assay.exam.calibration", 1, "reproducible")
    assert written["harness"]["name"] == "claude-code" and written["fingerprint"] == done.fingerprint
    assert {k: written["figures"][k] for k in ("n", "reproduced", "errored", "rate")} == {
        "n": 3, "reproduced": 3, "errored": 0, "rate": 1.0}
    assert written["bands"]["band-turns"] == {"measure": "turns", "center": done.turns.median,
                                              "spread": done.bands[1].spread}


def test_an_exam_that_regresses_half_the_time_is_flaky(distilled, exam: Path, tmp_path: Path) -> None:
    repo, _, fake = distilled
    done = calibrate(exam, repo, 4, environ=environment(fake, tmp_path, "flaky:0.5"), parallel=2)
    assert Counter(r["steps"] for r in replays_run(tmp_path)) == {"good": 2, "regressed": 2}
    assert (done.state, done.reproduced, done.errored, done.rate) == ("flaky", 2, 0, 0.5)
    assert done.upper == pytest.approx(wilson_upper(2, 4)) and done.upper < 0.95
    assert done.lower == pytest.approx(wilson_lower(2, 4))
    assert done.failing == {command_key(exam): 2, "files-within": 2, "verify_sh": 2}
    written = tomllib.loads((exam / CALIBRATION_FILE).read_text())
    assert written["state"] == "flaky" and written["failing"] == done.failing
    assert all(b.within == 2 for b in done.bands)  # bands come from the reproduced replays only


def test_a_harness_that_always_crashes_leaves_the_exam_in_error_with_nothing_written(distilled, exam: Path,
                                                                                     tmp_path: Path) -> None:
    repo, _, fake = distilled
    assertions = (exam / ASSERTIONS_FILE).read_bytes()
    done = calibrate(exam, repo, 3, environ=environment(fake, tmp_path, "crash"), parallel=3)
    assert (done.state, done.n, done.errored, done.reproduced, done.rate, done.upper) == ("error", 3, 3, 0, None,
                                                                                          None)
    assert len(done.errors) == 3 and all("the harness crashed" in e for e in done.errors)
    assert done.written == [] and done.bands == [] and not (exam / CALIBRATION_FILE).exists()
    assert (exam / ASSERTIONS_FILE).read_bytes() == assertions


def test_an_exam_with_drafts_is_refused_before_any_replay(distilled, exam: Path, tmp_path: Path) -> None:
    repo, _, fake = distilled
    assertions = list(load_exam(exam).assertions)
    assertions[0] = assertions[0].model_copy(update={"status": "draft"})
    write_assertions(exam / ASSERTIONS_FILE, assertions)
    with pytest.raises(ConfigError, match=rf"1 draft assertion\(s\) not yet reviewed: {assertions[0].key}"):
        calibrate(exam, repo, 3, environ=environment(fake, tmp_path, COUNTED))
    assert replays_run(tmp_path) == [] and not (exam / CALIBRATION_FILE).exists()


def test_a_stale_exam_is_refused_with_its_reasons(distilled, exam: Path, tmp_path: Path) -> None:
    repo, _, fake = distilled
    spec = tomllib.loads((exam / EXAM_FILE).read_text())
    spec["environment"]["parts"]["python"] = "2.7.18"
    (exam / EXAM_FILE).write_text(toml_dumps(spec))
    with pytest.raises(ConfigError, match="calibrating a stale exam measures nothing") as refused:
        calibrate(exam, repo, 3, environ=environment(fake, tmp_path, COUNTED))
    assert "Python (major.minor) was 2.7.18" in str(refused.value)
    assert replays_run(tmp_path) == [] and not (exam / CALIBRATION_FILE).exists()


def test_the_harness_adapter_is_picked_by_name() -> None:
    assert set(HARNESSES) == {"claude-code", "codex", "command"}
    assert harness_for("command", {"ASSAY_EXAM_COMMAND": "true"}).name == "command"
    assert harness_for("codex", {}).name == "codex"
    with pytest.raises(NotFoundError, match="known harnesses: claude-code, codex, command"):
        harness_for("no-such-harness", {})


def test_the_command_prints_the_figures_and_writes_a_document(distilled, exam: Path, tmp_path: Path) -> None:
    repo, _, fake = distilled
    env = {k: v for k, v in environment(fake, tmp_path, "flaky:0.5").items() if k.startswith(("ASSAY_", "PYTEST_"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path / "home"))
    home = tmp_path / "assay-home"
    shown = assay("calibrate", str(exam), "-n", "4", "--repo", str(repo), "--parallel", "2", home=home, extra_env=env)
    out = shown.stdout
    assert f"{SLUG}: 2 of 4 replays reproduced (0.50; 95% Wilson 0.18-0.82); 0 errored; $0.0" in out
    assert " a replay; flaky\n" in out
    assert "quarantined" in out and "failed: verify_sh in 2 of 4 replays" in out
    assert f"failed: {command_key(exam)} in 2 of 4 replays" in out and f"wrote {CALIBRATION_FILE}" in out

    env["ASSAY_FAKE_HARNESS_MODE"] = "good"
    document = json.loads(assay("calibrate", str(exam), "-n", "3", "--repo", str(repo), "--json", home=home,
                                extra_env=env).stdout)
    validate(document)
    jsonschema.Draft202012Validator(json.loads((SCHEMAS / "assay.calibrate.json").read_text())).validate(document)
    assert (document["schema"], document["state"], document["reproduced"]) == ("assay.calibrate", "reproducible", 3)
    assert [b["within"] for b in document["bands"]] == [3, 3]
    refused = assay("calibrate", "no-such-exam", "-n", "3", "--repo", str(repo), home=home, extra_env=env, check=1)
    assert "no exam 'no-such-exam'" in refused.stderr
