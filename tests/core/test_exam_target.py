"""A suite may target an exam directory: the digest of its files, and what reading a bundle makes of the target
(stored as repository, directory, harness and digest; drafts, misplaced or broken exams refused with the fix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.core.bundle import validate_bundle
from assay.core.errors import BundleError
from assay.core.exam import (
    ASSERTIONS_FILE, EXAM_FILE, ExamAssertion, ExamEnvironment, ExamRunner, ExamSource, ExamSpec, ExamWorkspace,
    exam_digest, write_assertions, write_exam,
)  # fmt: skip

SLUG = "greet"
ACCEPTED = ExamAssertion(key="greeted", tier="outcome", check="file_changed", params={"path": "greeting.txt"},
                         status="accepted")


def _exam(repo: Path, slug: str = SLUG, *, verify: str | None = None) -> Path:
    spec = ExamSpec(slug=slug, runner=ExamRunner(name="command"), workspace=ExamWorkspace(commit="a" * 40),
                    environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
                    source=ExamSource(session_id="s-1", harness="command"))
    return write_exam(repo / ".assay" / "exams" / slug, spec, "Say hello.\n", [ACCEPTED], verify=verify)


def _bundle(target: dict[str, Any], repeat: dict[str, int] | None = None) -> dict[str, Any]:
    suite = {"key": "main", "name": "Main", "target": target, "cases": ["greet"]}
    return {"schema": "assay.bundle/v1", "teams": [{
        "id": "team", "name": "Team", "suites": [suite | ({"repeat": repeat} if repeat else {})],
        "cases": [{"key": "greet", "title": "Greet", "situation": {"caller": "an agent", "wants": "a greeting"}}]}]}


def test_the_digest_covers_the_exam_files_and_nothing_else(tmp_path: Path) -> None:
    exam = _exam(tmp_path)
    digest = exam_digest(exam)
    assert digest.startswith("sha256:") and len(digest) == 7 + 64
    assert exam_digest(exam) == digest
    (exam / "calibration.toml").write_text("state = 'healthy'\n")
    assert exam_digest(exam) == digest
    (exam / "verify.sh").write_text("#!/bin/sh\nexit 0\n")
    with_verify = exam_digest(exam)
    assert with_verify != digest
    write_assertions(exam / ASSERTIONS_FILE, [ACCEPTED.model_copy(update={"note": "edited"})])
    assert exam_digest(exam) not in (digest, with_verify)
    assert exam_digest(_exam(tmp_path / "elsewhere", verify="#!/bin/sh\nexit 0\n")) == with_verify


def test_an_exam_target_is_stored_as_its_repository_directory_harness_and_digest(tmp_path: Path) -> None:
    exam = _exam(tmp_path)
    bundle = validate_bundle(_bundle({"exam": f".assay/exams/{SLUG}"}, repeat={"count": 5, "budget": 60}),
                             str(tmp_path / "bundle.yaml"))
    resolved = bundle.teams[0].suites[0].resolved_target
    assert resolved.kind == "exam" == bundle.teams[0].suites[0].target.kind
    assert resolved.target == {"exam": {"repo": str(tmp_path.resolve()), "dir": f".assay/exams/{SLUG}",
                                        "harness": "command", "sha256": exam_digest(exam)}}


def _problems(raw: dict[str, Any], tmp_path: Path) -> str:
    with pytest.raises(BundleError) as refused:
        validate_bundle(raw, str(tmp_path / "bundle.yaml"))
    return str(refused.value)


def test_a_draft_exam_is_refused_with_the_review_command(tmp_path: Path) -> None:
    exam = _exam(tmp_path)
    write_assertions(exam / ASSERTIONS_FILE, [ACCEPTED.model_copy(update={"status": "draft"})])
    said = _problems(_bundle({"exam": f".assay/exams/{SLUG}"}), tmp_path)
    assert "teams[0].suites[0].target.exam" in said and "1 draft assertion(s)" in said
    assert f"assay review {exam.resolve()}" in said


def test_broken_misplaced_and_doubled_exam_targets_are_refused(tmp_path: Path) -> None:
    exam = _exam(tmp_path)
    (exam / EXAM_FILE).write_text("schema = 'assay.exam'\n")
    said = _problems(_bundle({"exam": f".assay/exams/{SLUG}"}), tmp_path)
    assert "is not a valid exam" in said and "required field is missing" in said

    loose = _exam(tmp_path / "loose")
    (tmp_path / "exams").mkdir()
    moved = loose.rename(tmp_path / "exams" / SLUG)
    said = _problems(_bundle({"exam": "exams/greet"}), tmp_path)
    assert f"{moved} is not in a repository's .assay/exams/ folder" in said

    said = _problems(_bundle({"exam": f".assay/exams/{SLUG}/{EXAM_FILE}"}), tmp_path)
    assert "is not a directory; an exam target names the exam's directory" in said
    said = _problems(_bundle({"exam": "../elsewhere"}), tmp_path)
    assert "leads outside the bundle's folder through '..'" in said
    said = _problems(_bundle({"exam": f".assay/exams/{SLUG}", "config": "config.json"}), tmp_path)
    assert "exactly one of 'config'" in said and "found config and exam" in said
    said = _problems(_bundle({"exam": f".assay/exams/{SLUG}", "tool_mocks": {}}), tmp_path)
    assert "'tool_mocks' answer the tool calls" in said
