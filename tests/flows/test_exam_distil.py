"""Bless, distil and review, on a real git repository with a person's uncommitted work and a session's changes."""

from __future__ import annotations

import os
import subprocess
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from assay.core.errors import ConfigError, NotFoundError, UsageError
from assay.core.exam import load_exam, unreviewed
from assay.core.session import CommandRun, Session, SessionToolCall, SessionTurn, is_test_command
from assay.flows.exam_distil import bless, distil
from assay.flows.exam_review import require_reviewed, review
from assay.flows.exam_workspace import environment_fingerprint

TESTS = "python3 -m unittest discover -s tests -t . -q"
SMOKE = "python3 -m unittest tests.test_smoke -q"
BUGGY = "def total(cents):\n    return round(cents / 100, 1)\n"
FIXED = "def total(cents):\n    return round(cents / 100, 2)\n"


def sh(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


def git(cwd: Path, *args: str) -> str:
    done = sh(cwd, "git", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but git's own and the ignored ``.env``, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts and p.name != ".env"}  # fmt: skip


def make_repo(root: Path) -> Path:
    """A committed project, then the person's uncommitted work: a changed, a staged, a deleted and untracked files."""
    repo = root / "acme-app"
    (repo / "tests").mkdir(parents=True)
    files = {"pricing.py": BUGGY, "tests/__init__.py": "", "README.md": "# Acme\n", "old.txt": "old\n",
             "tests/test_pricing.py": "import unittest\nfrom pricing import total\n\n\nclass T(unittest.TestCase):\n"
                                      "    def test_cents(self):\n        self.assertEqual(total(1999), 19.99)\n",
             "tests/test_smoke.py": "import unittest\n\n\nclass S(unittest.TestCase):\n    def test_ok(self):\n"
                                    "        pass\n",
             "pyproject.toml": "[project]\nname = 'acme'\n", ".gitignore": ".env\n__pycache__/\n"}  # fmt: skip
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "start")
    (repo / "README.md").write_text("# Acme\n\nWork in progress: café ☕\n")
    (repo / "config.ini").write_text("[a]\nb = 1\n")
    git(repo, "add", "config.ini")
    (repo / "old.txt").unlink()
    (repo / "notes").mkdir()
    (repo / "notes" / "todo list.md").write_text("- ship it\n")
    (repo / "data.bin").write_bytes(bytes(range(256)) * 4)
    (repo / ".env").write_text("TOKEN=not-in-the-patch\n")
    return repo


def agent_writes(repo: Path) -> None:
    (repo / "pricing.py").write_text(FIXED)
    (repo / "tests" / "test_rounding.py").write_text("import unittest\n")
    (repo / "src" / "billing").mkdir(parents=True)
    for name in "abcd":
        (repo / "src" / "billing" / f"{name}.py").write_text(f"{name} = 1\n")


def call(call_id: str, name: str, turn: int, agent_id: str | None = None, exit_code: int | None = None,
         writes: tuple[str, ...] = (), **input) -> SessionToolCall:
    return SessionToolCall(call_id=call_id, name=name, input=input, status="ok", output="done", turn=turn,
                           agent_id=agent_id, exit_code=exit_code, writes=writes)  # fmt: skip


def make_session(repo: Path) -> Session:
    start = datetime(2026, 11, 3, 9, 0, tzinfo=UTC)
    r = str(repo)
    turns = [
        ("user", "Fix the rounding in pricing so totals show cents.\nThe invoice shows 19.9.", ()),
        ("assistant", "I'll look at the code.", ("c0", "c1", "c2")),
        ("user", "", ("c0", "c1", "c2")),
        ("assistant", "Two ways:\n1. Fix the rounding in pricing.py only\n2. Rewrite pricing with Decimal\n"
                      "Which do you prefer?", ()),
        ("user", "1", ()),
        ("assistant", "Doing that.", ("c3",)),
        ("user", "", ("c3",)),
        ("assistant", "Fixed. Should I also add a regression test?", ()),
        ("user", "yes", ()),
        ("assistant", "", ("c4", "c5", "c6", "c7", "c8", "c9")),
        ("user", "2", ("c9",)),
        ("assistant", "", ("c10", "c11")),
        ("user", "ok", ()),
        ("assistant", "Finished.", ()),
    ]  # fmt: skip
    session_turns = [SessionTurn(index=i, role=role, text=text, call_ids=ids, at=start + timedelta(seconds=30 * i))
                     for i, (role, text, ids) in enumerate(turns)]  # fmt: skip
    session_turns.append(SessionTurn(index=14, role="user", text="Search for callers of total", agent_id="sub-1"))
    calls = [
        call("c0", "shell", 1, command=SMOKE, exit_code=0),
        call("c1", "read_file", 1, path=f"{r}/pricing.py"),
        call("c2", "shell", 1, command=TESTS, exit_code=1),
        call("c3", "edit_file", 5, path=f"{r}/pricing.py", old_string="1)", new_string="2)",
             writes=(f"{r}/pricing.py",)),
        call("c4", "write_file", 9, path="tests/test_rounding.py", content="import unittest\n",
             writes=("tests/test_rounding.py",)),
        *[call(f"c{5 + i}", "write_file", 9, path=f"{r}/src/billing/{n}.py", content=f"{n} = 1\n",
               writes=(f"{r}/src/billing/{n}.py",)) for i, n in enumerate("abcd")],
        call("c9", "ask_person", 9, questions=[{"question": "Which log level?",
                                                "options": [{"label": "info"}, {"label": "debug"}]}]),
        call("c10", "shell", 11, command=TESTS, exit_code=0),
        call("c11", "shell", 11, command=SMOKE, exit_code=0),
        call("c12", "grep", 14, agent_id="sub-1", pattern="total("),
    ]  # fmt: skip
    commands = [CommandRun(call_id=c.call_id, command=c.input["command"], exit_code=c.exit_code, is_test=True)
                for c in calls if c.name == "shell"]  # fmt: skip
    return Session(
        session_id="3f2a9c1e-demo", harness="fake-agent", harness_version="2.1.7", model="model-large",
        cwd=r, started_at=start, ended_at=start + timedelta(minutes=10), turns=tuple(session_turns),
        tool_calls=tuple(calls), files_read=(f"{r}/pricing.py",),
        files_written=(f"{r}/pricing.py", "tests/test_rounding.py", *[f"{r}/src/billing/{n}.py" for n in "abcd"],
                       "/home/dev/elsewhere/scratch.txt"),
        commands=tuple(commands), cost_usd=0.4234,
    )  # fmt: skip


@pytest.fixture
def worked(tmp_path: Path) -> tuple[Path, Session, dict[str, bytes]]:
    """The repository after the session, the session, and what the person had before it started."""
    repo = make_repo(tmp_path)
    before = snapshot(repo)
    agent_writes(repo)
    return repo, make_session(repo), before


def test_distil_writes_every_file_of_the_exam(worked) -> None:
    repo, session, _ = worked
    path = distil(session, repo)
    assert path == repo / ".assay" / "exams" / "fix-the-rounding-in-pricing-so-totals"
    exam = load_exam(path)
    spec = exam.spec
    assert spec.runner.name == "fake-agent" and spec.runner.version == "2.1.7" and spec.model == "model-large"
    assert spec.workspace.commit == git(repo, "rev-parse", "HEAD").strip()
    assert spec.workspace.patch == "workspace.patch"
    assert spec.workspace.untracked == ("data.bin", "notes/todo list.md")
    assert spec.tools.allow == ("ask_person", "edit_file", "grep", "read_file", "shell", "write_file")
    assert (spec.caps.max_turns, spec.caps.max_budget_usd, spec.caps.max_wall_seconds) == (14, 0.85, 1800)
    assert (spec.source.session_id, spec.source.turns, spec.source.cost_usd) == ("3f2a9c1e-demo", 7, 0.4234)
    assert spec.environment.parts["pyproject.toml"].startswith("sha256:")
    assert exam.instruction == (
        "Fix the rounding in pricing so totals show cents.\nThe invoice shows 19.9.\n\n---\n\n"
        "Later in the session the person added, in this order:\n\n"
        "1. 1 — Fix the rounding in pricing.py only\n"
        '2. yes — in answer to "Should I also add a regression test?"\n'
        "3. 2 — debug\n"
        "4. ok (a short reply; what it answered is not in the session)\n"
    )
    by_key = {a.key: a for a in exam.assertions}
    assert all(a.status == "draft" and a.evidence for a in exam.assertions)
    assert unreviewed(exam) == list(by_key)
    green = by_key["passes-python3-m-unittest-discover-s-tests-t-q"]
    assert (green.tier, green.check, green.params) == ("outcome", "command_passes", {"command": TESTS})
    assert green.evidence == (f"call c2: `{TESTS}` exited 1", f"call c10: `{TESTS}` exited 0")
    assert by_key["passes-python3-m-unittest-tests-test-smoke-q"].evidence == (
        f"call c0: `{SMOKE}` exited 0", f"call c11: `{SMOKE}` exited 0")
    changed = [a.params["path"] for a in exam.assertions if a.check == "file_changed"]
    assert changed == ["pricing.py", "tests/test_rounding.py", *[f"src/billing/{n}.py" for n in "abcd"]]
    assert by_key["changed-pricing-py"].evidence == ("call c3 (edit_file, turn 5) wrote pricing.py",)
    assert by_key["files-within"].params == {"allow": ["pricing.py", "src/billing/**", "tests/test_rounding.py"]}
    assert {a.params["tool"] for a in exam.assertions if a.check == "tool_used"} == {"edit_file", "write_file", "shell"}
    caps = {a.params["measure"]: a.params["max"] for a in exam.assertions if a.check == "cap"}
    assert caps == {"turns": 14, "cost_usd": 0.85, "wall_seconds": 1800}
    assert {a.params["measure"]: a.params["k"] for a in exam.assertions if a.check == "band"} == {
        "cost_usd": 3.0, "turns": 3.0}
    assert by_key["profile-reads-before-first-write"].evidence == (
        "reads before the first write: 1 (the first write is call c3; reads: c1)",)
    assert by_key["profile-tool-mix"].tier == "profile"
    rubric = by_key["does-what-was-asked"]
    assert rubric.tier == "judged" and rubric.params["text"] == (
        "The change does what was asked: Fix the rounding in pricing so totals show cents. The invoice shows 19.9.")
    assert [a.tier for a in exam.assertions] == sorted((a.tier for a in exam.assertions),
                                                       key=["outcome", "trajectory", "profile", "judged"].index)
    verify = path / "verify.sh"
    assert verify.read_text().startswith("#!/usr/bin/env bash\n") and "set -u\n" + TESTS in verify.read_text()
    assert "0 the work holds, 1 it does not, anything else the check itself failed" in verify.read_text()
    assert os.access(verify, os.X_OK)
    assert git(repo, "status", "--porcelain", "--", "pricing.py").startswith(" M")  # the repository untouched


def test_the_patch_recreates_the_persons_starting_state_in_a_worktree(worked, tmp_path: Path) -> None:
    repo, session, before = worked
    exam = load_exam(distil(session, repo))
    assert exam.patch_path is not None
    tree = tmp_path / "replay"
    git(repo, "worktree", "add", "-q", "--detach", str(tree), exam.spec.workspace.commit)
    git(tree, "apply", "--binary", str(exam.patch_path))
    assert snapshot(tree) == before
    assert not (tree / ".assay").exists() and not (tree / ".env").exists()
    # verify.sh tells the starting state (the work not done) from the finished one
    assert sh(tree, "bash", str(exam.verify_path)).returncode == 1
    assert sh(repo, "bash", str(exam.verify_path)).returncode == 0


def test_a_clean_repository_gets_no_patch_and_verify_can_be_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "wip")
    agent_writes(repo)
    session = make_session(repo).model_copy(update={"git_commit": git(repo, "rev-parse", "HEAD~1").strip()})
    exam = load_exam(distil(session, repo, slug="rounding", verify=False))
    assert exam.spec.workspace.commit == session.git_commit  # the session's own record wins over HEAD
    assert exam.patch_path is not None  # the "wip" commit is the person's state relative to the session's commit
    exam = load_exam(distil(make_session(repo), repo, slug="rounding-at-head", verify=False))
    assert exam.spec.workspace.patch is None and exam.patch_path is None and exam.verify_path is None
    assert not (exam.path / "workspace.patch").exists()


