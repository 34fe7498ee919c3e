"""The test suite's own rules: which tier a test lands in, the fast tier's sleep budget, the external tools
that skip on a developer's machine and are required in CI, and the commands that run each tier."""

from __future__ import annotations

import re
import shlex
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import tiers
from command_line import assay, assay_process
from tools import TOOLS, need

ROOT = Path(__file__).resolve().parents[1]


def _item(path: str, *fixtures: str) -> SimpleNamespace:
    return SimpleNamespace(path=ROOT / path, fixturenames=["request", *fixtures])


@pytest.mark.parametrize("fixture", sorted(tiers.E2E_FIXTURES))
def test_a_test_that_uses_a_slow_part_is_end_to_end(fixture: str) -> None:
    reason = tiers.e2e_reason(_item("tests/flows/test_anything.py", "tmp_path", fixture))
    assert reason is not None and fixture in reason


@pytest.mark.parametrize("path", sorted(tiers.E2E_PATHS))
def test_a_test_under_a_slow_path_is_end_to_end(path: str) -> None:
    where = path + "test_x.py" if path.endswith("/") else path
    assert tiers.e2e_reason(_item(where, "tmp_path")) is not None


def test_anything_else_is_fast() -> None:
    assert tiers.e2e_reason(_item("tests/flows/test_anything.py", "tmp_path", "engine", "prefect_harness")) is None
    assert tiers.e2e_reason(_item("tests/faultsy/test_x.py")) is None  # a folder rule matches whole names


def test_every_slow_part_is_a_fixture_that_exists() -> None:
    """A rule naming a fixture nobody defines would never apply."""
    sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
    defined = set(re.findall(r"@pytest\.fixture[^\n]*\n(?:@[^\n]*\n)*def (\w+)\(", sources))
    defined |= set(re.findall(r"@pytest\.fixture\([^)]*name=\"(\w+)\"", sources))
    assert sorted(set(tiers.E2E_FIXTURES) - defined) == []
    for path in tiers.E2E_PATHS:
        assert (ROOT / path).exists(), path


def test_this_test_is_in_the_fast_tier_and_may_not_run_a_process(request: pytest.FixtureRequest) -> None:
    assert not tiers.is_e2e(request.node)
    with pytest.raises(pytest.fail.Exception, match="assay_process"):
        assay_process("--version")


def test_the_in_process_command_line_answers_like_a_process(tmp_path: Path) -> None:
    done = assay("--version", home=tmp_path)
    assert done.stdout.startswith("assay ") and done.stderr == ""
    assert "Usage" in assay("no-such-command", home=tmp_path, check=2).stderr
    listed = assay("runs", "list", home=tmp_path / "empty", check=1)  # a home `assay init` never made
    assert listed.stderr.startswith("error: ") and "assay init" in listed.stderr and listed.stdout == ""


def test_the_sleep_meter_counts_the_tests_threads_not_the_ones_already_running() -> None:
    go, meter_of = threading.Event(), {}

    def earlier_body() -> None:  # a thread of a longer-lived fixture, running before the test began
        go.wait()
        meter_of["meter"].sleep(5)

    earlier = threading.Thread(target=earlier_body)
    earlier.start()
    meter = meter_of["meter"] = tiers.SleepMeter()
    slept: list[float] = []
    meter._real = slept.append  # every sleep still happens; here it is only written down
    meter.sleep(0.25)
    started = threading.Thread(target=meter.sleep, args=(0.5,))
    started.start()
    started.join()
    go.set()
    earlier.join()
    assert sorted(slept) == [0.25, 0.5, 5]
    assert meter.total == 0.75 and sorted(meter.calls) == [0.25, 0.5]


def test_a_fast_test_that_sleeps_past_the_budget_fails(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "SLEEP_BUDGET_SECONDS", 0.05)  # the inner session's (this test keeps its own)
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                          "pytest_plugins = ['tiers']\n")
    pytester.makepyfile(test_sleepy="import time\n\ndef test_sleepy():\n    time.sleep(0.03)\n    time.sleep(0.03)\n\n"
                                    "def test_brief():\n    time.sleep(0.01)\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*slept 0.06 s in 2 calls*may sleep 0.05 s in all*"])


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_missing_tool_skips_unless_required(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = TOOLS[name]
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("ASSAY_TEST_POSTGRES_URL", raising=False)
    monkeypatch.delenv(tool.require_env, raising=False)
    with pytest.raises(pytest.skip.Exception, match=re.escape(tool.install)):
        need(name)
    monkeypatch.setenv(tool.require_env, "1")
    with pytest.raises(pytest.fail.Exception, match=tool.require_env):
        need(name)


def test_ci_requires_every_tool_and_runs_both_tiers() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for tool in TOOLS.values():
        assert f"export {tool.require_env}=1" in ci, f".ci/run must set {tool.require_env}=1"
    assert re.search(r"^make test-all$", ci, re.M), ".ci/run must run `make test-all`"


def _recipe(target: str) -> list[str]:
    """The pytest arguments a Makefile target runs."""
    text = (ROOT / "Makefile").read_text()
    pytest_cmd = re.search(r"^PYTEST := (.+)$", text, re.M).group(1)
    recipe = re.search(rf"^{re.escape(target)}: .*\n\t(.+)$", text, re.M).group(1)
    return shlex.split(recipe.replace("$(PYTEST)", pytest_cmd))


def test_make_test_runs_the_fast_tier_and_make_test_all_everything() -> None:
    fast, everything = _recipe("test"), _recipe("test-all")
    assert fast[-2:] == ["-m", "not e2e"] and fast[:-2] == everything[:len(fast) - 2]
    assert everything.count("-m") == 1  # python -m pytest, no selection
    readme = (ROOT / "README.md").read_text()
    assert "make test " in readme and "make test-all" in readme


def test_no_test_marks_itself_e2e_or_slow() -> None:
    """The tier is decided from what a test uses; `slow` is gone (the e2e rules took its place)."""
    pattern = re.compile(r"mark\.(e2e|slow)\b")
    marked = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
              if p.name not in (Path(__file__).name, "tiers.py") and pattern.search(p.read_text())]
    assert marked == []


def test_the_sleep_meter_is_what_the_fast_tier_sees() -> None:
    """In a fast-tier test ``time.sleep`` is the meter's (the budget is checked at the test's end)."""
    assert getattr(time.sleep, "__self__", None).__class__ is tiers.SleepMeter


def test_a_slow_part_reached_unseen_fails_and_one_named_moves_the_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                          "import pytest\npytest_plugins = ['tiers']\n\n"
                          "@pytest.fixture\ndef moto_server():\n    return 'an S3 server'\n")
    pytester.makepyfile(test_reach="def test_named(moto_server):\n    assert moto_server\n\n"
                                   "def test_unseen(request):\n    request.getfixturevalue('moto_server')\n")
    fast = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not e2e")
    fast.assert_outcomes(failed=1, deselected=1)  # getfixturevalue in the test body: the test fails
    fast.stdout.fnmatch_lines(["*test_unseen asks for moto_server*where the tiers cannot see it*"])
    assert pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-m", "e2e",
                                        "-q").ret == 0  # test_named alone
