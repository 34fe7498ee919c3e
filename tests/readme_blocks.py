"""The README's shell blocks as commands: the one parser for the tests that type them as a user would."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from command_line import assay_process

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Line:
    """One command of a block: where it is in the README, the command, and its comment."""

    number: int
    command: str
    comment: str

    def __str__(self) -> str:
        return f"README.md line {self.number}: {self.command}"


def sh_block(heading: str, readme: Path = README) -> list[Line]:
    """The commands of the first ```sh block under the heading line that starts with ``heading`` (e.g.
    ``## A tour``), each without its ``# comment`` (kept apart); blank and comment-only lines are left out."""
    lines = readme.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    assert start is not None, f"README.md has no heading {heading!r}"
    fence = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "```sh")
    assert not any(re.match(r"#{1,2} ", lines[i]) for i in range(start + 1, fence)), f"no ```sh block under {heading}"
    out = []
    for i in range(fence + 1, len(lines)):
        if lines[i].strip() == "```":
            return out
        found = re.search(r"(?:^|\s)#(?:\s|$)", lines[i])  # a comment: a # standing alone
        command, comment = (lines[i][:found.start()], lines[i][found.end():]) if found else (lines[i], "")
        if command.strip():
            out.append(Line(i + 1, command.strip(), comment.strip()))
    raise AssertionError(f"the ```sh block under {heading} never ends")


# --- typing a block as a user would: each line a process, placeholders resolved -----------------

PLACEHOLDERS = ("CASE_RUN", "RUN_A", "RUN_B", "RUN")
WIDTH = 80


def checkout(home: Path) -> Path:
    """A folder beside ``home`` that looks like the repository root (its entries linked), so the README's
    relative paths resolve while whatever a command writes (a JUnit report, say) lands outside the repository."""
    root = home.parent / "checkout"
    if not root.exists():
        root.mkdir()
        for entry in ROOT.iterdir():
            if not entry.name.startswith("."):
                (root / entry.name).symlink_to(entry)
    return root


def assay(home: Path, *args: str, shared_prefect: bool = True) -> subprocess.CompletedProcess:
    """``assay ARGS`` as a process in ``home``, from a :func:`checkout`, at :data:`WIDTH` columns. Its flows
    report to the tests' shared Prefect server (:mod:`prefect_api`) unless ``shared_prefect`` is false:
    then to the workspace's own server if the block started one, else to a temporary one per command.
    For a test that uses the ``readme_walk`` fixture (the end-to-end tier)."""
    return assay_process(*args, home=home, cwd=checkout(home), columns=WIDTH, check=None,
                         shared_prefect=shared_prefect)


def cli_json(home: Path, *args: str) -> dict:
    proc = assay(home, *args, "--json")
    assert proc.returncode == 0, f"assay {' '.join(args)} --json: {proc.stderr}"
    return json.loads(proc.stdout)


def resolve(home: Path, name: str, line: Line) -> str:
    """The id a placeholder of ``line`` stands for in the workspace as it is now."""
    runs = cli_json(home, "runs", "list")["runs"]
    assert runs, f"{line}: {name} names a run, and the tour has run none yet"
    if name == "RUN":
        return runs[0]["run_id"]
    if name in ("RUN_A", "RUN_B"):
        by_suite: dict[str, list[str]] = {}
        for r in runs:
            by_suite.setdefault(r["suite_id"], []).append(r["run_id"])
        pair = next((ids[:2] for ids in by_suite.values() if len(ids) > 1), [r["run_id"] for r in runs[:2]])
        assert len(pair) == 2, f"{line}: {name} needs two runs; the tour has run one"
        return pair[1] if name == "RUN_A" else pair[0]  # newest first: A is the older
    run = runs[0]["run_id"]
    cases = [c for v in cli_json(home, "verdicts", run, "--cases")["verdicts"] for c in v.get("cases", [])]
    found = [c["case_run_id"] for c in cases if c.get("case_run_id")]
    if not found:
        proc = assay(home, "query", f"SELECT case_run_id FROM case_runs WHERE run_id = '{run}' ORDER BY 1 LIMIT 1",
                     "--format", "json")
        found = [row["case_run_id"] for row in json.loads(proc.stdout)]
    assert found, f"{line}: {name}: run {run} has no case runs"
    return found[0]


def expected_exit(line: Line) -> int:
    """The exit code the line's comment names ("exits 82"), else 0."""
    said = re.search(r"\bexits? (\d+)\b", line.comment)
    return int(said.group(1)) if said else 0


Typed = tuple[Line, list[str], subprocess.CompletedProcess]
"""One line of a block as it ran: the line, its arguments with placeholders resolved, and the process."""


def walk(heading: str, home: Path, shared_prefect: bool = True) -> list[Typed]:
    """Run each line of the block under ``heading`` in ``home``, in order, stopping at the first line that
    exits otherwise than expected (:func:`expected_exit`); ``shared_prefect`` as for :func:`assay`."""
    done = []
    for line in sh_block(heading):
        argv = shlex.split(line.command)
        assert argv[0] == "assay", f"{line}: the block holds only assay commands"
        argv = [resolve(home, a, line) if a in PLACEHOLDERS else a for a in argv[1:]]
        proc = assay(home, *argv, shared_prefect=shared_prefect)
        done.append((line, argv, proc))
        if proc.returncode != expected_exit(line):
            break
    return done


def assert_walked(heading: str, done: list[Typed]) -> None:
    """Every line of the block ran and exited as expected; else name the README line that did not."""
    for line, _, proc in done:
        assert "No such command" not in proc.stderr, f"{line}: no such command\n{proc.stderr}"
        assert proc.returncode == expected_exit(line), (
            f"{line}: exit {proc.returncode}, expected {expected_exit(line)}\n{proc.stdout}\n{proc.stderr}")
    assert len(done) == len(sh_block(heading))


@pytest.fixture(scope="session")
def readme_walk():
    """:func:`walk`: a README block typed line by line as processes, as a user would (end-to-end)."""
    return walk
