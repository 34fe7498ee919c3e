"""When an exam no longer applies here: STALE, decided before any replay is spent, and never a failure.

An exam is stale when what it pins is gone or what its work runs on has moved:

- the pinned commit is not in the repository (history rewritten, a shallow clone);
- ``workspace.patch`` no longer applies to it;
- the toolchain its checks run on differs from the one it was distilled under, by :data:`TOOLCHAIN`: the
  operating system, Python's major and minor version, and the manifests and lock files at the pinned
  commit (which change only if the commit does).

The harness and the model are deliberately *not* staleness: a new harness version or model is exactly the
condition an exam is run to judge. They are reported as the run's conditions.
"""

from __future__ import annotations

import fnmatch
import tempfile
from collections.abc import Callable
from pathlib import Path

from assay.core.exam import Exam

from .exam_workspace import MANIFESTS, environment_fingerprint, git, has_commit

__all__ = ["TOOLCHAIN", "stale_reasons"]


def _same(was: str, now: str) -> bool:
    return was == now


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _same_minor(was: str, now: str) -> bool:
    return _minor(was) == _minor(now)


TOOLCHAIN: dict[str, tuple[Callable[[str, str], bool], str]] = {
    "os": (_same, "the operating system"),
    "python": (_same_minor, "Python (major.minor)"),
}
"""Fingerprint parts whose change makes an exam stale: part -> (still the same?, what it is)."""


def _patch_problem(repo: Path, commit: str, patch: Path) -> str | None:
    """Why ``patch`` does not apply to ``commit`` (checked in a scratch index: no worktree, nothing written)."""
    with tempfile.TemporaryDirectory(prefix="assay-stale-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        try:
            git(repo, "read-tree", commit, env=env)
            git(repo, "apply", "--cached", "--check", "--whitespace=nowarn", str(patch.resolve()), env=env)
        except RuntimeError as exc:
            return str(exc)
        return None


def stale_reasons(exam: Exam, repo: Path) -> list[str]:
    """Why ``exam`` no longer applies in ``repo``, one line each; empty when it applies."""
    spec, repo = exam.spec, Path(repo)
    commit = spec.workspace.commit
    if not has_commit(repo, commit):
        return [f"the pinned commit {commit[:12]} is not in {repo}: fetch it, or distil the exam again from a "
                "newer session"]
    reasons = []
    if exam.patch_path is not None and (problem := _patch_problem(repo, commit, exam.patch_path)):
        reasons.append(f"{exam.patch_path.name} no longer applies to {commit[:12]}: {problem}")
    was = spec.environment.parts
    _, now = environment_fingerprint(repo, commit, spec.runner.name, spec.runner.version)
    for part, (same, what) in TOOLCHAIN.items():
        if part in was and not same(was[part], now.get(part, "absent")):
            reasons.append(f"{what} was {was[part]} when the exam was distilled and is {now.get(part, 'absent')} now")
    for part in sorted(set(was) | set(now)):
        if any(fnmatch.fnmatchcase(part, m) for m in MANIFESTS) and was.get(part) != now.get(part):
            reasons.append(f"{part} at the pinned commit differs from the one the exam was distilled with")
    return reasons
