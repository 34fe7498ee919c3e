"""Suite tags and the nightly sweep: tags load, list and plan as an in-place edit; the sweep runs exactly
the suites carrying its tag, goes on past a failing one, and re-judges earlier runs for new assertions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from command_line import assay

from assay.flows import operations as ops
from assay.flows.demo import DEMO, REVISED
from assay.storage.catalog.runs import list_runs
from assay.storage.lake import FileFilter

TAGGED = ["acme-plumbing/main-line", "northside-hvac/recorded-calls"]
"""The demo's suites tagged ``nightly``; ``acme-plumbing/chat-line`` and ``chat-repeats`` carry no tag."""
UNTAGGED = ["acme-plumbing/chat-line", "acme-plumbing/chat-repeats"]


def _retagged(bundle: Path, name: str, tags: dict[str, list[str]]) -> Path:
    """A copy of ``bundle`` beside it (so its targets resolve to the same files) with the given suites' tags."""
    raw = yaml.safe_load(bundle.read_text())
    for team in raw["teams"]:
        for suite in team["suites"]:
            suite["tags"] = tags.get(f"{team['id']}/{suite['key']}", suite.get("tags", []))
    path = bundle.parent / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A workspace with a copy of the demo bundle loaded through the CLI, and that copy's bundle file."""
    root = tmp_path_factory.mktemp("tags")
    bundle = shutil.copytree(DEMO, root / "demo") / "bundle.yaml"
    assay("init", home=root / "home")
    assay("load", str(bundle), home=root / "home")
    return root / "home", bundle


def _suites(home: Path) -> dict[str, list[str]]:
    doc = json.loads(assay("ls", "suites", "--json", home=home).stdout)
    from assay.core.document_models import validate

    validate(doc)
    return {s["suite"]: s["tags"] for s in doc["suites"]}


def test_tags_load_and_show_in_ls(cli_home: tuple[Path, Path]) -> None:
    home, _ = cli_home
    assert _suites(home) == {TAGGED[0]: ["nightly"], TAGGED[1]: ["nightly"], **{u: [] for u in UNTAGGED}}
    text = assay("ls", "suites", home=home, columns=80).stdout
    assert all(len(line) <= 80 for line in text.splitlines()) and "tags" in text.splitlines()[2], text
    assert text.count("nightly") >= 2 + 2, text  # two suites tagged, besides the consumer nightly_sweep twice
    overview = assay("ls", home=home, columns=80).stdout
    assert "tags: nightly" in overview, overview


def test_a_tag_only_change_plans_as_nothing_to_redo_and_loads_in_place(
    cli_home: tuple[Path, Path], tmp_path: Path
) -> None:
    home, bundle = cli_home
    changed = _retagged(bundle, "retagged.yaml", {TAGGED[0]: ["weekly", "nightly"], TAGGED[1]: []})
    plan = json.loads(assay("plan", str(changed), "--json", home=home).stdout)
    assert plan["changes"] == [f"~ suite {TAGGED[0]} (tags)", f"~ suite {TAGGED[1]} (tags)"]
    every = [*TAGGED, *UNTAGGED]
    assert {s["suite"]: s["tier"] for s in plan["suites"]} == dict.fromkeys(every, "none")
    in_place = {s["suite"]: s["in_place"] for s in plan["suites"]}
    assert in_place[TAGGED[0]] == [f"~ suite {TAGGED[0]} (tags)"] and in_place["acme-plumbing/chat-line"] == []
    assert all(c["tier"] == "none" for s in plan["suites"] for c in s["consumers"])
    said = assay("plan", str(changed), home=home, columns=80).stdout
    assert f"in place, nothing to redo: ~ suite {TAGGED[1]} (tags)" in said, said
    assert "re-run" not in said and "re-judge" not in said and "re-score" not in said, said

    mutable = shutil.copytree(home, tmp_path / "home")
    loaded = json.loads(assay("load", str(changed), "--json", home=mutable).stdout)
    assert loaded["counts"]["suites"]["updated"] == 2 and loaded["new_versions"] == []
    assert _suites(mutable)[TAGGED[0]] == ["nightly", "weekly"] and _suites(mutable)[TAGGED[1]] == []
    reordered = _retagged(bundle, "reordered.yaml", {TAGGED[0]: ["nightly", "weekly"], TAGGED[1]: []})
    assert json.loads(assay("plan", str(reordered), "--json", home=mutable).stdout)["changes"] == []


