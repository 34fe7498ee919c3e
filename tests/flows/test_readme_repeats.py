"""The README's "Repeats and per-case pass rates" walk-through, typed as a user would: each `assay` line runs as
a process against the fake vendors `assay fake-vendors` serves, with the environment its env file exports,
and says what the README says it says."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from command_line import assay_process
from readme_blocks import ROOT, PLACEHOLDERS, expected_exit, resolve, sh_block

HEADING = "### Repeats and per-case pass rates"


def test_the_readme_repeats_walk_through_runs(fake_vendors_process, readme_walk, assay_home: Path,
                                              tmp_path: Path) -> None:
    lines = sh_block(HEADING)
    assert lines[0].command == "assay fake-vendors --env-file fakes.env --demo &" and lines[1].command == ". ./fakes.env"
    with fake_vendors_process(tmp_path / "fakes.env", cwd=ROOT, args=["--demo"]) as exported:
        outputs = []
        for line in lines[2:]:
            argv = shlex.split(line.command)
            assert argv[0] == "assay", line
            argv = [resolve(assay_home, a, line) if a in PLACEHOLDERS else a for a in argv[1:]]
            done = assay_process(*argv, home=assay_home, cwd=ROOT, columns=160, extra_env=exported,
                                 check=expected_exit(line), timeout=600)
            outputs.append((line.command, done.stdout))
    said = dict(outputs)
    verdicts = said["assay verdicts --suite acme-plumbing/chat-repeats"]
    assert "FLAKY" in verdicts and "27/30" in verdicts and "0.77-0.96" in verdicts, verdicts
    assert "sequential test at replay 14" in verdicts
    noise = next(out for cmd, out in outputs if cmd.startswith("assay judge-noise"))
    assert "settles_the_area: judge disagreement" in noise and "nothing stored" in noise
    runs = json.loads(assay_process("runs", "list", "--json", home=assay_home).stdout)["runs"]
    assert [(r["repeat"], r["budget"], r["case_runs"]) for r in runs] == [(3, None, 6), (10, 30, 44)]
