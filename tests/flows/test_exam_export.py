"""``assay export`` on a real exam directory in a real git repository: no planted secret leaves, the redacted
patch still applies at the pin, look-alikes survive, the Harbor task reads and its test.sh scores the work,
and the refusals say why. Also: the exam corpus's figures (every planted secret redacted, few look-alikes
changed)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

from assay.core.document_models import validate
from assay.core.errors import BundleError, NotFoundError, UsageError
from assay.core.exam import (ExamAssertion, ExamCaps, ExamEnvironment, ExamRunner, ExamSource, ExamSpec, ExamTools,
                             ExamWorkspace, load_exam, write_exam)  # fmt: skip
from assay.core.secrets import REDACTED
from assay.flows.exam_export import export_exam, redact_lines

from command_line import assay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from exam_secrets_corpus import LOOK_ALIKES, PLANTED, SECRETS  # noqa: E402

MAX_FALSE_POSITIVES = 1
"""Look-alikes in the exam corpus that redaction may change: at most 1 (5% of them); it changes none today."""

BUGGY, FIXED = "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"
CHECK = "python3 -c 'import calc; assert calc.add(2, 2) == 4'"
PATH = f"{Path(sys.executable).parent}:/usr/bin:/bin"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.invalid", *args], cwd=cwd,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout


def _added(diff: str) -> list[str]:
    return [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def _planted_lines(path: str) -> list[str]:
    return [line for p in PLANTED if p.text.startswith(f"diff --git a/{path} ") for line in _added(p.text)]


ENV_LINES = list(dict.fromkeys(_planted_lines(".env")))
CONFIG_LINES = _planted_lines("config.py")
KEY_LINES = _added(next(p.text for p in PLANTED if p.what.startswith("a private key block body line (rsa")))
LOOK_ALIKE_LINES = [line for a in LOOK_ALIKES if a.kind == "patch" for line in _added(a.text)]
INSTRUCTION = "Fix add() in calc.py.\n\n" + "\n\n".join(p.text for p in PLANTED if p.kind == "instruction") + "\n"
VERIFY = f"#!/usr/bin/env bash\nset -u\nexport API_TOKEN={SECRETS['exported']}\n{CHECK}\n"
COMMAND = f"PGPASSWORD={SECRETS['db_password']} {CHECK}"
SECRETS_HERE = sorted({p.secret for p in PLANTED if p.secret in "\n".join(
    [*ENV_LINES, *CONFIG_LINES, *KEY_LINES, INSTRUCTION, VERIFY, COMMAND])})  # fmt: skip


def _spec(slug: str, commit: str, patch: bool = True) -> ExamSpec:
    return ExamSpec(
        slug=slug, runner=ExamRunner(name="claude-code", version="2.0.14"), model="claude-sonnet-4-5",
        workspace=ExamWorkspace(commit=commit, patch="workspace.patch" if patch else None, untracked=(".env",)),
        environment=ExamEnvironment(fingerprint="sha256:" + "ab" * 32, parts={"python": "3.11.7", "git": "2.39.5"}),
        tools=ExamTools(allow=("Bash", "Edit", "Read")), caps=ExamCaps(max_turns=30, max_wall_seconds=900),
        source=ExamSource(session_id="9d2f6c1e-session", harness="claude-code"),
    )  # fmt: skip


def _command(status: str = "accepted") -> ExamAssertion:
    return ExamAssertion(key="adds-up", tier="outcome", check="command_passes", params={"command": COMMAND},
                         status=status, evidence=("Bash: python3 -c ... exit 0",))  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bytes]:
    """A repository with the bug committed and the person's uncommitted secrets on top: (repo, commit, patch)."""
    repo = tmp_path_factory.mktemp("export") / "acme-app"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text(BUGGY)
    (repo / "config.py").write_text("import os\n\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    (repo / ".env").write_text("\n".join(ENV_LINES) + "\n")
    (repo / "config.py").write_text("import os\n\n" + "\n".join(CONFIG_LINES) + "\n")
    (repo / "deploy").mkdir()
    (repo / "deploy" / "id_key").write_text("\n".join(KEY_LINES) + "\n")
    (repo / "lookalikes.txt").write_text("\n".join(LOOK_ALIKE_LINES) + "\n")
    _git(repo, "add", "-A")
    patch = subprocess.run(["git", "diff", "--cached", "--binary", commit], cwd=repo, capture_output=True,
                           check=True).stdout  # fmt: skip
    _git(repo, "reset", "-q")
    return repo, commit, patch


def _exam(repo: Path, commit: str, patch: bytes, slug: str = "fix-add", *, verify: str | None = VERIFY,
          assertions: list[ExamAssertion] | None = None) -> Path:
    return write_exam(repo / ".assay" / "exams" / slug, _spec(slug, commit), INSTRUCTION,
                      [_command()] if assertions is None else assertions, patch=patch, verify=verify)  # fmt: skip


def _snapshot(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _leaks(path: Path) -> list[tuple[str, str]]:
    """(file, secret) for every planted secret found anywhere under ``path`` (tar archives opened too)."""
    found = []
    for name, data in _snapshot(path).items():
        blobs = [data]
        if name.endswith(".tar"):
            with tarfile.open(path / name) as tar:
                blobs += [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]
        found += [(name, s) for s in SECRETS_HERE for blob in blobs if s.encode() in blob]
    return found


def test_the_exam_really_holds_the_planted_secrets(built) -> None:
    repo, commit, patch = built
    exam = _exam(repo, commit, patch, "holds-secrets")
    assert len(SECRETS_HERE) >= 15
    assert {s for _, s in _leaks(exam)} == set(SECRETS_HERE)  # the test would fail without redaction


def test_a_plain_export_redacts_every_secret_and_keeps_a_patch_that_applies(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    exam = _exam(repo, commit, patch, "plain")
    before = _snapshot(exam)
    result = export_exam(exam, tmp_path / "out")
    assert _snapshot(exam) == before  # the exam directory is only read
    assert result.path == tmp_path / "out" / "plain" and not result.harbor
    assert result.files == ("assertions.toml", "exam.toml", "instruction.md", "verify.sh", "workspace.patch")
    assert _leaks(result.path) == []
    assert load_exam(result.path).spec == load_exam(exam).spec

    redacted = (result.path / "workspace.patch").read_text()
    assert all(f"+{line}" in redacted for line in LOOK_ALIKE_LINES)  # ordinary code survives unchanged
    assert len(redacted.splitlines()) == len(patch.decode().splitlines())
    worktree = tmp_path / "at-pin"
    _git(repo, "worktree", "add", "-q", "--detach", str(worktree), commit)
    check = subprocess.run(["git", "apply", "--check", str(result.path / "workspace.patch")], cwd=worktree,
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 0, check.stderr

    counts = result.counts()
    assert set(counts) == {"assertions.toml", "instruction.md", "verify.sh", "workspace.patch"}
    assert counts["workspace.patch"] >= len(ENV_LINES) + len(CONFIG_LINES)
    patch_lines = redacted.splitlines()
    for item in (r for r in result.redactions if r.file == "workspace.patch"):
        assert REDACTED in patch_lines[item.line - 1] and patch_lines[item.line - 1][0] == "+"
    rules = {r.rule for r in result.redactions}
    assert {"aws access key id", "github token", "slack token", "stripe key", "private key block", "url password",
            "jwt", "openai/anthropic key", "named value", "password in prose"} <= rules  # fmt: skip
    assert not any(s in repr(result) for s in SECRETS_HERE)
    assert tomllib.loads((result.path / "assertions.toml").read_text())["assertion"][0]["params"]["command"] == (
        f"PGPASSWORD={REDACTED} {CHECK}")


def test_an_existing_export_is_refused_and_left_alone(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    exam = _exam(repo, commit, patch, "twice")
    first = export_exam(exam, tmp_path)
    kept = _snapshot(first.path)
    with pytest.raises(UsageError, match="exists and is not empty"):
        export_exam(exam, tmp_path)
    with pytest.raises(UsageError, match="exists and is not empty"):
        export_exam(exam, tmp_path, harbor=True, repo=repo)
    assert _snapshot(first.path) == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["twice"]  # no temporary directory left behind


def _harbor(repo: Path, commit: str, patch: bytes, out: Path, slug: str, **options) -> Path:
    return export_exam(_exam(repo, commit, patch, slug, **options), out, harbor=True, repo=repo).path


def _score(task: Path, workspace: Path, logs: Path, *, fixed: bool = False) -> str:
    """Build the workspace as the Dockerfile does (then fix the bug when ``fixed``), run the task's test.sh in
    it: the reward written."""
    workspace.mkdir()
    with tarfile.open(task / "environment" / "workspace.tar") as tar:
        tar.extractall(workspace, filter="data")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-qm", "pin")
    _git(workspace, "apply", str(task / "environment" / "workspace.patch"))
    if fixed:
        (workspace / "calc.py").write_text(FIXED)
    done = subprocess.run(["bash", str(task / "tests" / "test.sh")], cwd=workspace, capture_output=True, text=True,
                          env={"PATH": PATH, "HARBOR_LOGS_DIR": str(logs)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return (logs / "verifier" / "reward.txt").read_text().strip()


def test_a_harbor_task_reads_and_its_test_scores_the_work(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    task = _harbor(repo, commit, patch, tmp_path / "out", "harbor-verify")
    assert sorted(str(p.relative_to(task)) for p in task.rglob("*") if p.is_file()) == [
        "environment/Dockerfile", "environment/workspace.patch", "environment/workspace.tar", "instruction.md",
        "task.toml", "tests/test.sh", "tests/verify.sh"]  # fmt: skip
    assert _leaks(task) == []
    config = tomllib.loads((task / "task.toml").read_text())
    assert config["schema_version"] == "1.1"
    assert config["task"] == {"name": "assay/harbor-verify", "description": "Fix add() in calc.py."}
    assert config["metadata"]["tool_allowlist"] == ["Bash", "Edit", "Read"]
    assert config["metadata"]["model"] == "claude-sonnet-4-5" and config["metadata"]["harness_version"] == "2.0.14"
    assert config["metadata"]["environment_fingerprint"] == "sha256:" + "ab" * 32
    assert config["metadata"]["source_session_id"] == "9d2f6c1e-session" and config["metadata"]["max_turns"] == 30
    assert "no reference solution" in config["metadata"]["solution"]
    assert config["agent"]["timeout_sec"] == 900.0 and config["verifier"]["timeout_sec"] > 0
    assert config["environment"]["allow_internet"] is False and config["environment"]["memory_mb"] > 0
    dockerfile = (task / "environment" / "Dockerfile").read_text()
    assert dockerfile.splitlines()[1] == "FROM python:3.11-slim"
    assert "git apply" in dockerfile and "ADD workspace.tar" in dockerfile
    assert not (task / "solution").exists()
    assert _score(task, tmp_path / "unfixed", tmp_path / "logs-unfixed") == "0"
    assert _score(task, tmp_path / "fixed", tmp_path / "logs-fixed", fixed=True) == "1"


def test_without_verify_the_harbor_test_runs_the_accepted_commands(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    task = _harbor(repo, commit, patch, tmp_path / "out", "harbor-commands", verify=None)
    assert not (task / "tests" / "verify.sh").exists()
    assert f"PGPASSWORD={REDACTED} {CHECK}" in (task / "tests" / "test.sh").read_text()
    assert _leaks(task) == []
    assert _score(task, tmp_path / "unfixed", tmp_path / "logs-unfixed") == "0"
    assert _score(task, tmp_path / "fixed", tmp_path / "logs-fixed", fixed=True) == "1"


def test_harbor_refusals_say_why(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    unchecked = _exam(repo, commit, patch, "no-check", verify=None, assertions=[_command("draft")])
    with pytest.raises(BundleError, match="needs a check"):
        export_exam(unchecked, tmp_path, harbor=True, repo=repo)
    other = tmp_path / "other-repo"
    other.mkdir()
    _git(other, "init", "-q")
    with pytest.raises(NotFoundError, match=f"no commit '{commit}'"):
        export_exam(_exam(repo, commit, patch, "elsewhere"), tmp_path, harbor=True, repo=other)
    with pytest.raises(UsageError, match="--repo"):
        export_exam(repo / ".assay" / "exams" / "elsewhere", tmp_path, harbor=True)
    assert list(tmp_path.iterdir()) == [other]


def test_the_command_prints_what_it_wrote_and_a_document(built, tmp_path: Path) -> None:
    repo, commit, patch = built
    _exam(repo, commit, patch, "by-cli")
    home = tmp_path / "home"
    document = json.loads(assay("export", "by-cli", "--repo", str(repo), "--out", str(tmp_path / "out"), "--json",
                                home=home).stdout)  # fmt: skip
    validate(document)
    assert document["schema"] == "assay.export" and document["exam"] == "by-cli" and document["harbor"] is False
    assert document["redacted"]["workspace.patch"] == sum(r["file"] == "workspace.patch"
                                                          for r in document["redactions"])  # fmt: skip
    shown = assay("export", "by-cli", "--repo", str(repo), "--out", str(tmp_path / "task"), "--harbor", home=home)
    assert "exported a Harbor task by-cli" in shown.stdout and "tests/test.sh" in shown.stdout
    assert f"environment/workspace.patch: {document['redacted']['workspace.patch']} span(s) redacted" in shown.stdout
    assert not any(s in shown.stdout + json.dumps(document) for s in SECRETS_HERE)
    again = assay("export", "by-cli", "--repo", str(repo), "--out", str(tmp_path / "out"), home=home, check=2)
    assert "exists and is not empty" in again.stderr


def test_the_corpus_secrets_are_all_redacted_and_few_look_alikes_change() -> None:
    assert len(PLANTED) >= 50 and {p.kind for p in PLANTED} == {"patch", "instruction", "script"}
    missed = [p.what for p in PLANTED if p.secret in redact_lines(p.text, patch=p.kind == "patch")[0]]
    assert missed == []
    changed = [a.what for a in LOOK_ALIKES if redact_lines(a.text, patch=a.kind == "patch")[0] != a.text]
    assert len(changed) <= MAX_FALSE_POSITIVES, changed


def test_a_redacted_patch_keeps_its_shape() -> None:
    diff = next(p for p in PLANTED if p.what.startswith("a private key block body line")).text
    out, found = redact_lines(diff, patch=True)
    assert [line[:1] for line in out.splitlines()] == [line[:1] for line in diff.splitlines()]
    assert out.splitlines()[:6] == diff.splitlines()[:6]  # headers untouched
    assert [line for line in out.splitlines()[6:]] == [f"+{REDACTED}"] * (len(diff.splitlines()) - 6)
    assert {rule for _, rule in found} == {"private key block"}
