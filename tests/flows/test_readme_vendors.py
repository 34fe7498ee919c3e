"""The README's "Real runners" walk-through, typed as a user would: each `assay` line runs as a process
against the fake vendors `assay fake-vendors` serves, with the environment its env file exports."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from prefect_api import prefect_env
from readme_blocks import ROOT, sh_block


def _commands() -> list[str]:
    return [line.command for line in sh_block("## Real runners")]


def test_the_readme_vendor_walk_through_runs(assay_home: Path, tmp_path: Path) -> None:
    commands = _commands()
    assert commands[0].startswith("assay fake-vendors --env-file fakes.env") and commands[1] == ". ./fakes.env"
    env_file = tmp_path / "fakes.env"
    fakes = subprocess.Popen([sys.executable, "-m", "assay.flows.cli", *shlex.split(commands[0].rstrip("&"))[1:-1],
                              str(env_file), "--seconds", "600"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not env_file.exists():
            assert fakes.poll() is None and time.monotonic() < deadline, "assay fake-vendors did not start"
            time.sleep(0.1)
        env = dict(os.environ) | prefect_env()
        for line in env_file.read_text().splitlines():
            key, value = line.removeprefix("export ").split("=", 1)
            env[key] = value.strip("'")
        outputs = {}
        for command in commands[2:]:
            argv = shlex.split(command)
            assert argv[0] == "assay", command
            done = subprocess.run([sys.executable, "-m", "assay.flows.cli", *argv[1:], "--json"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{command}: {done.stderr}"
            outputs[command] = json.loads(done.stdout)
    finally:
        fakes.terminate()
        fakes.communicate(timeout=30)
    runs = [doc for cmd, doc in outputs.items() if cmd.startswith("assay run ")]
    assert [r["run"]["runner"] for r in runs] == ["vapi_chat", "elevenlabs_chat", "hamming"]
    collected = next(doc for cmd, doc in outputs.items() if cmd.startswith("assay collect"))
    assert runs[-1]["run"]["run_id"] in collected["finalised"]
    agreement = next(doc for cmd, doc in outputs.items() if cmd.startswith("assay judge-agreement"))
    assert agreement["items"] == 4 and agreement["agreement"] == 0.75  # the fake judge errs on one label
