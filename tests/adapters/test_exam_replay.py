"""Replaying an exam for real: git worktrees at the exam's pin, the fake headless harness, outcome probes.

Each test copies the shipped sample project (a real bug, a real failing test) into a git repository, leaves
an uncommitted change and an untracked file, and distils an exam by hand: pinned to the commit, the
uncommitted state as ``workspace.patch``, tools Bash, Edit and Read, the project's tests as an accepted
``command_passes`` assertion. The fake harness (``claude`` on PATH) does real work in the worktree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import assay.fakes
from assay.adapters.runners.claude_code import ClaudeCodeHarness
from assay.adapters.runners.claude_stream import read_stream
from assay.adapters.runners.command_agent import CommandHarness
from assay.adapters.runners.harness import Replay, replay
from assay.adapters.runners.worktree import changed_files, replay_worktree, sweep_worktrees
from assay.core.errors import NotFoundError, UsageError
from assay.core.exam import (Exam, ExamAssertion, ExamCaps, ExamEnvironment, ExamRunner, ExamSource, ExamSpec,
                             ExamTools, ExamWorkspace, load_exam, write_exam)

EXAM_PROJECT = Path(assay.fakes.__file__).parent / "exam_project"
ASK = "test_half_a_cent_rounds_up fails: fix the discount rounding in pricing.py"
TEST_COMMAND = "python -m pytest -q"
VERIFY = "#!/bin/sh\npython -m pytest -q tests/test_pricing.py >/dev/null 2>&1 || exit 1\n"


def _git(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args], cwd=repo,
                          capture_output=True, text=True)
    assert done.returncode in ok, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``claude`` (the fake harness run by this interpreter), and wrappers around it."""
    folder = tmp_path_factory.mktemp("bin")
    fake = f'"{sys.executable}" -m assay.fakes.harness "$@"'
    scripts = {
        "claude": f"#!/bin/sh\nexec {fake}\n",
        "claude-more-tools": f"#!/bin/sh\nexec {fake} --tools Write\n",
        "claude-with-child": f'#!/bin/sh\nsleep 600 &\necho $! > "$PID_DIR/child"\necho $$ > "$PID_DIR/main"\n'
                             f"exec {fake}\n",
    }
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bytes]:
    """The sample project committed, with an uncommitted change and an untracked file: (repo, commit, patch)."""
    repo = tmp_path_factory.mktemp("acme") / "shop"
    shutil.copytree(EXAM_PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "shop pricing")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    with (repo / "README.md").open("a") as readme:
        readme.write("\nUncommitted: release notes go in NOTES.md.\n")
    (repo / "NOTES.md").write_text("Rounding notes: half a cent rounds up.\n")
    patch = _git(repo, "diff", "--binary").encode()
    patch += _git(repo, "diff", "--binary", "--no-index", "/dev/null", "NOTES.md", ok=(1,)).encode()
    return repo, commit, patch


def make_exam(root: Path, project: tuple[Path, str, bytes], slug: str, *, caps: ExamCaps | None = None,
              verify: str | None = None, patch: bytes | None = None, commands: tuple[str, ...] = (TEST_COMMAND,)
              ) -> Exam:
    """An exam of the sample project, written by hand the way distil would."""
    _, commit, workspace_patch = project
    spec = ExamSpec(
        slug=slug, runner=ExamRunner(name="claude-code", version="2.1.3"), model="sonnet",
        workspace=ExamWorkspace(commit=commit, patch="workspace.patch", untracked=("NOTES.md",)),
        environment=ExamEnvironment(fingerprint="sha256:" + "0" * 64),
        tools=ExamTools(allow=("Bash", "Edit", "Read")), caps=caps or ExamCaps(),
        source=ExamSource(session_id="0b7c5e0e-4d0e-4a57-9a39-2f0c8a1d9e11", harness="claude-code"))
    assertions = [ExamAssertion(key=f"passes-{n}", tier="outcome", check="command_passes",
                                params={"command": command}, status="accepted") for n, command in enumerate(commands)]
    assertions += [
        ExamAssertion(key="fix-in-pricing", tier="outcome", check="file_changed", params={"path": "./pricing.py"},
                      status="accepted"),
        ExamAssertion(key="notes-kept", tier="outcome", check="file_contains",
                      params={"path": "NOTES.md", "text": "half a cent rounds up"}, status="accepted"),
        ExamAssertion(key="readme-kept", tier="outcome", check="file_contains",
                      params={"path": "README.md", "text": "Uncommitted: release notes"}, status="accepted"),
    ]
    path = write_exam(root / "exams" / slug, spec, ASK, assertions, patch=patch or workspace_patch, verify=verify)
    return load_exam(path)