def test_distil_refuses_to_overwrite_an_exam_unless_forced(worked) -> None:
    repo, session, _ = worked
    path = distil(session, repo, slug="rounding")
    (path / "assertions.toml").write_text("changed by a person\n")
    with pytest.raises(UsageError, match=r"already exists; replace it \(--force\)"):
        distil(session, repo, slug="rounding")
    assert (path / "assertions.toml").read_text() == "changed by a person\n"
    assert distil(session, repo, slug="rounding", force=True) == path
    assert load_exam(path).assertions
    with pytest.raises(UsageError, match="not a valid slug"):
        distil(session, repo, slug="Bad Slug")


def test_bless_keeps_the_session_once_and_refuses_one_without_work(worked, tmp_path: Path) -> None:
    _, session, _ = worked
    home = tmp_path / "home"
    path = bless(session, home)
    assert path == home / "blessed" / "3f2a9c1e-demo.json"
    assert Session.model_validate_json(path.read_text()) == session
    os.utime(path, (1_000_000, 1_000_000))
    assert bless(session, home) == path and path.stat().st_mtime == 1_000_000  # the same session: nothing written
    with pytest.raises(UsageError, match="has no tool calls"):
        bless(session.model_copy(update={"session_id": "idle", "tool_calls": ()}), home)
    with pytest.raises(UsageError, match="has no turns"):
        bless(session.model_copy(update={"session_id": "empty", "turns": ()}), home)
    assert sorted(p.name for p in (home / "blessed").iterdir()) == ["3f2a9c1e-demo.json"]


