"""An exam as a Harbor (terminal-bench 2) task directory, for :func:`.exam_export.export_exam`.

The task::

    instruction.md              the exam's instruction
    task.toml                   name and description, timeouts, resources, no internet; [metadata] carries
                                what Harbor has no field for (tool allowlist, model, harness, fingerprint,
                                source session, caps)
    environment/Dockerfile      python of the fingerprint's version, git, the workspace at the pinned
                                commit (workspace.tar, from ``git archive``) with workspace.patch applied
    tests/test.sh               runs the exam's check from the workspace root and writes 1 or 0 to
                                ``${HARBOR_LOGS_DIR:-/logs}/verifier/reward.txt``
    tests/verify.sh             the exam's verify.sh (absent when the check is its command_passes assertions)

There is no ``solution/``: an exam keeps no reference solution. :func:`harbor_task` builds the files from
the exam as it is; the export redacts them before anything is written.
"""

from __future__ import annotations

import re
from pathlib import Path

from assay.core.errors import BundleError, NotFoundError
from assay.core.exam import ASSERTIONS_FILE, Exam
from assay.core.toml_write import toml_dumps

from .exam_workspace import git, has_commit

__all__ = ["HARBOR_PATCH", "HARBOR_SCHEMA_VERSION", "harbor_task"]

HARBOR_SCHEMA_VERSION = "1.1"
HARBOR_PATCH = "environment/workspace.patch"
WORKSPACE = "/workspace"
DEFAULT_PYTHON = "3.11"
DEFAULT_AGENT_SECONDS = 1800
VERIFIER_SECONDS = 600
CPUS, MEMORY_MB = 2, 4096


def _workspace_tar(exam: Exam, repo: Path) -> bytes:
    """``git archive`` of the exam's pinned commit in ``repo``; :class:`NotFoundError` when it is not there."""
    commit = exam.spec.workspace.commit
    if not has_commit(repo, commit):
        raise NotFoundError("commit", commit, f"the exam is pinned to it and {repo} does not have it: fetch it, or "
                                              "give the repository that has it (--repo)")  # fmt: skip
    try:
        return git(repo, "archive", "--format=tar", commit)
    except RuntimeError as exc:
        raise NotFoundError("commit", commit, str(exc)) from None


def _python_version(exam: Exam) -> str:
    found = re.match(r"(\d+)\.(\d+)", exam.spec.environment.parts.get("python", ""))
    return f"{found.group(1)}.{found.group(2)}" if found else DEFAULT_PYTHON


def _dockerfile(exam: Exam) -> str:
    commit = exam.spec.workspace.commit
    lines = [
        f"# The workspace of exam {exam.spec.slug}: commit {commit[:12]}, then the uncommitted state it started from.",
        f"FROM python:{_python_version(exam)}-slim",
        "RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*",
        f"WORKDIR {WORKSPACE}",
        f"ADD workspace.tar {WORKSPACE}/",
        "RUN git init -q && git add -A && git -c user.name=assay -c user.email=assay@example.invalid "
        f"commit -qm 'workspace at {commit[:12]}'",
    ]
    if exam.patch_path is not None:
        lines += ["COPY workspace.patch /tmp/workspace.patch",
                  "RUN git apply --whitespace=nowarn /tmp/workspace.patch && rm /tmp/workspace.patch"]
    return "\n".join(lines) + "\n"


_TEST_HEAD = """#!/usr/bin/env bash
# Does the work this task asks for hold? Runs the exam's check from the workspace root (the current
# directory) and writes 1 (it holds) or 0 to the verifier's reward file.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
logs="${HARBOR_LOGS_DIR:-/logs}/verifier"
mkdir -p "$logs"
"""


def _test_script(exam: Exam) -> str:
    """``tests/test.sh``: verify.sh when the exam has one, else each accepted ``command_passes`` command."""
    if exam.verify_path is not None:
        body = ('bash "$here/verify.sh"\nstatus=$?\n'
                'if [ "$status" -gt 1 ]; then echo "verify.sh could not check the work (exit $status)" >&2; fi\n'
                'if [ "$status" -eq 0 ]; then reward=1; else reward=0; fi\n')  # fmt: skip
    else:
        commands = [(a.key, a.params["command"]) for a in exam.assertions
                    if a.check == "command_passes" and a.status == "accepted"]  # fmt: skip
        if not commands:
            raise BundleError(str(exam.path / ASSERTIONS_FILE), [("", "a Harbor task needs a check: the exam has no "
                              "verify.sh and no accepted command_passes assertion; add one (assay review) first")])
        body = "reward=1\n" + "".join(f"# assertion {key}\n( {command}\n) || reward=0\n" for key, command in commands)
    return _TEST_HEAD + body + 'echo "$reward" > "$logs/reward.txt"\n'


def _description(instruction: str) -> str:
    first = next((line.strip().lstrip("#").strip() for line in instruction.splitlines() if line.strip()), "")
    return first if len(first) <= 200 else first[:197] + "..."


def _task_toml(exam: Exam) -> str:
    spec = exam.spec
    caps = spec.caps
    metadata = {
        "source": "assay export", "exam": spec.slug, "harness": spec.runner.name,
        "harness_version": spec.runner.version, "model": spec.model, "tool_allowlist": list(spec.tools.allow),
        "environment_fingerprint": spec.environment.fingerprint, "workspace_commit": spec.workspace.commit,
        "source_session_id": spec.source.session_id, "max_turns": caps.max_turns,
        "max_budget_usd": caps.max_budget_usd, "max_wall_seconds": caps.max_wall_seconds,
        "solution": "none: an exam keeps no reference solution file",
    }  # fmt: skip
    document = {
        "schema_version": HARBOR_SCHEMA_VERSION,
        "task": {"name": f"assay/{spec.slug}", "description": _description(exam.instruction)},
        "metadata": metadata,
        "verifier": {"timeout_sec": float(VERIFIER_SECONDS)},
        "agent": {"timeout_sec": float(caps.max_wall_seconds or DEFAULT_AGENT_SECONDS)},
        "environment": {"build_timeout_sec": 600.0, "cpus": CPUS, "memory_mb": MEMORY_MB, "allow_internet": False},
    }
    return toml_dumps(document)


def harbor_task(exam: Exam, repo: Path) -> tuple[dict[str, bytes], dict[str, int]]:
    """The Harbor task's files for ``exam`` (path in the task -> bytes) and their permission bits, not yet
    redacted. ``repo`` must hold the exam's pinned commit (:class:`NotFoundError` otherwise); an exam with
    neither verify.sh nor an accepted ``command_passes`` assertion is refused (:class:`BundleError`)."""
    test_script = _test_script(exam)
    files = {
        "instruction.md": exam.instruction.encode("utf-8"),
        "task.toml": _task_toml(exam).encode("utf-8"),
        "environment/Dockerfile": _dockerfile(exam).encode("utf-8"),
        "environment/workspace.tar": _workspace_tar(exam, Path(repo)),
        "tests/test.sh": test_script.encode("utf-8"),
    }
    if exam.patch_path is not None:
        files[HARBOR_PATCH] = exam.patch_path.read_bytes()
    if exam.verify_path is not None:
        files["tests/verify.sh"] = exam.verify_path.read_bytes()
    modes = {name: 0o755 if name.endswith(".sh") else 0o644 for name in files}
    return files, modes