@pytest.fixture(scope="module")
def exams(tmp_path_factory: pytest.TempPathFactory, project: tuple[Path, str, bytes]) -> dict[str, Exam]:
    root = tmp_path_factory.mktemp("exam-dirs")
    return {"fix": make_exam(root, project, "fix-rounding", verify=VERIFY),
            "capped": make_exam(root, project, "fix-rounding-capped", caps=ExamCaps(max_budget_usd=0.03))}


@pytest.fixture(scope="module")
def base_env(tmp_path_factory: pytest.TempPathFactory, bin_dir: Path) -> dict[str, str]:
    """The environment of a replay: the fake on PATH, an isolated HOME, quick pytest runs."""
    inherited = {key: value for key, value in os.environ.items()
                 if not key.startswith(("ASSAY_FAKE_HARNESS_", "ASSAY_CLAUDE_BIN", "CLAUDE_", "PYTEST_"))}
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**inherited, "PATH": path, "HOME": str(tmp_path_factory.mktemp("home")), "ASSAY_FAKE_HARNESS_MODE": "good",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def run(exam: Exam, repo: Path, parent: Path, env: dict[str, str], **options: Any) -> Replay:
    adapter = options.pop("adapter", None) or ClaudeCodeHarness(environ=env)
    return replay(exam, repo, adapter, parent=parent, env=env, replay_name=options.pop("name", "r1"), **options)


def assert_no_worktrees(repo: Path, parent: Path) -> None:
    porcelain = _git(repo, "worktree", "list", "--porcelain")
    listed = [line for line in porcelain.splitlines() if line.startswith("worktree ")]
    assert listed == [f"worktree {repo.resolve()}"]
    assert not parent.exists() or list(parent.iterdir()) == []


def held(result: Replay) -> dict[str, bool | None]:
    return {probe.key: probe.held for probe in result.probes}


@pytest.fixture(scope="module")
def good(project: tuple[Path, str, bytes], exams: dict[str, Exam], base_env: dict[str, str],
         tmp_path_factory: pytest.TempPathFactory) -> tuple[Replay, Path]:
    parent = tmp_path_factory.mktemp("replays")
    beats: list[int] = []
    result = run(exams["fix"], project[0], parent, base_env, heartbeat=lambda: beats.append(1))
    assert beats, "the heartbeat was never called"
    return result, parent


def test_a_good_replay_executes_and_its_probes_hold(good: tuple[Replay, Path], project: tuple[Path, str, bytes]
                                                    ) -> None:
    result, parent = good
    assert result.outcome.status == "executed", result.outcome.error
    assert result.outcome.stop_reason == "success" and result.outcome.allowlist_held is True
    assert held(result) == {"passes-0": True, "fix-in-pricing": True, "notes-kept": True, "readme-kept": True,
                            "verify.sh": True}
    assert [tuple(c) for c in result.files_changed] == [("modified", "pricing.py")]  # the patch is the start
    assert result.outcome.cost_usd and result.outcome.cost_usd > 0
    assert_no_worktrees(project[0], parent)