def test_review_accepts_deletes_and_refuses_unknown_keys(worked) -> None:
    repo, session, _ = worked
    path = distil(session, repo, slug="rounding")
    exam = load_exam(path)
    with pytest.raises(ConfigError, match=r"(?s)draft assertion.*passes-python3.*assay review"):
        require_reviewed(exam)
    before = (path / "assertions.toml").read_bytes()
    with pytest.raises(NotFoundError) as unknown:
        review(path, accept=["files-within", "files-withn"], delete=["nope"])
    assert "did you mean files-within" in str(unknown.value) and "also unknown: nope" in str(unknown.value)
    assert "changed-pricing-py" in str(unknown.value) and "nothing was written" in str(unknown.value)
    with pytest.raises(ConfigError, match="both accepted and deleted"):
        review(path, accept=["files-within"], delete=["files-within"])
    assert (path / "assertions.toml").read_bytes() == before
    result = review(path, accept=["files-within", "does-what-was-asked"], delete=["profile-tool-mix"])
    assert result.accepted == ("files-within", "does-what-was-asked") and result.deleted == ("profile-tool-mix",)
    exam = load_exam(path)
    assert "profile-tool-mix" not in {a.key for a in exam.assertions}
    assert list(result.draft) == unreviewed(exam) and "files-within" not in result.draft
    result = review(path, accept_all=True, delete=["band-cost-usd"])
    assert result.draft == () and "band-cost-usd" in result.deleted and "files-within" not in result.accepted
    exam = load_exam(path)
    require_reviewed(exam)
    assert all(a.status == "accepted" for a in exam.assertions)
    assert sorted(p.name for p in path.iterdir()) == ["assertions.toml", "exam.toml", "instruction.md",
                                                     "verify.sh", "workspace.patch"]  # fmt: skip


