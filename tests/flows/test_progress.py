"""Progress: a count against the run's cases, a rate and the elapsed time; library logs held back while
a bar is live; `--quiet` turns bars (and Prefect's chatter) off."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest
from command_line import assay, assay_process
from rich.console import Console

from assay.flows import progress
from assay.flows.demo import DEMO
from assay.flows.progress import describe, libraries_held_back, live_count


class Clock:
    """A clock the test moves: the renderer's rate and elapsed time without waiting."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_shows_the_count_against_its_total_and_a_rate() -> None:
    console = Console(record=True, force_terminal=True, width=100)
    clock = Clock()
    with live_count(console, "running acme/main", unit="case runs", get_time=clock) as count:
        count.total(4)
        for _ in range(3):
            clock.now += 2.0
            count.advance(1)
    text = console.export_text()
    assert "running acme/main" in text and "3/4 case runs 0.5/s" in text and "0:00:06" in text, text


def test_a_new_unit_shows_its_own_count_and_rate() -> None:
    """Judging counts case runs, then the judge's answers as they arrive: each with its total and rate."""
    console = Console(record=True, force_terminal=True, width=100)
    clock = Clock()
    with live_count(console, "judging", unit="case runs", get_time=clock) as count:
        count.update(0, 40, "case runs")
        clock.now += 5.0
        count.update(0, 8, "judge answers")
        for n in range(1, 7):
            clock.now += 0.5
            count.update(n, 8, "judge answers")
    text = console.export_text()
    assert "6/8 judge answers 2.0/s" in text, text  # its own clock: 6 answers in 3 s, not in 8 s


def test_a_count_past_its_total_says_so_rather_than_overflowing() -> None:
    assert describe(3, 4, "case runs", 2.0) == "3/4 case runs 1.5/s"
    assert describe(12, 4, "case runs", 4.0, of="cases") == "12 case runs (4 cases) 3.0/s"
    assert describe(0, None, "case runs judged", 0.0) == "0 case runs judged"


def test_library_info_lines_are_held_back_while_a_bar_is_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "_mode", {"quiet": False, "debug": False})
    chatty = logging.getLogger("prefect.task_runs")
    before = chatty.level
    with libraries_held_back():
        assert not chatty.isEnabledFor(logging.INFO)
    assert chatty.level == before
    monkeypatch.setattr(progress, "_mode", {"quiet": False, "debug": True})
    with libraries_held_back():
        assert chatty.level == before  # --debug keeps them


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("progress") / "home"
    assay("init", home=home)
    assay("load", str(DEMO / "bundle.yaml"), home=home)
    return home


def _assay(home: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI as a process in a terminal (rich is told it is one), 100 columns wide: what reaches a terminal
    (bars, and library lines kept off it) is the process's."""
    return assay_process(*args, home=home, columns=100, extra_env={"TTY_COMPATIBLE": "1"}, check=None)


def test_a_run_shows_its_progress_and_no_library_lines_meanwhile(assay_process, loaded: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(loaded, home)
    proc = _assay(home, "run", "acme-plumbing/main-line")
    assert proc.returncode == 0, proc.stderr
    assert "acme-plumbing/main-line" in proc.stdout and "4/4 case runs" in proc.stdout, proc.stdout
    assert "Task run" not in proc.stderr and "Beginning flow run" not in proc.stderr, proc.stderr


def test_quiet_shows_no_progress_and_no_prefect_chatter(assay_process, loaded: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(loaded, home)
    proc = _assay(home, "--quiet", "run", "acme-plumbing/main-line")
    assert proc.returncode == 0, proc.stderr
    assert "/4 case runs" not in proc.stdout and "0 case runs" not in proc.stdout, proc.stdout
    assert "run " in proc.stdout and "completed" in proc.stdout  # the result itself is not chatter
    assert "temporary server" not in proc.stderr, proc.stderr