def test_a_good_replay_pairs_the_calls_and_becomes_a_case_run(good: tuple[Replay, Path]) -> None:
    result, _ = good
    session = result.outcome.session
    assert session is not None and session.harness == "claude-code" and session.harness_version == "2.1.3"
    assert [c.name for c in session.tool_calls] == ["Read", "Read", "Bash", "Edit", "Bash"]
    assert all(c.status != "unmatched" and c.output for c in session.tool_calls)
    assert [c.exit_code for c in session.commands] == [1, 0] and all(c.is_test for c in session.commands)
    assert session.tokens.responses == 6 and session.capture.bad_lines == ()
    case = result.case_run("fix-rounding", "replay-1")
    assert case.status == "executed" and case.transcript[0].role == "caller" and case.transcript[0].text == ASK + "\n"
    assert case.transcript[-1].role == "agent" and "Fixed" in case.transcript[-1].text
    assert [c.name for c in case.tool_calls] == ["Read", "Read", "Bash", "Edit", "Bash"]
    assert case.tool_calls[2].is_error is True and case.cost_usd == result.outcome.cost_usd
    artefact = json.loads(json.dumps(case.artefact))
    assert artefact["workspace"]["files_changed"] == [{"status": "modified", "path": "pricing.py"}]
    summary = artefact["session"]
    assert summary["tools_offered"] == ["Bash", "Edit", "Read"] and summary["turns"] == 6
    assert summary["commands"] == [{"command": TEST_COMMAND, "exit_code": 1, "is_test": True},
                                   {"command": TEST_COMMAND, "exit_code": 0, "is_test": True}]
    assert summary["model"] == "claude-sonnet-4-5-20250929" and summary["capture"]["unmatched_calls"] == 0


def test_a_regressed_replay_fails_its_probes_and_touches_more(project: tuple[Path, str, bytes],
                                                             exams: dict[str, Exam], base_env: dict[str, str],
                                                             tmp_path: Path) -> None:
    result = run(exams["fix"], project[0], tmp_path / "wt", {**base_env, "ASSAY_FAKE_HARNESS_MODE": "regress:1.0"})
    assert result.outcome.status == "executed"
    assert held(result)["passes-0"] is False and held(result)["verify.sh"] is False
    assert "failed" in result.probes[0].output and result.probes[0].exit_code == 1
    assert {c.path for c in result.files_changed} == {"pricing.py", "setup.cfg"}
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_a_crash_is_an_error_not_an_exception(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                              base_env: dict[str, str], tmp_path: Path) -> None:
    crashed = run(exams["fix"], project[0], tmp_path / "wt", {**base_env, "ASSAY_FAKE_HARNESS_MODE": "crash"})
    assert crashed.outcome.status == "error" and crashed.outcome.stop_reason == "crash"
    assert "the harness crashed (exit 1)" in str(crashed.outcome.error) and "TypeError" in str(crashed.outcome.error)
    assert held(crashed)["passes-0"] is False  # it read a file first: the probes still ran
    assert crashed.case_run("fix-rounding").status == "error"
    at_once = run(exams["fix"], project[0], tmp_path / "wt", {**base_env, "ASSAY_FAKE_HARNESS_MODE": "crash-after:0"})
    assert at_once.outcome.status == "error" and at_once.probes == []
    assert "no outcome probe ran" in str(at_once.probes_skipped)
    assert at_once.case_run("fix-rounding").artefact["workspace"]["probes_skipped"] == at_once.probes_skipped
    missing = run(exams["fix"], project[0], tmp_path / "wt", {**base_env, "ASSAY_CLAUDE_BIN": str(tmp_path / "nope")})
    assert missing.outcome.status == "error" and "could not start" in str(missing.outcome.error)
    assert missing.probes == [] and missing.outcome.session is None
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_an_api_error_under_success_is_an_error(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                                base_env: dict[str, str], tmp_path: Path) -> None:
    result = run(exams["fix"], project[0], tmp_path / "wt", {**base_env, "ASSAY_FAKE_HARNESS_MODE": "api-error"})
    assert result.outcome.status == "error" and "is_error true" in str(result.outcome.error)
    assert "API Error: 500" in str(result.outcome.error)


