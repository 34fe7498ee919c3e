"""Runners named where runs are started: a suite declares its runners (``runners:``), ``assay run`` without
``--runner`` starts one run on each, the nightly sweep too, and scheduled work never falls back to a runner
that cannot evaluate the suite (a conversation suite swept by ``config_check``, every assertion unsupported)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from command_line import assay

from assay.core.exit_codes import most_severe, verdict_code
from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.storage.catalog.runs import list_runs

MAIN, CHAT, RECORDED = "acme-plumbing/main-line", "acme-plumbing/chat-line", "northside-hvac/recorded-calls"
DECLARED = ["config_check", "fixed"]
"""What main-line declares here: two runners that need no vendor, in this order."""


def _variant(root: Path, name: str, suites: dict[str, dict[str, Any]]) -> Path:
    """A copy of the demo bundle beside its configs and calls, with the given fields set on the given suites."""
    demo = root / "demo"
    if not demo.exists():
        shutil.copytree(DEMO, demo)
    raw = yaml.safe_load((demo / "bundle.yaml").read_text())
    for team in raw["teams"]:
        for suite in team["suites"]:
            suite.update(suites.get(f"{team['id']}/{suite['key']}", {}))
    path = demo / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _declaring(root: Path, name: str = "declared.yaml", **extra: dict[str, Any]) -> Path:
    """main-line declares :data:`DECLARED`; chat-line, a conversation, is tagged nightly and declares none."""
    return _variant(root, name, {MAIN: {"runners": DECLARED}, CHAT: {"tags": ["nightly"]}, **extra})


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a workspace (``home``) with :func:`_declaring`'s bundle loaded, and that bundle's demo copy."""
    root = tmp_path_factory.mktemp("runners")
    assay("init", home=root / "home")
    assay("load", str(_declaring(root)), home=root / "home")
    return root


@pytest.fixture(scope="module")
def home(root: Path) -> Path:
    return root / "home"


def _runs(home: Path) -> list[dict[str, Any]]:
    return json.loads(assay("runs", "list", "--json", home=home).stdout)["runs"]


@pytest.mark.parametrize(("runners", "message"), [
    (["fixd"], "unknown runner 'fixd'; did you mean 'fixed'?"),
    (["config_check", "recorded"], "runner 'recorded' cannot play a 'config' target (it accepts call_set)"),
    (["fixed", "fixed"], "duplicate runner(s) 'fixed'; list each runner once"),
])  # fmt: skip
def test_a_runner_that_cannot_play_the_suite_is_refused_at_load(home: Path, tmp_path: Path, runners: list[str],
                                                                message: str) -> None:
    bad = _variant(tmp_path, "bad.yaml", {MAIN: {"runners": runners}})
    err = assay("load", str(bad), home=home, check=1).stderr
    assert "teams[0].suites[0].runners" in err and message in err, err
    assert "config_check" in err or "duplicate" in err, err  # the refusal names the runners that can


def test_declaring_runners_is_an_in_place_edit(root: Path, home: Path) -> None:
    reordered = _declaring(root, "reordered.yaml", **{MAIN: {"runners": ["fixed"]}})
    plan = json.loads(assay("plan", str(reordered), "--json", home=home).stdout)
    assert plan["changes"] == [f"~ suite {MAIN} (runners)"]
    assert {s["suite"]: s["tier"] for s in plan["suites"]}[MAIN] == "none"
    assert json.loads(assay("plan", str(_declaring(root)), "--json", home=home).stdout)["changes"] == []


def test_assay_run_without_runner_runs_each_declared_runner(home: Path) -> None:
    before = {r["run_id"] for r in _runs(home)}
    refused = assay("run", MAIN, "--json", home=home, check=2)
    assert "declares 2 runners (config_check, fixed)" in refused.stderr and "--runner" in refused.stderr
    assert {r["run_id"] for r in _runs(home)} == before  # refused before any run started

    done = assay("run", MAIN, "--gate", "blueprint_ci", home=home, check=None)
    assert f"suite {MAIN} declares 2 runners: one run on each, config_check, fixed" in done.stdout, done.stdout
    new = [r for r in _runs(home) if r["run_id"] not in before]
    assert sorted(r["runner"] for r in new) == DECLARED and all(r["status"] == "completed" for r in new)
    gated = [v for r in new for v in json.loads(assay("verdicts", r["run_id"], "--json", home=home).stdout)["verdicts"]
             if v["consumer"] == "blueprint_ci"]
    assert len(gated) == 2 and done.returncode == most_severe(verdict_code(v["verdict"]) for v in gated)

    one = json.loads(assay("run", MAIN, "--runner", "fixed", "--json", home=home).stdout)
    assert one["run"]["runner"] == "fixed"  # --runner picks one
    undeclared = json.loads(assay("run", CHAT, "--json", home=home).stdout)
    assert undeclared["run"]["runner"] == "config_check"  # declaring none: its target's default, as before