def test_a_tag_given_twice_is_refused(cli_home: tuple[Path, Path]) -> None:
    home, bundle = cli_home
    twice = _retagged(bundle, "twice.yaml", {TAGGED[0]: ["nightly", "nightly"]})
    err = assay("load", str(twice), home=home, check=1).stderr
    assert "teams[0].suites[0].tags" in err and "duplicate tag(s) 'nightly'" in err, err


# --- the sweep, in this process ------------------------------------------------------------------


def _outcomes(ws, run_id: str) -> int:
    return ws.lake.read("outcomes", FileFilter(runs=[run_id])).filter(run_id=run_id).height


def _artifact_rows() -> list[dict]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["nightly-sweep"])),
                                      sort=ArtifactSort.CREATED_DESC, limit=1)
    data = found[0].data
    return json.loads(data) if isinstance(data, str) and data.startswith("[") else data


def test_the_sweep_runs_the_tagged_suites_then_rejudges_their_earlier_runs(prefect_harness, demo_ws) -> None:
    from assay.flows.orchestration import nightly_sweep

    first = nightly_sweep()
    assert [s["suite"] for s in first["suites"]] == TAGGED
    assert [s["status"] for s in first["suites"]] == ["completed", "completed"]
    assert all(s["verdicts"] and s["rejudged"]["runs"] == 0 for s in first["suites"])
    runs = list_runs(demo_ws.engine)
    assert sorted(f"{r.team_id}/{r.suite_key}" for r in runs) == TAGGED  # the untagged chat-line never ran
    earlier = {s["suite"]: s["run_id"] for s in first["suites"]}
    before = {suite: _outcomes(demo_ws, run_id) for suite, run_id in earlier.items()}

    ops.load(demo_ws, str(REVISED))  # a reworded assertion on main-line; a changed situation on northside
    second = nightly_sweep()
    by_suite = {s["suite"]: s for s in second["suites"]}
    assert {s["run_id"] for s in second["suites"]}.isdisjoint(earlier.values())  # tonight's runs are new
    main, northside = by_suite[TAGGED[0]]["rejudged"], by_suite[TAGGED[1]]["rejudged"]
    assert (main["runs"], main["error"]) == (1, None) and main["outcomes"] == before[TAGGED[0]] > 0
    assert _outcomes(demo_ws, earlier[TAGGED[0]]) == 2 * before[TAGGED[0]]  # a new outcome per case run
    assert northside["runs"] == 1 and northside["outcomes"] == 0  # no assertion of its changed
    assert _outcomes(demo_ws, earlier[TAGGED[1]]) == before[TAGGED[1]]
    rows = _artifact_rows()
    assert [(r["suite"], r["new_outcomes"]) for r in rows] == [(TAGGED[0], main["outcomes"]), (TAGGED[1], 0)]


def test_a_failing_suite_does_not_stop_the_others(
    prefect_harness, assay_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.core.errors import ConfigError
    from assay.flows.orchestration import nightly_sweep
    from assay.flows.workspace import open_workspace

    demo = shutil.copytree(DEMO, tmp_path / "demo")
    ws = open_workspace(create=True)
    try:
        ops.load(ws, str(demo / "bundle.yaml"))
        with (demo / "calls" / "northside-recorded.jsonl").open("a") as calls:
            calls.write("\n")  # the call set is no longer the one loaded: its run ends in error
        broken = nightly_sweep()
        assert [(s["suite"], s["status"]) for s in broken["suites"]] == [(TAGGED[0], "completed"), (TAGGED[1], "error")]
        assert "changed since it was loaded" in broken["suites"][1]["reason"]

        real_start = ops.start_run

        def refuse_main_line(ws, suite, *args, **kwargs):
            if suite == TAGGED[0]:
                raise ConfigError(f"suite {suite} cannot start tonight")
            return real_start(ws, suite, *args, **kwargs)

        monkeypatch.setattr(ops, "start_run", refuse_main_line)  # the first suite's subflow raises
        crashed = nightly_sweep()
        first, second = crashed["suites"]
        assert (first["status"], first["run_id"]) == ("failed", None)
        assert first["reason"] == f"ConfigError: suite {TAGGED[0]} cannot start tonight"
        assert second["status"] == "error" and second["run_id"] is not None  # the next suite still ran
        assert len(list_runs(ws.engine)) == 3
    finally:
        ws.close()


def test_a_tag_no_suite_carries_is_a_no_op(prefect_harness, demo_ws) -> None:
    from assay.flows.orchestration import nightly_sweep

    result = nightly_sweep(tag="weekly")
    assert result["suites"] == [] and "no suite is tagged 'weekly'" in result["note"]
    assert list_runs(demo_ws.engine) == []