def test_overrunning_the_budget_is_the_agents_behaviour(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                                        base_env: dict[str, str], tmp_path: Path) -> None:
    result = run(exams["capped"], project[0], tmp_path / "wt", {**base_env, "ASSAY_FAKE_HARNESS_MODE": "overrun"})
    assert result.outcome.status == "executed" and result.outcome.stop_reason == "error_max_budget_usd"
    assert result.outcome.cost_usd is not None and result.outcome.cost_usd > 0.03
    assert result.case_run("capped").artefact["session"]["stop_reason"] == "error_max_budget_usd"


def test_a_broken_allowlist_is_an_error(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                        base_env: dict[str, str], tmp_path: Path, bin_dir: Path) -> None:
    env = {**base_env, "ASSAY_CLAUDE_BIN": str(bin_dir / "claude-more-tools")}
    result = run(exams["fix"], project[0], tmp_path / "wt", env)
    assert result.outcome.status == "error" and result.outcome.allowlist_held is False
    assert result.outcome.error == ("the allowlist did not hold: the harness offered ['Bash', 'Edit', 'Read', "
                                    "'Write'], the exam allows ['Bash', 'Edit', 'Read']")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_timeout_kills_the_harness_and_what_it_started(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                                         base_env: dict[str, str], tmp_path: Path,
                                                         bin_dir: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**base_env, "ASSAY_CLAUDE_BIN": str(bin_dir / "claude-with-child"), "PID_DIR": str(pids),
           "ASSAY_FAKE_HARNESS_DELAY": "60"}
    # the harness never finishes (a minute per response); 12 s is long enough for its init event on a loaded machine
    result = run(exams["fix"], project[0], tmp_path / "wt", env, timeout=12)
    assert result.outcome.status == "error" and result.outcome.stop_reason == "timeout"
    assert str(result.outcome.error).startswith("timeout")
    assert result.outcome.session is not None and result.outcome.allowlist_held is True  # it got as far as init
    assert result.probes == [] and result.probes_skipped
    for name in ("main", "child"):
        assert not _alive(int((pids / name).read_text())), f"the {name} process outlived the replay"
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_a_heartbeat_that_raises_stops_the_replay_cleanly(project: tuple[Path, str, bytes],
                                                           exams: dict[str, Exam], base_env: dict[str, str],
                                                           tmp_path: Path, bin_dir: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**base_env, "ASSAY_CLAUDE_BIN": str(bin_dir / "claude-with-child"), "PID_DIR": str(pids),
           "ASSAY_FAKE_HARNESS_DELAY": "60"}

    def lease_lost() -> None:
        if (pids / "child").exists():
            raise TimeoutError("lease lost")

    with pytest.raises(TimeoutError, match="lease lost"):
        run(exams["fix"], project[0], tmp_path / "wt", env, heartbeat=lease_lost)
    for name in ("main", "child"):
        assert not _alive(int((pids / name).read_text())), f"the {name} process outlived the replay"
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_the_command_line_carries_the_exam(exams: dict[str, Exam], tmp_path: Path) -> None:
    ask = tmp_path / "ask.md"
    ask.write_text("- fix the rounding\n")
    argv = ClaudeCodeHarness(environ={"ASSAY_CLAUDE_BIN": "/opt/agents/claude"}).command(exams["capped"], ask, "s-1")
    assert argv[:3] == ["/opt/agents/claude", "-p", " - fix the rounding\n"]
    assert argv[3:] == ["--output-format", "stream-json", "--verbose", "--tools", "Bash,Edit,Read",
                        "--strict-mcp-config", "--permission-mode", "bypassPermissions", "--session-id", "s-1",
                        "--model", "sonnet", "--max-budget-usd", "0.03"]
    assert ClaudeCodeHarness(environ={}).command(exams["fix"], ask, "s-2")[0] == "claude"


