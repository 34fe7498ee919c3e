"""The conformance kit's report: at the end of a session, each runner's declared gaps with their reasons.

A declared gap runs as a strict xfail (see ``test_runner_contract._params``); this summary makes the
list visible even when every test is green, so a gap is never forgotten.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kit import declared_gaps

HERE = Path(__file__).parent
_RUNNERS = pytest.StashKey[set[str]]()


@pytest.hookimpl(trylast=True)  # after ``-k`` and ``-m`` have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Remember which runners the kit's tests were selected for."""
    runners = config.stash.setdefault(_RUNNERS, set())
    for item in items:
        callspec = getattr(item, "callspec", None)
        if item.path.is_relative_to(HERE) and callspec is not None and "runner_name" in callspec.params:
            runners.add(callspec.params["runner_name"])


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One line per declared gap of every runner the kit ran against."""
    runners = sorted(config.stash.get(_RUNNERS, set()))
    if not runners:
        return
    terminalreporter.section("runner conformance: declared gaps (strict xfail)")
    for runner in runners:
        gaps = declared_gaps(runner)
        if not gaps:
            terminalreporter.write_line(f"{runner}: none declared")
        for test, reason in sorted(gaps.items()):
            terminalreporter.write_line(f"{runner}: {test} — {reason}")
