"""bless -> distil -> review at the command line, on a session the fake harness really ran: its transcript is
found among the repository's sessions, blessed, distilled into an exam directory in the repository, and its
suggested assertions reviewed until none is a draft."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from command_line import assay

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))
from test_fake_harness import ASK, worked_repo  # noqa: E402


@pytest.fixture
def worked(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    """A repository the fake harness fixed the bug in, with uncommitted work of the person's own from before:
    (repo, the environment the `assay` commands see, the session's id)."""
    repo, home, session_id = worked_repo(tmp_path / "machine")
    return repo, {"HOME": str(home)}, session_id


def _json(home: Path, env: dict[str, str], *args: str) -> dict:
    return json.loads(assay(*args, "--json", home=home, extra_env=env).stdout)


def test_a_session_is_found_blessed_distilled_and_reviewed(worked, tmp_path: Path) -> None:
    repo, env, session_id = worked
    home = tmp_path / "assay-home"
    found = _json(home, env, "sessions", "--repo", str(repo))["sessions"]
    assert [(s["session_id"], s["harness"], s["blessed"]) for s in found] == [(session_id, "claude-code", False)]
    assert found[0]["first_prompt"] == ASK

    blessed = _json(home, env, "bless", session_id[:8], "--repo", str(repo))
    assert blessed["created"] is True and blessed["session_id"] == session_id
    assert blessed["summary"]["files_written"] == [str(repo.resolve() / "pricing.py")]  # as the agent named it
    assert blessed["summary"]["test_runs"] == 2
    assert _json(home, env, "bless", session_id[:8], "--repo", str(repo))["created"] is False
    assert _json(home, env, "sessions", "--repo", str(repo))["sessions"][0]["blessed"] is True

    distilled = _json(home, env, "distil", session_id[:8], "--repo", str(repo), "--slug", "half-cent-rounding")
    exam = Path(distilled["path"])
    assert exam == repo / ".assay" / "exams" / "half-cent-rounding"
    assert distilled["files"] == ["assertions.toml", "exam.toml", "instruction.md", "verify.sh", "workspace.patch"]
    assert distilled["tools"] == ["Bash", "Edit", "Read"] and distilled["patch"] is True
    assert "NOTES.md" in (exam / "workspace.patch").read_text()  # the person's own state, not the agent's edit
    assert "pricing.py" not in (exam / "workspace.patch").read_text()
    assert ASK in (exam / "instruction.md").read_text()
    keys = [a["key"] for a in distilled["assertions"]]
    assert all(a["status"] == "draft" and a["evidence"] for a in distilled["assertions"])
    assert {a["tier"] for a in distilled["assertions"]} == {"outcome", "trajectory", "profile", "judged"}
    verify = subprocess.run(["bash", str(exam / "verify.sh")], cwd=repo, capture_output=True, text=True,
                            env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
                                 "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert verify.returncode == 0, verify.stdout + verify.stderr  # the work holds in the state the session left

    again = assay("distil", session_id[:8], "--repo", str(repo), "--slug", "half-cent-rounding", home=home,
                  extra_env=env, check=None)
    assert again.returncode != 0 and "--force" in again.stderr

    shown = assay("review", "half-cent-rounding", "--repo", str(repo), home=home, extra_env=env)
    assert f"{len(keys)} draft(s) left" in shown.stdout
    first, second = keys[0], keys[1]
    done = _json(home, env, "review", "half-cent-rounding", "--repo", str(repo), "--accept", first, "--delete", second)
    assert done["accepted"] == [first] and done["deleted"] == [second]
    assert [a["key"] for a in done["reviewed"]] == [first] and len(done["drafts"]) == len(keys) - 2
    unknown = assay("review", "half-cent-rounding", "--repo", str(repo), "--accept", "no-such-check", home=home,
                    extra_env=env, check=None)
    assert unknown.returncode == 1 and "nothing was written" in unknown.stderr
    rest = _json(home, env, "review", str(exam), "--accept-all")
    assert rest["drafts"] == [] and len(rest["reviewed"]) == len(keys) - 1


def test_distil_asks_for_a_blessed_session(worked, tmp_path: Path) -> None:
    repo, env, session_id = worked
    refused = assay("distil", session_id[:8], "--repo", str(repo), home=tmp_path / "empty", extra_env=env, check=None)
    assert refused.returncode == 1 and "assay bless" in refused.stderr


def test_the_readme_exam_walk_through_runs_in_the_repository(readme_walk, worked, tmp_path: Path) -> None:
    """The README's exam block, typed in the repository as a user would (SESSION: the session's id)."""
    import os
    import shlex

    from command_line import assay_process
    from readme_blocks import expected_exit, sh_block

    repo, extra, session_id = worked
    env = dict(extra, ASSAY_CLAUDE_BIN=str(repo.parent / "bin" / "claude"),  # the fake harness replays
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    said = {}
    for line in sh_block("## Coding-agent exams"):
        argv = [session_id[:12] if a == "SESSION" else a for a in shlex.split(line.command)]
        assert argv[0] == "assay", line
        done = assay_process(*argv[1:], home=tmp_path / "home", cwd=repo, columns=120, extra_env=env,
                             check=expected_exit(line))
        said[line.command] = done.stdout
    assert session_id[:12] in said["assay sessions"]
    assert (repo / ".assay" / "exams" / "half-cent-rounding" / "exam.toml").is_file()
    assert "every assertion is reviewed" in said[next(c for c in said if "--accept-all" in c)]
    assert "3 of 3 replays reproduced" in said[next(c for c in said if c.startswith("assay calibrate"))]
    administered = said[next(c for c in said if c.startswith("assay ci"))]
    assert "PASS   half-cent-rounding" in administered and "condition baseline" in administered
    assert "5 replays: 5 held, 0 failed, 0 errored" in administered and administered.rstrip().endswith("exit 0")
    assert "PASS   half-cent-rounding" in said[next(c for c in said if c.startswith("assay run"))]
