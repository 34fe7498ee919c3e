"""The two test tiers, told apart by what a test uses; the fast tier's sleep budget; where the time went.

**Tiers.** A test is ``e2e`` when it uses something slow to start or to finish: a fixture named in
:data:`E2E_FIXTURES` anywhere in its fixture closure (``assay`` as a process, a real Prefect server or
worker, Dask, moto, Chromium, ...), or a path in :data:`E2E_PATHS` (failpoint kills, notebooks, plug-in
installs, ...). The marker is applied here, at collection, never by hand: a test that starts using a slow
part moves to the slow tier by itself, and one that reaches such a part where collection cannot see it
(``request.getfixturevalue``) fails, saying so. ``make test`` runs ``-m "not e2e"``; ``make test-all``
(what CI runs) runs everything.

**Sleep budget.** A fast-tier test may sleep at most :data:`SLEEP_BUDGET_SECONDS` in total (``time.sleep``
in the test's own thread and in the threads it starts); past that it errors in its teardown, naming what
it slept. Waiting for a lease or a deadline to pass is a step of an injected clock, not a sleep.

**Where the time went.** At the end of every run, a table of the files by their summed test time (set
up, call and tear down), the slowest first: ``--file-durations=N`` shows N of them (0: all; default 15).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

E2E_FIXTURES: dict[str, str] = {
    "assay_process": "runs the assay program as a process",
    "failpoint_kill": "a process killed at a failpoint, then recovery",
    "process_kill": "a process killed mid-work with SIGKILL, then recovery",
    "slow_vendor": "a fake vendor slower than a lease, in real seconds",
    "readme_walk": "types a README block as a user would, each line a process",
    "fake_vendors_process": "serves the fake vendors from a background assay process",
    "installation": "a production-shaped installation: a Prefect server, deployments and a worker",
    "dask_local_cluster": "a Dask cluster of worker processes",
    "moto_server": "moto's S3 server",
    "s3_lake": "a lake on moto's S3 server",
    "chromium": "headless Chromium",
    "exam_replays": "administers an exam: many replays of a harness, each a process in a git worktree",
    "claude_cli": "runs the real Claude Code CLI (Node) against the scripted model",
    "codex_cli": "runs the real Codex CLI against the scripted model",
}
"""Fixture name -> why a test that uses it (directly or through another fixture) is end-to-end."""

E2E_PATHS: dict[str, str] = {
    "tests/faults/": "failpoint kills: processes killed at named steps, then recovery",
    "tests/test_notebooks.py": "executes the analyst notebooks on a Jupyter kernel",
    "tests/plugins/test_echo_plugin.py": "installs a plug-in package with pip",
}
"""A path under the repository (a folder ending in /, or a file) -> why its tests are end-to-end."""

SLEEP_BUDGET_SECONDS = 0.5

ROOT = Path(__file__).resolve().parents[1]


def e2e_reason(item: pytest.Item) -> str | None:
    """Why ``item`` belongs to the end-to-end tier, or None for the fast tier."""
    used = set(getattr(item, "fixturenames", ()))
    for name, why in E2E_FIXTURES.items():
        if name in used:
            return f"uses {name}: {why}"
    file = item.path.resolve()
    if not file.is_relative_to(ROOT):  # a test file written elsewhere (pytester's)
        return None
    where = file.relative_to(ROOT).as_posix()
    for path, why in E2E_PATHS.items():
        if where == path or (path.endswith("/") and where.startswith(path)):
            return f"{path}: {why}"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: end-to-end; applied by tests/tiers.py from what the test uses, "
                                       "never by hand (make test deselects it, make test-all runs it)")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--file-durations", type=int, default=15, metavar="N",
                     help="list the N test files that took longest (0: every file)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(True for _ in item.iter_markers("e2e")):
            raise pytest.UsageError(f"{item.nodeid} marks itself e2e: the tier is decided by tests/tiers.py "
                                    "from the fixtures and paths a test uses")
        if (why := e2e_reason(item)) is not None:
            item.add_marker(pytest.mark.e2e(reason=why))


def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> None:
    """A fast-tier test that reaches an end-to-end fixture some way collection could not see fails, naming
    the way that can be seen."""
    item = current_item()
    if fixturedef.argname in E2E_FIXTURES and item is not None and not is_e2e(item):
        pytest.fail(f"{item.nodeid} asks for {fixturedef.argname} ({E2E_FIXTURES[fixturedef.argname]}) where "
                    "the tiers cannot see it: name it as an argument of the test or of a fixture it uses "
                    "(tests/tiers.py)", pytrace=False)


# --- the test now running, for the checks of its tier ------------------------------------------------

_current: dict[str, pytest.Item | None] = {"item": None}


def current_item() -> pytest.Item | None:
    """The test now being set up or run in this process, for helpers that must know its tier. None while
    tests are torn down: a longer-lived fixture of other tests may end during any test's teardown."""
    return _current["item"]


def is_e2e(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("e2e") is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    _current["item"] = item
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    _current["item"] = None
    return (yield)


# --- the sleep budget ---------------------------------------------------------------------------------

class SleepMeter:
    """``time.sleep`` counted while a fast-tier test runs: in its thread and in the threads it starts."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls: list[float] = []
        self.where: dict[str, float] = defaultdict(float)
        self._before = set(threading.enumerate()) - {threading.current_thread()}
        self._lock = threading.Lock()
        self._real = time.sleep

    def sleep(self, seconds: float) -> None:
        if threading.current_thread() not in self._before:
            caller = sys._getframe(1)
            with self._lock:
                self.total += seconds
                self.calls.append(seconds)
                self.where[f"{caller.f_code.co_filename}:{caller.f_lineno}"] += seconds
        self._real(seconds)


@pytest.fixture(autouse=True)
def _sleep_budget(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Fail a fast-tier test that sleeps more than :data:`SLEEP_BUDGET_SECONDS` in all."""
    if is_e2e(request.node):
        yield
        return
    meter, budget = SleepMeter(), SLEEP_BUDGET_SECONDS
    monkeypatch.setattr(time, "sleep", meter.sleep)
    yield
    if meter.total > budget:
        largest = ", ".join(f"{s:.2f} s at {w}" for w, s in sorted(meter.where.items(), key=lambda i: -i[1])[:3])
        pytest.fail(f"slept {meter.total:.2f} s in {len(meter.calls)} calls ({largest}); a fast-tier "
                    f"test may sleep {budget} s in all: step an injected clock instead, or use "
                    "what makes a test end-to-end (tests/tiers.py)", pytrace=False)


# --- where the time went --------------------------------------------------------------------------------

_by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    spent = _by_file[report.nodeid.split("::", 1)[0]]
    spent[0] += report.duration
    spent[1] += report.when == "call"


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if not _by_file:
        return
    shown = config.getoption("--file-durations")
    ranked = sorted(_by_file.items(), key=lambda kv: kv[1][0], reverse=True)
    total = sum(seconds for seconds, _ in _by_file.values()) or 1e-9
    title = "time by test file" + (f" (the {shown} slowest of {len(ranked)})" if 0 < shown < len(ranked) else "")
    terminalreporter.section(title)
    terminalreporter.write_line(f"{'seconds':>9} {'share':>6} {'tests':>6}  file")
    for path, (seconds, tests) in ranked[:shown or None]:
        terminalreporter.write_line(f"{seconds:9.1f} {seconds / total:6.1%} {tests:6d}  {path}")
    terminalreporter.write_line(f"{total:9.1f} {1:6.0%} {sum(n for _, n in _by_file.values()):6d}  "
                                f"all {len(ranked)} files (summed over workers)")