def test_two_replays_of_one_exam_run_in_parallel(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                                 base_env: dict[str, str], tmp_path: Path) -> None:
    results: list[Replay] = []
    failures: list[BaseException] = []

    def one() -> None:
        try:
            results.append(run(exams["fix"], project[0], tmp_path / "wt", base_env, name="same"))
        except BaseException as error:  # reported below, not lost in the thread
            failures.append(error)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures and len(results) == 2
    assert len({r.worktree_name for r in results}) == 2
    assert all(r.outcome.status == "executed" and held(r)["passes-0"] for r in results)
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_the_command_adapter_replays_a_shell_agent(project: tuple[Path, str, bytes], exams: dict[str, Exam],
                                                   base_env: dict[str, str], tmp_path: Path) -> None:
    agent = ('read -r ask && [ "$ask" = "$(head -n1 "$ASSAY_INSTRUCTION_FILE")" ] || exit 3\n'
             "sed -i 's/ROUND_HALF_EVEN/ROUND_HALF_UP/' pricing.py")
    fixed = run(exams["fix"], project[0], tmp_path / "wt", base_env, adapter=CommandHarness(agent))
    assert fixed.outcome.status == "executed" and fixed.outcome.stop_reason == "success"
    assert fixed.outcome.session is None and held(fixed)["passes-0"] is True
    assert [tuple(c) for c in fixed.files_changed] == [("modified", "pricing.py")]
    case = fixed.case_run("fix-rounding")
    assert case.transcript == [] and case.tool_calls == [] and case.artefact["session"]["transcript"] is False
    gave_up = run(exams["fix"], project[0], tmp_path / "wt", base_env, adapter=CommandHarness("exit 7"))
    assert gave_up.outcome.status == "executed" and gave_up.outcome.stop_reason == "exit 7"
    assert held(gave_up)["passes-0"] is False and gave_up.files_changed == []
    with pytest.raises(UsageError, match="ASSAY_EXAM_COMMAND"):
        run(exams["fix"], project[0], tmp_path / "wt", base_env, adapter=CommandHarness(environ={}))
    assert_no_worktrees(project[0], tmp_path / "wt")


def test_a_patch_that_does_not_apply_names_the_exam(project: tuple[Path, str, bytes], base_env: dict[str, str],
                                                    tmp_path: Path) -> None:
    stale = (b"diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n"
             b"-# not what the file says\n+# shop\n")
    exam = make_exam(tmp_path, project, "stale-patch", patch=stale)
    with pytest.raises(UsageError, match=r"exam 'stale-patch'.*workspace patch.*does not apply.*README.md"):
        run(exam, project[0], tmp_path / "wt", base_env)
    assert_no_worktrees(project[0], tmp_path / "wt")
    with pytest.raises(NotFoundError, match="repository"):
        run(exam, tmp_path / "no-such-repo", tmp_path / "wt", base_env)


def test_sweep_removes_leftover_worktrees_only_under_its_folder(project: tuple[Path, str, bytes],
                                                                tmp_path: Path) -> None:
    repo, commit, _ = project
    _git(repo, "worktree", "add", "--detach", str(tmp_path / "wt" / "fix-rounding-r1-dead"), commit)
    _git(repo, "worktree", "add", "--detach", str(tmp_path / "elsewhere"), commit)
    try:
        swept = sweep_worktrees(repo, tmp_path / "wt")
        assert swept == [tmp_path / "wt" / "fix-rounding-r1-dead"]
        listed = _git(repo, "worktree", "list", "--porcelain")
        assert "fix-rounding-r1-dead" not in listed and str(tmp_path / "elsewhere") in listed
        assert not (tmp_path / "wt" / "fix-rounding-r1-dead").exists()
    finally:
        _git(repo, "worktree", "remove", "--force", str(tmp_path / "elsewhere"))
    assert sweep_worktrees(repo, repo.parent) == []  # never the repository itself


