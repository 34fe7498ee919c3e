"""The README's "Repeats and per-case pass rates" walk-through, typed as a user would: each `assay` line runs as
a process against the fake vendors `assay fake-vendors` serves, with the environment its env file exports,
and says what the README says it says."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from prefect_api import prefect_env
from readme_blocks import ROOT, PLACEHOLDERS, expected_exit, resolve, sh_block

HEADING = "### Repeats and per-case pass rates"


def test_the_readme_repeats_walk_through_runs(assay_home: Path, tmp_path: Path) -> None:
    lines = sh_block(HEADING)
    assert lines[0].command.startswith("assay fake-vendors --env-file fakes.env") and lines[1].command == ". ./fakes.env"
    env_file = tmp_path / "fakes.env"
    fakes = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", *shlex.split(lines[0].command.rstrip("&"))[1:-1],
                              str(env_file), "--seconds", "900"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists():
            assert fakes.poll() is None and time.monotonic() < deadline, "assay fake-vendors did not start"
            time.sleep(0.1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
        env.update(ASSAY_HOME=str(assay_home), NO_COLOR="1", COLUMNS="160", **prefect_env())
        for line in env_file.read_text().splitlines():
            key, value = line.removeprefix("export ").split("=", 1)
            env[key] = value.strip("'")
        outputs = []
        for line in lines[2:]:
            argv = shlex.split(line.command)
            assert argv[0] == "assay", line
            argv = [resolve(assay_home, a, line) if a in PLACEHOLDERS else a for a in argv[1:]]
            done = subprocess.run([sys.executable, "-m", "assay.flows.cli", *argv], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == expected_exit(line), f"{line}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            outputs.append((line.command, done.stdout))
    finally:
        fakes.terminate()
        fakes.communicate(timeout=30)
    said = dict(outputs)
    verdicts = said["assay verdicts --suite acme-plumbing/chat-repeats"]
    assert "FLAKY" in verdicts and "27/30" in verdicts and "0.77-0.96" in verdicts, verdicts
    assert "sequential test at replay 14" in verdicts
    noise = next(out for cmd, out in outputs if cmd.startswith("assay judge-noise"))
    assert "settles_the_area: judge disagreement" in noise and "nothing stored" in noise
    runs = json.loads(subprocess.run([sys.executable, "-m", "assay.flows.cli", "runs", "list", "--json"], env=env,
                                     capture_output=True, text=True, check=True).stdout)["runs"]
    assert [(r["repeat"], r["budget"], r["case_runs"]) for r in runs] == [(3, None, 6), (10, 30, 44)]