def test_the_environment_fingerprint_is_deterministic_and_follows_the_pinned_lockfiles(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "requirements-dev.txt").write_text("pytest\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "dev requirements")
    commit = git(repo, "rev-parse", "HEAD").strip()
    first = environment_fingerprint(repo, commit, "fake-agent", "2.1.7")
    assert first == environment_fingerprint(repo, commit, "fake-agent", "2.1.7")
    fingerprint, parts = first
    assert list(parts) == sorted(parts)
    assert {"harness", "harness_version", "os", "python", "git", "pyproject.toml", "requirements-dev.txt"} == set(parts)
    assert parts["harness_version"] == "2.1.7" and parts["git"][0].isdigit()
    (repo / "uv.lock").write_text("version = 1\n")  # the working tree is not the pin: nothing changes
    (repo / "pyproject.toml").write_text("[project]\nname = 'edited-by-the-agent'\n")
    assert environment_fingerprint(repo, commit, "fake-agent", "2.1.7") == first
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "lock")
    changed, more = environment_fingerprint(repo, git(repo, "rev-parse", "HEAD").strip(), "fake-agent", "2.1.7")
    assert changed != fingerprint and "uv.lock" in more and more["pyproject.toml"] != parts["pyproject.toml"]
    assert environment_fingerprint(repo, commit, "fake-agent", "2.1.8")[0] != fingerprint
    assert tomllib.loads('x = "' + fingerprint + '"')["x"].startswith("sha256:")


