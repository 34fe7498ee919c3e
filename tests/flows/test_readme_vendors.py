"""The README's "Real runners" walk-through, typed as a user would: each `assay` line runs as a process
against the fake vendors `assay fake-vendors` serves, with the environment its env file exports."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from command_line import assay_process
from readme_blocks import ROOT, sh_block


def _commands() -> list[str]:
    return [line.command for line in sh_block("## Real runners")]


def test_the_readme_vendor_walk_through_runs(fake_vendors_process, readme_walk, assay_home: Path,
                                            tmp_path: Path) -> None:
    commands = _commands()
    assert commands[0] == "assay fake-vendors --env-file fakes.env --demo &" and commands[1] == ". ./fakes.env"
    with fake_vendors_process(tmp_path / "fakes.env", seconds=600, cwd=ROOT, args=["--demo"]) as exported:
        outputs = {}
        for command in commands[2:]:
            argv = shlex.split(command)
            assert argv[0] == "assay", command
            done = assay_process(*argv[1:], "--json", home=assay_home, cwd=ROOT, extra_env=exported)
            outputs[command] = json.loads(done.stdout)
    runs = [doc for cmd, doc in outputs.items() if cmd.startswith("assay run ")]
    assert [r["run"]["runner"] for r in runs] == ["vapi_chat", "elevenlabs_chat", "hamming"]
    collected = next(doc for cmd, doc in outputs.items() if cmd.startswith("assay collect"))
    assert runs[-1]["run"]["run_id"] in collected["finalised"]
    agreement = next(doc for cmd, doc in outputs.items() if cmd.startswith("assay judge-agreement"))
    assert agreement["items"] == 4 and agreement["agreement"] == 0.75  # the fake judge errs on one label
