"""The conformance kit's report: at the end of a session, each runner's declared gaps with their reasons.

A declared gap runs as a strict xfail (see ``kit.per_runner``); this summary makes the
list visible even when every test is green, so a gap is never forgotten.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit import declared_gaps

HERE = Path(__file__).parent
_RUNNERS = pytest.StashKey[set[str]]()


@pytest.fixture(scope="module", autouse=True)
def fake_vendors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The fake vendors, started once per kit module, and the ``ASSAY_*`` variables that point the vendor
    runners (and their caller simulator) at them; spawned subprocesses inherit them. The judge is left
    unset: the kit is about the runner contract, not judging. The exam runners get their agents the same
    way: the fake harness as ``claude``, and a shell command as the command agent (never a real agent)."""
    from assay.fakes.serve import FAKE_MODEL, environment, running, settings_env

    claude = tmp_path_factory.mktemp("harness") / "claude"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m assay.fakes.harness "$@"\n')
    claude.chmod(0o755)
    with running() as fakes:
        env = {k: v for k, v in settings_env(fakes).items() if not k.startswith("ASSAY_JUDGE_")}
        env |= {"ASSAY_CALLER_BASE_URL": fakes["openai"].url + "/v1", "ASSAY_CALLER_MODEL": FAKE_MODEL,
                "ASSAY_CALLER_API_KEY": fakes["openai"].key, "ASSAY_CLAUDE_BIN": str(claude),
                "ASSAY_EXAM_COMMAND": "sed -i 's/hello/hello, world/' greeting.txt"}
        with environment(env):
            yield fakes


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
