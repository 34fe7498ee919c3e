"""The README's tour, typed as a user would, and the read commands at 80 columns on what it leaves.

Each line of the first ```sh block under "## A tour" runs as a process, in order, in a fresh
ASSAY_HOME, from the repository root. Placeholders are replaced by real ids, resolved from the
workspace at that point: ``RUN`` the newest run; ``RUN_A`` and ``RUN_B`` two runs of one suite (older,
newer) when a suite has two, else the two newest; ``CASE_RUN`` a case run of ``RUN``. A line exits with
the code its comment names ("exits 80"), else 0 (:mod:`readme_blocks`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from readme_blocks import WIDTH, Typed, assay, assert_walked, cli_json

TOUR = "## A tour"


@pytest.fixture(scope="module")
def toured(readme_walk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Typed]]]:
    """A workspace the whole tour ran in (stopping at the first line that exits otherwise than expected),
    with what each line printed."""
    home = tmp_path_factory.mktemp("tour") / "home"  # `assay init` creates it
    try:
        yield home, readme_walk(TOUR, home, shared_prefect=False)  # as written: the tour starts the workspace's server
    finally:  # the tour stops the server it starts; a tour cut short must not leave it running
        assay(home, "server", "stop")


def test_the_readme_tour_runs_as_written(toured) -> None:
    _, done = toured
    assert_walked(TOUR, done)
    said = {line.command.split()[1]: proc.stdout for line, _, proc in done}
    assert said["init"].startswith("ready")
    new_outcomes = re.search(r"(\d+) new outcome", said["rejudge"])
    assert new_outcomes and int(new_outcomes.group(1)) > 0, said["rejudge"]  # the revised bundle was loaded
    assert "re-judge" in said["plan"] and "re-run" in said["plan"], said["plan"]


def _known_ids(home: Path) -> list[str]:
    runs = [r["run_id"] for r in cli_json(home, "runs", "list")["runs"]]
    proc = assay(home, "query", "SELECT case_run_id FROM case_runs", "--format", "json")
    return runs + [row["case_run_id"] for row in json.loads(proc.stdout)]


def test_read_commands_stay_readable_at_80_columns(toured) -> None:
    home, _ = toured
    runs = cli_json(home, "runs", "list")["runs"]
    known = _known_ids(home)
    commands = [("runs", "list"), *(("runs", "show", r["run_id"]) for r in runs),
                *(("verdicts", r["run_id"], "--cases") for r in runs),
                ("verdicts", "--suite", "acme-plumbing/main-line"),
                ("rescore", "acme-plumbing/main-line", "--consumer", "nightly_sweep"),
                ("plan", "flows/demo/revised.yaml"), ("load", "flows/demo/revised.yaml")]
    for args in commands:
        proc = assay(home, *args)
        assert proc.returncode == 0, f"assay {' '.join(args)}: {proc.stderr}"
        out = proc.stdout
        wide = [line for line in out.splitlines() if len(line) > WIDTH]
        assert not wide, f"assay {' '.join(args)}: lines over {WIDTH} columns:\n" + "\n".join(wide)
        assert "…" not in out, f"assay {' '.join(args)} cut something with an ellipsis:\n{out}"
        for token in re.findall(r"(?<![0-9a-z])[0-9a-f]{8,32}(?![0-9a-z])", out):
            matches = [k for k in known if k.startswith(token)]
            assert len(token) >= 12 and len(matches) == 1, (
                f"assay {' '.join(args)}: {token!r} is not a whole id nor a unique prefix of 12+ characters:\n{out}")
    listed = assay(home, "runs", "list").stdout
    for r in runs:
        for name in (r["team_id"], r["suite_key"]):
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", listed), f"{name} is cut in:\n{listed}"