def test_assay_ls_shows_the_runners_a_suite_declares(home: Path) -> None:
    listed = json.loads(assay("ls", "suites", "--json", home=home).stdout)
    runners = {f"{s['team']}/{s['key']}": s["runners"] for s in listed["suites"]}
    assert runners[MAIN] == DECLARED and runners[CHAT] == []
    assert "config_check, fixed" in assay("ls", "suites", home=home).stdout


def test_a_run_of_a_suite_with_several_runners_names_one(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run plays one runner: one asked for without a runner is refused (the run-suite flow runs each instead)."""
    from assay.core.errors import ConfigError
    from assay.flows.workspace import open_workspace

    monkeypatch.setenv("ASSAY_HOME", str(home))
    ws = open_workspace()
    try:
        with pytest.raises(ConfigError, match="declares runners config_check, fixed, and a run plays one"):
            ops.start_run(ws, MAIN)
        assert ops.runners_for(ws, MAIN) == DECLARED and ops.runners_for(ws, MAIN, "fixed") == ["fixed"]
        assert ops.runners_for(ws, RECORDED, scheduled=True) == ["recorded"]  # its default evaluates all of it
    finally:
        ws.close()


def test_the_run_suite_flow_without_a_runner_runs_each_declared_runner(prefect_harness, assay_home: Path,
                                                                      tmp_path: Path) -> None:
    """What the ``run-suite/assay`` deployment does when asked for a suite without a runner."""
    from assay.flows.orchestration import run_suite
    from assay.flows.workspace import open_workspace

    ws = open_workspace(create=True)
    try:
        ops.load(ws, str(_declaring(tmp_path)))
        done = run_suite(MAIN)
        assert [(r["runner"], r["status"]) for r in done["runs"]] == [(name, "completed") for name in DECLARED]
        ran = sorted((r.runner, r.run_id) for r in list_runs(ws.engine))
        assert sorted((r["runner"], r["run_id"]) for r in done["runs"]) == ran  # one run each, nothing more
        assert run_suite(RECORDED)["run"]["runner"] == "recorded"  # one runner: one run, as before
    finally:
        ws.close()


def test_the_sweep_runs_declared_runners_and_refuses_a_conversation_without_any(
    prefect_harness, assay_home: Path, tmp_path: Path
) -> None:
    from assay.flows.orchestration import nightly_sweep
    from assay.flows.workspace import open_workspace

    ws = open_workspace(create=True)
    try:
        ops.load(ws, str(_declaring(tmp_path)))
        swept = nightly_sweep()
        entries = [(s["suite"], s["runner"], s["status"]) for s in swept["suites"]]
        assert entries == [(CHAT, None, "refused"), (MAIN, "config_check", "completed"), (MAIN, "fixed", "completed"),
                           (RECORDED, "recorded", "completed")]
        reason = swept["suites"][0]["reason"]
        assert "declares no runners" in reason and "'config_check' cannot evaluate" in reason, reason
        assert "rubric" in reason and "tool.called" in reason and "runners: [...]" in reason, reason
        assert "vapi_chat" in reason, reason  # the runners that can play it are named
        ran = sorted((f"{r.team_id}/{r.suite_key}", r.runner) for r in list_runs(ws.engine))
        assert ran == [(MAIN, "config_check"), (MAIN, "fixed"), (RECORDED, "recorded")]  # chat-line never ran
        assert [s["rejudged"] is None for s in swept["suites"]] == [False, False, True, False]

        ops.load(ws, str(_declaring(tmp_path, "chat.yaml", **{CHAT: {"tags": ["nightly"], "runners": ["fixed"]}})))
        chat = [s for s in nightly_sweep()["suites"] if s["suite"] == CHAT]
        assert [(s["runner"], s["status"]) for s in chat] == [("fixed", "completed")]  # the runner it declares
    finally:
        ws.close()
