"""The README's "Your own assistant, as it is live" block, typed as a user would: a live VAPI assistant (created at
the fake VAPI by the block's own request) imported as a compiled config, a suite run on it and gated with JUnit,
then run again on another model under a named condition."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

from command_line import assay_process
from junitparser import Error, Failure
from junitparser.xunit2 import JUnitXml
from readme_blocks import ROOT, expected_exit, sh_block

HEADING = "### Your own assistant, as it is live"


def test_the_readme_import_walk_through_runs(fake_vendors_process, assay_home: Path, tmp_path: Path) -> None:
    lines = sh_block(HEADING)
    assert lines[0].command.startswith("assay fake-vendors --env-file fakes.env") and lines[1].command == ". ./fakes.env"
    cwd = tmp_path / "checkout"  # the block writes beside the example bundle: a copy, never the repository
    shutil.copytree(ROOT / "examples" / "front-desk", cwd / "examples" / "front-desk")
    done: dict[str, subprocess.CompletedProcess] = {}
    with fake_vendors_process(tmp_path / "fakes.env", seconds=600, cwd=cwd) as exported:
        for line in lines[2:]:
            argv = shlex.split(line.command)
            if argv[0] == "curl":
                proc = subprocess.run(["bash", "-c", line.command], cwd=cwd, env={"PATH": "/usr/bin:/bin", **exported},
                                      capture_output=True, text=True, timeout=60)
            else:
                proc = assay_process(*argv[1:], home=assay_home, cwd=cwd, extra_env=exported, check=None)
            assert proc.returncode == expected_exit(line), f"{line}\n{proc.stdout}\n{proc.stderr}"
            done[argv[1] if argv[0] == "assay" else argv[0]] = proc
            done[line.command] = proc
    created = json.loads(done["curl"].stdout)
    importing = next(line.command for line in lines if line.command.startswith("assay import-config"))
    assert created["id"] in shlex.split(importing), "the README imports the assistant its request created"
    config = json.loads((cwd / "examples" / "front-desk" / "front-desk.json").read_text())
    assert config["model"] == {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0.3, "max_tokens": 250}
    assert config["voice"]["voice_id"] == "sarah" and config["transcriber"]["model"] == "nova-2"
    assert config["imported"]["left_out"] == ["backgroundSound"]
    gated, trial = (done[line.command] for line in lines if line.command.startswith("assay run"))
    report = JUnitXml.fromfile(str(cwd / "front-desk.xml"))  # read as a CI server reads it
    cases = [case for suite in report for case in suite]
    red = [case.name for case in cases if any(isinstance(r, Failure | Error) for r in case.result)]
    assert cases and gated.returncode == 0 and not red, (red, (cwd / "front-desk.xml").read_text())
    record = assay_process("query", "SELECT artefact FROM case_runs ORDER BY started_at", "--format", "json",
                           home=assay_home, cwd=cwd)
    artefacts = [json.loads(row["artefact"]) for row in json.loads(record.stdout)]
    assert "condition" not in artefacts[0] and artefacts[0]["model"]["model"] == "gpt-4o-mini"
    assert artefacts[-1]["condition"] == {"name": "gpt-4.1 trial", "model_asked": "openai/gpt-4.1"}
    assert artefacts[-1]["model"] == {**config["model"], "model": "gpt-4.1"} and trial.returncode == 0
