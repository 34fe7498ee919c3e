"""The fake coding-agent harness, run as a ``claude`` executable on PATH in real git repositories.

Each replay works on a fresh copy of the shipped sample project (a real bug, a real failing test): the
fake edits files and runs pytest for real, prints stream-json and writes a session transcript, and the
mode decides whether it fixes the bug, "fixes" it wrongly, crashes or overruns its budget.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import assay.fakes
from assay.fakes.harness import follows_regressed, parse_mode

EXAM_PROJECT = Path(assay.fakes.__file__).parent / "exam_project"
ASK = "test_half_a_cent_rounds_up fails: fix the discount rounding in pricing.py"
ALLOWED = ["--tools", "Bash,Edit,Read", "--permission-mode", "acceptEdits", "--allowedTools", "Bash(python -m pytest:*)"]
STREAM = ["--output-format", "stream-json", "--verbose"]
QUICK_PYTEST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
"""The sample project's tests need no plug-ins; not loading the installed ones keeps each run fast."""
ENVELOPE = {"uuid", "parentUuid", "sessionId", "timestamp", "cwd", "gitBranch", "version", "isSidechain", "userType",
            "type", "message"}


@dataclass
class Replay:
    """What one run of the fake left behind."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    @property
    def result(self) -> dict[str, Any]:
        (result,) = [event for event in self.events if event["type"] == "result"]
        return result

    def tool_results(self) -> list[dict[str, Any]]:
        return [block for event in self.events if event["type"] == "user" for block in event["message"]["content"]]


def fake_claude_bin(folder: Path) -> Path:
    """``folder``, made to hold ``claude``: a shell script that runs the fake with this interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "claude"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay.fakes.harness "$@"\n')
    script.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``claude``."""
    return fake_claude_bin(tmp_path_factory.mktemp("bin"))


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args], cwd=repo,
                          capture_output=True, text=True, check=True)
    return done.stdout


def make_repo(path: Path) -> Path:
    """A git repository holding the sample project, committed on ``main``."""
    shutil.copytree(EXAM_PROJECT, path, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "shop pricing")
    return path


def claude(repo: Path, bin_dir: Path, home: Path, *args: str, mode: str = "good", env: dict[str, str] | None = None,
           ask: str | None = ASK) -> Replay:
    """Run ``claude -p`` in ``repo`` the way a replay does, with an isolated HOME."""
    inherited = {key: value for key, value in os.environ.items()
                 if not key.startswith(("ASSAY_FAKE_HARNESS_", "CLAUDE_", "PYTEST_ADDOPTS"))}
    environ = {**inherited, "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "HOME": str(home), "ASSAY_FAKE_HARNESS_MODE": mode, **QUICK_PYTEST, **(env or {})}
    prompt = [ask] if ask is not None else []
    done = subprocess.run(["claude", "-p", *prompt, *args], cwd=repo, env=environ, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    return Replay(done.returncode, done.stdout, done.stderr)


def worked_repo(root: Path) -> tuple[Path, Path, str]:
    """A repository of the sample project, with an uncommitted note of the person's own, in which the fake harness
    fixed the bug (a good session, transcript written under HOME): (repo, HOME, the session's id)."""
    repo = make_repo(root / "acme-shop")
    (repo / "NOTES.md").write_text("pricing: ask finance about half cents\n")
    done = claude(repo, fake_claude_bin(root / "bin"), root / "home", *STREAM, *ALLOWED)
    assert done.returncode == 0, done.stderr
    return repo, root / "home", done.result["session_id"]


def reviewed_exam(root: Path, slug: str) -> tuple[Path, Path, Path]:
    """A :func:`worked_repo` whose session is distilled into exam ``slug`` and reviewed: every draft accepted but
    the rubric (no judge is configured) and the wall-time cap (a loaded machine could break it). (repo, exam
    dir, the fake harness's ``claude`` wrapper)."""
    from assay.adapters.capture import find_session, read_session
    from assay.core.exam import load_exam
    from assay.flows.exam_distil import distil
    from assay.flows.exam_review import review

    repo, home, session_id = worked_repo(root)
    exam_dir = distil(read_session(Path(find_session(repo, session_id, {"HOME": str(home)}).path)), repo, slug=slug)
    dropped = [a.key for a in load_exam(exam_dir).assertions
               if a.check == "rubric" or (a.check == "cap" and a.params["measure"] == "wall_seconds")]
    assert len(dropped) == 2, dropped
    review(exam_dir, accept_all=True, delete=dropped)
    return repo, exam_dir, root / "bin" / "claude"


def suite_passes(repo: Path) -> bool:
    """Whether the sample project's own tests pass in ``repo``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **QUICK_PYTEST}, timeout=120)
    return done.returncode == 0


def transcript_lines(home: Path, repo: Path, session_id: str) -> list[dict[str, Any]]:
    encoded = str(repo.resolve()).replace("/", "-").replace(".", "-")
    path = home / ".claude" / "projects" / encoded / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory: pytest.TempPathFactory, bin_dir: Path) -> Iterator[tuple[Path, Path, Replay]]:
    """One good replay of the sample project: (repo, HOME, replay)."""
    root = tmp_path_factory.mktemp("good")
    repo = make_repo(root / "shop")
    assert not suite_passes(repo), "the sample project must start with a failing test"
    yield repo, root / "home", claude(repo, bin_dir, root / "home", *STREAM, *ALLOWED, "--model", "sonnet")


def test_good_mode_fixes_the_bug_for_real(good_run: tuple[Path, Path, Replay]) -> None:
    repo, _, replay = good_run
    assert replay.returncode == 0, replay.stderr
    assert suite_passes(repo)
    assert _git(repo, "diff", "--name-only").split() == ["pricing.py"]
    failing, passing = [block for block in replay.tool_results() if "passed" in block["content"]]
    assert failing["is_error"] is True and failing["content"].startswith("Exit code 1\n")
    assert "is_error" not in passing and "5 passed" in passing["content"]


def test_stream_json_has_the_documented_shapes(good_run: tuple[Path, Path, Replay]) -> None:
    repo, _, replay = good_run
    init, *middle, result = replay.events
    assert init["type"] == "system" and init["subtype"] == "init"
    assert init["tools"] == ["Bash", "Edit", "Read"] and init["mcp_servers"] == []
    assert init["cwd"] == str(repo.resolve()) and init["permissionMode"] == "acceptEdits"
    assert init["model"] == "claude-sonnet-4-5-20250929" and init["claude_code_version"] == "2.1.3"
    assert {event["type"] for event in middle} == {"assistant", "user"}
    calls = {}
    for event in middle:
        assert event["parent_tool_use_id"] is None and event["session_id"] == init["session_id"]
        if event["type"] == "assistant":
            message = event["message"]
            assert message["id"].startswith("msg_") and message["role"] == "assistant" and len(message["content"]) == 1
            assert {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} <= set(
                message["usage"])
            calls.update({block["id"]: block for block in message["content"] if block["type"] == "tool_use"})
    answered = [block["tool_use_id"] for block in replay.tool_results()]
    assert sorted(answered) == sorted(calls) and len(calls) == 5
    assert [calls[call_id]["name"] for call_id in answered] == ["Read", "Read", "Bash", "Edit", "Bash"]
    edit = next(call for call in calls.values() if call["name"] == "Edit")
    assert set(edit["input"]) == {"file_path", "old_string", "new_string"}
    assert edit["input"]["file_path"] == str(repo.resolve() / "pricing.py")
    assert result["subtype"] == "success" and result["is_error"] is False and result["num_turns"] == 6
    assert result["session_id"] == init["session_id"] and result["permission_denials"] == []
    assert result["total_cost_usd"] > 0 and result["duration_ms"] >= 0
    assert result["modelUsage"]["claude-sonnet-4-5-20250929"]["costUSD"] == result["total_cost_usd"]
    last_text = [event["message"]["content"][0] for event in middle if event["type"] == "assistant"][-1]
    assert result["result"] == last_text["text"] and "All 5 tests pass" in result["result"]


def test_the_transcript_is_written_at_the_encoded_path(good_run: tuple[Path, Path, Replay]) -> None:
    repo, home, replay = good_run
    lines = transcript_lines(home, repo, replay.result["session_id"])
    assert all(ENVELOPE <= set(line) for line in lines)
    assert lines[0]["parentUuid"] is None and lines[0]["message"] == {"role": "user", "content": ASK}
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    assert {(line["gitBranch"], line["cwd"], line["version"]) for line in lines} == {("main", str(repo.resolve()),
                                                                                       "2.1.3")}
    responses = Counter((line["message"]["id"], line["requestId"]) for line in lines if line["type"] == "assistant")
    assert len(responses) == replay.result["num_turns"]
    streamed = [key for key, count in responses.items() if count == 2]
    assert len(streamed) == 3, "responses that say something before calling a tool are written as 2 lines"
    bash = [line["toolUseResult"] for line in lines if isinstance(line.get("toolUseResult"), dict)
            and "stdout" in line["toolUseResult"]]
    assert bash and set(bash[0]) >= {"stdout", "stderr", "interrupted"} and "5 passed" in bash[0]["stdout"]


def test_regress_follows_the_regressed_steps_in_exactly_that_share(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    worktrees = [tmp_path / f"replay-{index}" for index in range(10)]
    for worktree in worktrees:
        _git(repo, "worktree", "add", "-q", "--detach", str(worktree), "HEAD")
    state = tmp_path / "state"

    def replay(worktree: Path) -> Replay:
        return claude(worktree, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, mode="regress:0.3",
                      env={"ASSAY_FAKE_HARNESS_STATE": str(state)})

    with ThreadPoolExecutor(max_workers=5) as pool:
        replays = list(pool.map(replay, worktrees))
        green = list(pool.map(suite_passes, worktrees))
    assert all(done.returncode == 0 for done in replays), [done.stderr for done in replays]
    log = [json.loads(line) for line in (state / "replays.jsonl").read_text().splitlines()]
    assert sorted(entry["replay"] for entry in log) == list(range(10))
    assert sorted(entry["replay"] for entry in log if entry["steps"] == "regressed") == [3, 6, 9]
    regressed = {entry["session_id"] for entry in log if entry["steps"] == "regressed"}
    for worktree, done, passes in zip(worktrees, replays, green, strict=True):
        went_wrong = done.result["session_id"] in regressed
        assert passes is not went_wrong
        changed = _git(worktree, "diff", "--name-only").split()
        assert changed == (["pricing.py", "setup.cfg"] if went_wrong else ["pricing.py"])
    assert sum(not passes for passes in green) == 3


def test_without_a_state_folder_the_seed_and_session_decide() -> None:
    mode = parse_mode("flaky:0.25")
    sessions = [f"00000000-0000-4000-8000-{index:012d}" for index in range(400)]
    first = [follows_regressed(mode, {"ASSAY_FAKE_HARNESS_SEED": "7"}, session)[0] for session in sessions]
    again = [follows_regressed(mode, {"ASSAY_FAKE_HARNESS_SEED": "7"}, session)[0] for session in sessions]
    other_seed = [follows_regressed(mode, {"ASSAY_FAKE_HARNESS_SEED": "8"}, session)[0] for session in sessions]
    assert first == again and first != other_seed
    assert 60 < sum(first) < 140


def test_a_crash_exits_1_without_a_result(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    replay = claude(repo, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, mode="crash")
    assert replay.returncode == 1 and "TypeError" in replay.stderr
    kinds = [event["type"] for event in replay.events]
    assert kinds[0] == "system" and "result" not in kinds and 2 <= len(kinds) <= 5
    later = claude(repo, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, mode="crash-after:3")
    assert later.returncode == 1 and "result" not in [event["type"] for event in later.events]
    assert len(later.tool_results()) == 3


def test_overrun_stops_at_the_budget(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    replay = claude(repo, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, "--max-budget-usd", "0.02", mode="overrun")
    assert replay.returncode == 1
    result = replay.result
    assert result["subtype"] == "error_max_budget_usd" and result["total_cost_usd"] > 0.02
    assert "result" not in result and result["errors"]
    turns = claude(repo, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, "--max-turns", "2").result
    assert turns["subtype"] == "error_max_turns" and turns["num_turns"] == 2


def test_tools_outside_the_allowlist_are_refused(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    replay = claude(repo, bin_dir, tmp_path / "home", *STREAM, "--tools", "Read,Edit")
    assert replay.events[0]["tools"] == ["Read", "Edit"]
    refused = [block for block in replay.tool_results() if "No such tool available: Bash" in block["content"]]
    assert len(refused) == 2 and all(block["is_error"] for block in refused)
    (denied,) = replay.result["permission_denials"]
    assert set(denied) == {"tool_name", "tool_use_id", "tool_input"}
    assert denied["tool_name"] == "Edit", "in the default permission mode an edit needs an allow rule"
    assert _git(repo, "status", "--porcelain") == ""
    removed = claude(repo, bin_dir, tmp_path / "home", *STREAM, "--disallowedTools", "Bash", "--permission-mode",
                     "acceptEdits")
    assert "Bash" not in removed.events[0]["tools"] and "Edit" in removed.events[0]["tools"]
    assert _git(repo, "diff", "--name-only").split() == ["pricing.py"]


def test_json_and_text_output_with_a_playbook_from_the_environment(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    playbook = tmp_path / "short.toml"
    playbook.write_text('[[good]]\nread = "README.md"\n[[good]]\nsay = "It is a pricing package."\n')
    env = {"ASSAY_FAKE_HARNESS_PLAYBOOK": str(playbook)}
    as_json = claude(repo, bin_dir, tmp_path / "home", "--output-format", "json", env=env)
    (line,) = as_json.stdout.splitlines()
    result = json.loads(line)
    assert as_json.returncode == 0 and result["type"] == "result" and result["result"] == "It is a pricing package."
    as_text = claude(repo, bin_dir, tmp_path / "home", env=env)
    assert as_text.returncode == 0 and as_text.stdout == "It is a pricing package.\n"


def test_an_api_error_is_success_with_is_error(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    replay = claude(repo, bin_dir, tmp_path / "home", *STREAM, *ALLOWED, mode="api-error")
    assert replay.returncode == 1
    assert replay.result["subtype"] == "success" and replay.result["is_error"] is True
    assert replay.result["result"].startswith("API Error: 500")


@pytest.mark.parametrize("args,env,message", [
    (["--bogus"], {}, "unknown option '--bogus'"),
    (["--output-format", "stream-json"], {}, "requires --verbose"),
    (["--session-id", "not-a-uuid"], {}, "Invalid session ID"),
    ([], {"ASSAY_FAKE_HARNESS_MODE": "regress:2"}, "is not one of good, regress:P"),
], ids=["unknown-flag", "stream-without-verbose", "bad-session-id", "bad-mode"])
def test_bad_command_lines_exit_1_like_a_cli(tmp_path: Path, bin_dir: Path, args: list[str], env: dict[str, str],
                                              message: str) -> None:
    repo = make_repo(tmp_path / "shop")
    replay = claude(repo, bin_dir, tmp_path / "home", *args, env=env)
    assert replay.returncode == 1 and message in replay.stderr and replay.stdout == ""


def test_version_session_reuse_mcp_and_a_bad_playbook(tmp_path: Path, bin_dir: Path) -> None:
    repo = make_repo(tmp_path / "shop")
    home = tmp_path / "home"
    version = claude(repo, bin_dir, home, "--version", ask=None, env={"ASSAY_FAKE_HARNESS_VERSION": "2.0.9"})
    assert version.stdout == "2.0.9 (Claude Code)\n"
    (repo / ".mcp.json").write_text('{"mcpServers": {"tickets": {"command": "tickets-mcp"}}}')
    playbook = tmp_path / "say.toml"
    playbook.write_text('[[good]]\nsay = "Nothing to do."\n')
    env = {"ASSAY_FAKE_HARNESS_PLAYBOOK": str(playbook)}
    session = "3f2b8c1e-5d4a-4e7b-9c0d-1a2b3c4d5e6f"
    loose = claude(repo, bin_dir, home, *STREAM, "--session-id", session, env=env)
    assert loose.events[0]["mcp_servers"] == [{"name": "tickets", "status": "failed"}]
    assert loose.result["session_id"] == session
    assert "already in use" in claude(repo, bin_dir, home, *STREAM, "--session-id", session, env=env).stderr
    strict = claude(repo, bin_dir, home, *STREAM, "--strict-mcp-config", env=env)
    assert strict.events[0]["mcp_servers"] == []
    playbook.write_text('[[good]]\nread = "a.py"\nrun = "ls"\n')
    bad = claude(repo, bin_dir, home, *STREAM, env=env)
    assert bad.returncode == 1 and "good[0]" in bad.stderr and "at most one of" in bad.stderr