def test_the_worktree_is_removed_when_the_body_raises(project: tuple[Path, str, bytes], tmp_path: Path) -> None:
    repo, commit, patch_bytes = project
    patch = tmp_path / "workspace.patch"
    patch.write_bytes(patch_bytes)
    with pytest.raises(RuntimeError, match="boom"):
        with replay_worktree(repo, commit, patch, parent=tmp_path / "wt", name="raises") as tree:
            assert (tree.path / "NOTES.md").read_text().startswith("Rounding notes")
            assert _git(tree.path, "rev-parse", "HEAD").strip() == commit  # nothing was committed
            assert changed_files(tree) == []
            (tree.path / "README.md").rename(tree.path / "README.txt")
            (tree.path / "setup.cfg").unlink()
            (tree.path / "pricing.py").write_text("PRICES = {}\n")
            (tree.path / "src").mkdir()
            (tree.path / "src" / "new.py").write_text("")
            (tree.path / "__pycache__").mkdir()
            (tree.path / "__pycache__" / "ignored.pyc").write_bytes(b"")
            assert sorted(changed_files(tree)) == [("added", "src/new.py"), ("deleted", "setup.cfg"),
                                                   ("modified", "pricing.py"), ("renamed", "README.txt")]
            raise RuntimeError("boom")
    assert_no_worktrees(repo, tmp_path / "wt")


def test_the_stream_reader_counts_what_it_cannot_use() -> None:
    lines = [
        '{"type":"system","subtype":"init","session_id":"s1","tools":["Task","Read"],"model":"m",'
        '"cwd":"/home/dev/acme-app"}',
        "not json at all",
        '{"type":"assistant","message":{"id":"m1","model":"m","content":[{"type":"tool_use","id":"t1","name":"Task",'
        '"input":{}}],"usage":{"input_tokens":3,"output_tokens":5}},"parent_tool_use_id":null}',
        '{"type":"assistant","message":{"id":"m2","model":"small","content":[{"type":"tool_use","id":"t2",'
        '"name":"Read","input":{"file_path":"a.py"}}],"usage":{"input_tokens":1,"output_tokens":1}},'
        '"parent_tool_use_id":"t1"}',
        '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2",'
        '"content":"x = 1"}]},"parent_tool_use_id":"t1"}',
        '{"type":"mystery"}',
    ]
    run_read = read_stream(lines, prompt="do it")
    session = run_read.session
    assert session is not None and run_read.result is None and session.cwd == "/home/dev/acme-app"
    assert session.capture.bad_lines == ("stdout:2",) and session.capture.unknown_types == {"mystery": 1}
    assert session.capture.unmatched_calls == ("t1",) and session.files_read == ("a.py",)
    (sub,) = session.subagents
    assert sub.parent_call_id == "t1" and sub.tool_calls == 1 and sub.tokens.output == 1
    assert session.tokens.output == 5 and session.model == "m"
    assert read_stream(["", "garbage"]).session is None


KILLED_REPLAY = """
import os, sys
from pathlib import Path
from assay.adapters.runners.claude_code import ClaudeCodeHarness
from assay.adapters.runners.harness import replay
from assay.core.exam import load_exam
replay(load_exam(Path(sys.argv[1])), Path(sys.argv[2]), ClaudeCodeHarness(environ=os.environ), parent=Path(sys.argv[3]),
       replay_name="killed")
"""


def test_a_replay_killed_mid_run_leaves_a_worktree_the_sweep_removes(process_kill, project: tuple[Path, str, bytes],
                                                                    exams: dict[str, Exam], base_env: dict[str, str],
                                                                    tmp_path: Path) -> None:
    """kill -9 of the process replaying (and of the harness it started) while the harness works: no clean-up
    runs, so the worktree stays; sweeping the replays' folder, as the next start does, removes it."""
    import time

    repo, parent = project[0], tmp_path / "wt"
    env = {**base_env, "ASSAY_FAKE_HARNESS_DELAY": "60"}  # a minute per response: still working when killed
    log = tmp_path / "replay.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", KILLED_REPLAY, str(exams["fix"].path), str(repo), str(parent)],
                                env=env, start_new_session=True, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 120
        while not (parent.exists() and any(parent.iterdir())):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the replay never made its worktree"
            time.sleep(0.2)
        time.sleep(1)  # the harness has started in it
    finally:
        process_kill(proc)
    (left,) = list(parent.iterdir())
    assert f"{left}" in _git(repo, "worktree", "list", "--porcelain")  # the killed process removed nothing
    assert sweep_worktrees(repo, parent) == [left]
    assert_no_worktrees(repo, parent)