def test_distil_needs_the_repository_and_the_commit_the_session_started_from(worked, tmp_path: Path) -> None:
    repo, session, _ = worked
    with pytest.raises(UsageError, match="with the commit it started from fetched"):
        distil(session.model_copy(update={"git_commit": "0" * 40}), repo)
    (tmp_path / "plain").mkdir()
    with pytest.raises(UsageError, match="is not a git repository"):
        distil(session, tmp_path / "plain")
    assert not (repo / ".assay").exists()


def _worked_session(calls: tuple[SessionToolCall, ...], commands: tuple[CommandRun, ...] = (),
                    **fields) -> Session:
    ids = tuple(c.call_id for c in calls)
    return Session(session_id="s", harness="fake-agent", cwd="/home/dev/acme-app", tool_calls=calls,
                   commands=commands, turns=(SessionTurn(index=0, role="user", text="Fix it"),
                                             SessionTurn(index=1, role="assistant", text="", call_ids=ids)),
                   **fields)  # fmt: skip


def test_a_file_is_written_only_by_a_write_tools_own_arguments_never_by_a_mention(tmp_path: Path) -> None:
    from assay.flows.exam_suggest import caps_for, suggest_assertions

    patch_text = "--- a/pricing.py\n+++ b/pricing.py\n@@ -1 +1 @@\n-x\n+y\n"
    calls = (call("r1", "read_file", 1, path="pricing.py"),
             call("m1", "shell", 1, command="grep -n total pricing.py && cat tests/test_pricing.py"),
             call("m2", "note", 1, text="Next I change pricing.py:\n- round to cents\n- keep src/util.py"),
             call("m3", "shell", 1, command=f"cat > /tmp/fix.diff <<'EOF'\n{patch_text}EOF"),
             call("w1", "edit_file", 1, path="pricing.py", old="1)", new="2)",
                  writes=("/home/dev/acme-app/pricing.py",)),
             call("w2", "apply_patch", 1, input="*** Begin Patch\n*** Update File: src/util.py\n-a\n+b\n*** End Patch",
                  writes=("src/util.py",)))  # fmt: skip
    session = _worked_session(calls, files_read=("pricing.py",),
                              files_written=("/home/dev/acme-app/pricing.py", "src/util.py"))
    found = suggest_assertions(session, tmp_path, ["pricing.py", "src/util.py"], caps_for(session))
    cited = {a.params["path"]: a.evidence for a in found if a.check == "file_changed"}
    assert cited == {"pricing.py": ("call w1 (edit_file, turn 1) wrote pricing.py",),
                     "src/util.py": ("call w2 (apply_patch, turn 1) wrote src/util.py",)}
    assert [a.params["tool"] for a in found if a.check == "tool_used"] == ["edit_file", "apply_patch"]
    assert not [a for a in found if a.check == "cap" and a.params["measure"] != "turns"]  # no cost, no wall time
    assert session.reads_before_first_write() == (("r1",), "w1")


PATCH_THROUGH_THE_SHELL = ("bash -lc \"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: tests/test_pricing.py\n"
                           "+def test_total():\n+    # run with: pytest -q\n*** End Patch\nEOF\"")  # fmt: skip


