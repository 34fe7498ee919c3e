"""The runner registry reads the ``assay.runners`` entry points: lazily, checked, and a broken plug-in
never takes the built-ins down.

Each test installs small distributions (a ``*.dist-info`` folder and a module) into a temporary folder
put on ``sys.path``, so discovery goes through ``importlib.metadata`` exactly as for a real package.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from assay.core.errors import NotFoundError
from assay.core.names import listed
from assay.core.plugins import (
    ENTRY_POINT_GROUP,
    RunnerPluginError,
    default_runner_for,
    registered,
    runner_class,
    runner_names,
)
from assay.core.runner import Runner

GOOD = '''
from assay.core import Runner, mechanisms_of

class {cls}(Runner):
    name = {name!r}
    mechanisms = mechanisms_of("transcript")
    target_kinds = frozenset({{"config"}})
'''


def install(site: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """Write distribution ``dist`` (version 1.0) declaring ``entry_points`` in the runners group."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"  # escaped as a wheel does: the name ends at '-'
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    for module, source in modules.items():
        (site / f"{module}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on ``sys.path`` for this test's distributions; their modules are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for module in [m for m in sys.modules if m.startswith("plugin_")]:
        del sys.modules[module]


def test_a_plugin_is_listed_without_import_and_loaded_when_asked_for(site: Path) -> None:
    source = GOOD.format(cls="TeamRunner", name="team")
    install(site, "team-runner", {"team": "plugin_team:TeamRunner"}, {"plugin_team": source})
    assert {"config_check", "fixed", "recorded", "team"} <= set(runner_names())
    assert "plugin_team" not in sys.modules
    cls = runner_class("team")
    assert issubclass(cls, Runner) and cls.__module__ == "plugin_team" and cls.known_gaps == {}
    assert registered()["team"] is cls


@pytest.mark.parametrize(
    "entry_point,source,problem",
    [
        ("plugin_bad:Gone", "", "loading it raised AttributeError: module 'plugin_bad' has no attribute 'Gone'"),
        ("plugin_bad:Thing", "raise ImportError('no SDK')", "loading it raised ImportError: no SDK"),
        ("plugin_bad:Thing", "Thing = object", "it gives <class 'object'>, not a subclass of assay.core.runner.Runner"),
        (
            "plugin_bad:Thing",
            GOOD.format(cls="Thing", name="other"),
            "the class declares name 'other'; an entry point's name must be its runner's name",
        ),
        (
            "plugin_bad:Thing",
            GOOD.format(cls="Thing", name="bad") + "    target_kinds = frozenset({'phone'})\n",
            "runner 'bad' declares unknown target kinds ['phone']; known: ['config', 'call_set', 'exam']",
        ),
        (
            "plugin_bad:Thing",
            GOOD.format(cls="Thing", name="bad") + "    mechanisms = frozenset({'vibes.good'})\n",
            "mechanisms must be a non-empty set of known mechanisms; unknown: ['vibes.good']",
        ),
        (
            "plugin_bad:Thing",
            GOOD.format(cls="Thing", name="bad") + "    known_gaps = {'test_x': ''}\n",
            "known_gaps must map conformance test names to non-empty reasons, not {'test_x': ''}",
        ),
    ],
    ids=["missing-attribute", "import-error", "not-a-runner", "wrong-name", "target-kind", "mechanism", "gap-reason"],
)
def test_a_broken_plugin_is_named_when_asked_for_and_left_out_of_the_list(
    site: Path, caplog: pytest.LogCaptureFixture, entry_point: str, source: str, problem: str
) -> None:
    install(site, "bad-runner", {"bad": entry_point}, {"plugin_bad": source})
    with pytest.raises(RunnerPluginError) as caught:
        runner_class("bad")
    error = caught.value
    assert (error.name, error.distribution, error.value) == ("bad", "bad-runner 1.0", entry_point)
    assert error.problem == problem
    assert str(error) == (
        f"runner plug-in 'bad' (entry point bad = {entry_point!r} in group 'assay.runners' of distribution "
        f"bad-runner 1.0) cannot be used: {problem}; fix or uninstall bad-runner 1.0"
    )
    with caplog.at_level(logging.ERROR, logger="assay.core.plugins"):
        found = registered()
        registered()
    assert "bad" not in found and {"config_check", "fixed", "recorded"} <= set(found)
    assert [r.getMessage() for r in caplog.records] == [f"{error} (left out of the registered runners)"]
    assert runner_class("fixed").name == "fixed" and default_runner_for("config") == "config_check"


def test_two_distributions_claiming_one_name_are_refused_by_name(site: Path) -> None:
    source = GOOD.format(cls="TwinRunner", name="twin")
    install(site, "twin-a", {"twin": "plugin_twin_a:TwinRunner"}, {"plugin_twin_a": source})
    install(site, "twin-b", {"twin": "plugin_twin_b:TwinRunner"}, {"plugin_twin_b": source})
    with pytest.raises(RunnerPluginError) as caught:
        runner_class("twin")
    assert caught.value.problem == (
        "twin-a 1.0 (plugin_twin_a:TwinRunner) and twin-b 1.0 (plugin_twin_b:TwinRunner) both declare it; "
        "a runner name is unique among installed packages"
    )
    assert caught.value.distribution == "twin-a 1.0 and twin-b 1.0"
    assert "plugin_twin_a" not in sys.modules and "plugin_twin_b" not in sys.modules


def test_an_unknown_runner_names_the_installed_ones() -> None:
    with pytest.raises(NotFoundError) as caught:
        runner_class("nope")
    assert str(caught.value) == f"no runner 'nope'\nknown runners: {listed(runner_names())}"
    assert {"config_check", "fixed", "recorded"} <= set(runner_names())
    with pytest.raises(NotFoundError) as caught:
        runner_class("recordd")
    assert str(caught.value).startswith("no runner 'recordd'; did you mean recorded?\nknown runners: ")


def test_the_scan_is_kept_until_a_package_is_installed_or_removed(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking again reads no metadata; installing into a folder already scanned, or removing, is seen."""
    import importlib.metadata
    import shutil

    from assay.core import plugins

    scans = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(plugins, "entry_points", lambda **kw: scans.append(kw) or real(**kw))
    before = runner_names()
    assert runner_names() == before and runner_class("recorded").name == "recorded" and len(registered()) >= 3
    assert len(scans) <= 1  # one scan at most (none when this path was scanned already)

    late = GOOD.format(cls="LateRunner", name="late")
    install(site, "late-runner", {"late": "plugin_late:LateRunner"}, {"plugin_late": late})
    moved_on(site)
    assert "late" in runner_names() and runner_class("late").name == "late"
    shutil.rmtree(site / "late_runner-1.0.dist-info")
    moved_on(site)
    assert "late" not in runner_names()


def moved_on(folder: Path) -> None:
    """Give ``folder`` a modification time one second past the last scan's. The file system's clock ticks
    every few milliseconds, and a change in the tick a scan read is seen neither by this cache nor by
    importlib.metadata's own, which is keyed the same way; a package manager's changes are not that close."""
    import os

    stamp = folder.stat().st_mtime_ns + 1_000_000_000
    os.utime(folder, ns=(stamp, stamp))
