"""STALE before any replay: the pinned commit gone, the patch no longer applying, the operating system or
Python's minor version moved, a manifest at the pin differing; a new harness version or a Python patch release
is not staleness (it is a condition to judge)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from assay.adapters.capture import find_session, read_session
from assay.core.exam import load_exam, write_exam
from assay.flows.exam_distil import distil
from assay.flows.exam_stale import stale_reasons

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import worked_repo  # noqa: E402


@pytest.fixture(scope="module")
def exam_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A repository with an exam distilled from a session the fake harness ran: (repo, exam dir)."""
    repo, home, session_id = worked_repo(tmp_path_factory.mktemp("stale"))
    ref = find_session(repo, session_id, {"HOME": str(home)})
    return repo, distil(read_session(Path(ref.path)), repo, slug="half-cent")


def _variant(exam_dir: Path, tmp_path: Path, *, parts: dict[str, str] | None = None, commit: str | None = None,
             runner_version: str | None = None) -> Path:
    """A copy of the exam with its spec edited."""
    exam = load_exam(exam_dir)
    spec = exam.spec
    if parts is not None:
        spec = spec.model_copy(update={"environment": spec.environment.model_copy(
            update={"parts": {**spec.environment.parts, **parts}})})
    if commit is not None:
        spec = spec.model_copy(update={"workspace": spec.workspace.model_copy(update={"commit": commit})})
    if runner_version is not None:
        spec = spec.model_copy(update={"runner": spec.runner.model_copy(update={"version": runner_version})})
    patch = exam.patch_path.read_bytes() if exam.patch_path else None
    return write_exam(tmp_path / spec.slug, spec, exam.instruction, list(exam.assertions), patch=patch,
                      verify=exam.verify_path.read_text() if exam.verify_path else None)


def test_a_fresh_exam_applies(exam_repo) -> None:
    repo, exam_dir = exam_repo
    assert stale_reasons(load_exam(exam_dir), repo) == []


def test_a_new_harness_or_a_python_patch_release_is_not_stale(exam_repo, tmp_path: Path) -> None:
    repo, exam_dir = exam_repo
    python = load_exam(exam_dir).spec.environment.parts["python"]
    major, minor, *_ = python.split(".")
    moved = _variant(exam_dir, tmp_path, parts={"python": f"{major}.{minor}.999"}, runner_version="9.9.9")
    assert stale_reasons(load_exam(moved), repo) == []


def test_the_toolchain_moving_is_stale_and_named(exam_repo, tmp_path: Path) -> None:
    repo, exam_dir = exam_repo
    moved = _variant(exam_dir, tmp_path, parts={"python": "2.7.18", "os": "plan9-mips", "setup.cfg": "sha256:" + "0" * 64})
    reasons = stale_reasons(load_exam(moved), repo)
    assert len(reasons) == 3, reasons
    assert any("Python (major.minor) was 2.7.18" in r for r in reasons)
    assert any("operating system was plan9-mips" in r for r in reasons)
    assert any(r.startswith("setup.cfg at the pinned commit differs") for r in reasons)


def test_a_missing_commit_or_a_patch_that_no_longer_applies_is_stale(exam_repo, tmp_path: Path) -> None:
    repo, exam_dir = exam_repo
    gone = _variant(exam_dir, tmp_path / "gone", commit="f" * 40)
    assert stale_reasons(load_exam(gone), repo) == [
        f"the pinned commit ffffffffffff is not in {repo}: fetch it, or distil the exam again from a newer session"]
    broken = _variant(exam_dir, tmp_path / "broken")
    patch = broken / "workspace.patch"
    patch.write_text("diff --git a/pricing.py b/pricing.py\n--- a/pricing.py\n+++ b/pricing.py\n@@ -1,1 +1,1 @@\n"
                     "-this line is not in the file\n+nor is this one\n")
    reasons = stale_reasons(load_exam(broken), repo)
    assert len(reasons) == 1 and reasons[0].startswith("workspace.patch no longer applies to"), reasons
    assert "patch does not apply" in reasons[0]
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert len(listed.splitlines()) == 1  # checked without a worktree
    assert tomllib.loads((exam_dir / "exam.toml").read_text())["workspace"]["commit"] != "f" * 40
