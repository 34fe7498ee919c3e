"""The README's walk-through with the real coding-agent CLIs, run as written: record a Claude Code session
against the scripted model, bless and distil it, review the exam, replay it on Claude Code and on Codex.

The block is one shell session (it starts the scripted model in the background and exports variables for
the lines after), so it runs as one bash script, each line announced first so a failure names its README
line. What differs from a reader's run: the model's port is a free one (tests run side by side); ``make
harnesses`` is left out (the ``claude_cli`` and ``codex_cli`` fixtures found the installed CLIs, and their
folder goes first on PATH); git is told who commits (a fresh home has no git identity). Everything else,
the homes included, is fresh and temporary.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prefect_api import prefect_env
from readme_blocks import checkout, sh_block

HEADING = "### Record, bless, distil and replay a real coding-agent session"
README_PORT = "8765"


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def script(port: str) -> str:
    """The block as a bash script: each line announced (``::line N``), then run; the first failure stops it."""
    body = ["set -euo pipefail"]
    for line in sh_block(HEADING):
        if line.command.startswith("make harnesses"):
            continue
        body += [f"echo {shlex.quote(f'::line {line.number}')}", line.command.replace(README_PORT, port)]
    return "\n".join(body) + "\n"


@pytest.mark.timeout(1200)  # twelve real harness runs, and the assay commands around them
def test_the_walk_through_records_a_real_session_and_replays_its_exam_on_both_harnesses(
        claude_cli: str, codex_cli: str, tmp_path: Path) -> None:
    home = tmp_path / "assay-home"
    cwd = checkout(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    env |= prefect_env() | {
        "HOME": str(tmp_path / "home"), "ASSAY_HOME": str(home), "PREFECT_HOME": str(home / "prefect"),
        "COLUMNS": "200", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_AUTHOR_NAME": "Reader", "GIT_AUTHOR_EMAIL": "reader@example.com", "GIT_COMMITTER_NAME": "Reader",
        "GIT_COMMITTER_EMAIL": "reader@example.com",
        "PATH": os.pathsep.join([str(Path(claude_cli).parent), str(Path(sys.executable).parent), env["PATH"]])}
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # as root, Claude Code replays without permission prompts only in a sandbox
    (tmp_path / "home").mkdir()
    log = tmp_path / "block.log"
    with log.open("w") as out:  # a file, not a pipe: the scripted model in the background would hold a pipe open
        shell = subprocess.Popen(["bash", "-c", script(free_port())], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            shell.wait(timeout=1000)
        finally:
            try:  # the scripted model, when a line failed before the block stopped it
                os.killpg(shell.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            shell.wait()
    output = log.read_text()
    reached = re.findall(r"^::line (\d+)$", output, re.M)
    assert shell.returncode == 0, f"README.md line {reached[-1] if reached else '?'} failed:\n{output[-6000:]}"
    assert len(reached) == len(sh_block(HEADING)) - 1
    assert re.search(r"^PASS\s+half-cent-rounding: 5 of 5 replays held", output, re.M), output[-6000:]
    codex_run = output[output.index("via codex"):]
    assert re.search(r"stamped\s+exam_gate v1 pass", codex_run), codex_run
    assert list((tmp_path / "home" / ".claude" / "projects").glob("*/5e55104e-0000-4000-8000-000000000001.jsonl"))