@pytest.mark.parametrize("command,writes", [
    (PATCH_THROUGH_THE_SHELL, ("tests/test_pricing.py",)),  # a patch the reader saw as a write
    (PATCH_THROUGH_THE_SHELL, ()),  # the same patch from a reader that did not: its words are not a test run
    ("echo 'now run pytest -q'", ()),
    ("grep -rn pytest setup.cfg", ()),
], ids=["patch-write", "patch-text", "echo", "grep"])  # fmt: skip
def test_verify_sh_comes_only_from_a_test_run_never_from_a_patch_or_words(command: str, writes: tuple[str, ...],
                                                                          tmp_path: Path) -> None:
    from assay.flows.exam_suggest import test_history, verify_script

    tests = "python -m pytest -q"
    calls = (call("x1", "shell", 1, command=command, exit_code=0, writes=writes),
             call("t1", "shell", 1, command=tests, exit_code=1), call("t2", "shell", 1, command=tests, exit_code=0))
    runs = tuple(CommandRun(call_id=c.call_id, command=c.input["command"], exit_code=c.exit_code, is_test=True)
                 for c in calls)  # every run flagged a test run, as a careless reader might
    alone = _worked_session(calls[:1], runs[:1])
    assert verify_script(test_history(alone, tmp_path)) is None
    script = verify_script(test_history(_worked_session(calls, runs), tmp_path))
    assert script is not None and script.endswith(f"set -u\n{tests}\n") and "turned green" in script


@pytest.mark.parametrize("command,runs_tests", [
    ("python -m pytest -q", True), ("cd api && uv run pytest tests/ -x", True), ("timeout 600 npm test", True),
    ("CI=1 npx jest --ci", True), ("bash -lc 'go test ./...'", True), ("./verify.sh", True),
    ("make check", True), ("npm run test:unit", True), ("bundle exec rake test", True),
    ("pip install pytest", False), ("echo 'run pytest next'", False), ("cat pytest.ini", False),
    ("git commit -m 'make pytest pass'", False), ("cat > run.sh <<EOF\npytest -q\nEOF", False),
    (PATCH_THROUGH_THE_SHELL, False),
])  # fmt: skip
def test_a_test_run_is_a_command_whose_program_is_a_test_runner(command: str, runs_tests: bool) -> None:
    assert is_test_command(command) is runs_tests


@pytest.mark.parametrize("path,cwd,expected", [
    ("C:\\Users\\dev\\acme-app\\src\\pricing.py", "C:\\Users\\dev\\acme-app", "src/pricing.py"),
    ("c:/users/dev/ACME-APP/src/pricing.py", "C:\\Users\\dev\\acme-app", "src/pricing.py"),  # Windows ignores case
    ("src\\pricing.py", "C:\\Users\\dev\\acme-app", "src/pricing.py"),
    ("D:\\elsewhere\\pricing.py", "C:\\Users\\dev\\acme-app", None),
    ("C:\\Users\\dev\\acme-app\\..\\other\\x.py", "C:\\Users\\dev\\acme-app", None),
    ("/home/dev/acme-app/src/pricing.py", "/home/dev/acme-app", "src/pricing.py"),
    ("/home/dev/ACME-APP/src/pricing.py", "/home/dev/acme-app", None),  # POSIX paths keep their case
])  # fmt: skip
def test_a_path_the_session_named_is_read_the_way_its_own_system_writes_paths(path: str, cwd: str,
                                                                              expected: str | None,
                                                                              tmp_path: Path) -> None:
    from assay.flows.exam_workspace import repo_relative

    assert repo_relative(path, tmp_path, cwd) == expected


def test_a_test_run_in_a_windows_sessions_own_folder_needs_no_cd(tmp_path: Path) -> None:
    from assay.flows.exam_suggest import test_history, verify_script

    tests = "python -m pytest -q"
    calls = (call("t1", "shell", 1, command=tests, exit_code=1), call("t2", "shell", 1, command=tests, exit_code=0))
    runs = tuple(CommandRun(call_id=c.call_id, command=tests, exit_code=c.exit_code, is_test=True,
                            cwd="C:\\Users\\dev\\acme-app" if i else "C:\\Users\\dev\\acme-app\\src")
                 for i, c in enumerate(calls))  # fmt: skip
    session = _worked_session(calls, runs).model_copy(update={"cwd": "C:\\Users\\dev\\acme-app"})
    script = verify_script(test_history(session, tmp_path))
    assert "C:" not in script and tests in script
