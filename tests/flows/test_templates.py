"""Templates and starter packs through the real CLI: the README's block typed as a user would, then on
copies of that workspace: bad facts (nothing written), a changed template (plan names the cases made
from it; re-applying updates them; earlier case runs keep what they executed), and the JSON documents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml
from readme_blocks import ROOT, Typed, assert_walked
from readme_blocks import assay as typed

from assay.core.document_models import validate

HEADING = "## Templates and starter packs"
EXAMPLES = ROOT / "examples" / "templates"
TEAM = "riverside-plumbing"
APPLY = ("template", "apply", "home-services", "--team", TEAM, "--facts")
PACK_CASES = ["out-of-area", "after-hours-booking", "emergency-transfer"]


@pytest.fixture(scope="module")
def walked(readme_walk, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Typed]]:
    home = tmp_path_factory.mktemp("templates") / "home"
    return home, readme_walk(HEADING, home)


@pytest.fixture
def home(walked: tuple[Path, list[Typed]], tmp_path: Path) -> Path:
    """A copy of the walked workspace, beside a checkout of its own, for a test that changes it."""
    copy = tmp_path / "home"
    shutil.copytree(walked[0], copy)
    return copy


def cli(home: Path, *args: str, code: int = 0):
    proc = typed(home, *args)
    assert proc.returncode == code, f"assay {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def doc(home: Path, *args: str) -> dict:
    document = json.loads(cli(home, *args, "--json").stdout)
    validate(document)  # its model, and its committed JSON Schema
    schema = json.loads((ROOT / "docs" / "schemas" / f"{document['schema']}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    return document


def said(done: list[Typed], n: int) -> str:
    return " ".join(done[n][2].stdout.split())


def test_the_readme_block_runs_as_written(walked) -> None:
    home, done = walked
    assert_walked(HEADING, done)
    assert "3 created, 0 updated, 0 unchanged" in said(done, 3)
    assert "0 created, 0 updated, 3 unchanged" in said(done, 4)
    listed = said(done, 5)
    assert listed.count("1 in 1 team(s)") == 3 and "out-of-area 1 business_name," in listed, listed
    assert "4 case(s), 4 case run(s) stored" in said(done, 7)
    # the team's bundle loaded again: the pack's cases are kept, and stay in front-desk after its own case
    cases = {c["key"]: c["suites"] for c in doc(home, "ls", "cases", "--team", TEAM)["cases"]}
    assert cases == dict.fromkeys(["after-hours-booking", "billing-question", "emergency-transfer", "out-of-area"],
                                  ["front-desk"])


def test_cases_carry_the_template_they_came_from(walked) -> None:
    home, _ = walked
    proc = cli(home, "query", f"SELECT case_key, source_recipe_id FROM cases WHERE team_id = '{TEAM}' ORDER BY 1",
               "--format", "json")
    assert {r["case_key"]: r["source_recipe_id"] for r in json.loads(proc.stdout)} == {
        "after-hours-booking": "after-hours-booking", "billing-question": None,
        "emergency-transfer": "emergency-transfer", "out-of-area": "out-of-area"}


def test_reapplying_is_a_no_op_and_the_documents_validate(home: Path) -> None:
    before = doc(home, "template", "ls")
    applied = doc(home, *APPLY, "examples/templates/riverside-facts.yaml", "--suite", f"{TEAM}/front-desk")
    assert applied["changed"] is False and [c["action"] for c in applied["cases"]] == ["unchanged"] * 3
    assert [c["case"] for c in applied["cases"]] == [f"{TEAM}/{k}" for k in PACK_CASES]
    assert doc(home, "template", "ls") == before
    loaded = doc(home, "load", "examples/templates/starter-pack.yaml")
    assert loaded["changed"] is False and loaded["counts"]["templates"]["unchanged"] == 3
    assert before["groups"] == [{"group": "home-services", "title": before["groups"][0]["title"],
                                 "templates": PACK_CASES}]


def test_missing_and_ill_typed_facts_are_refused_and_nothing_is_written(home: Path) -> None:
    facts = yaml.safe_load((EXAMPLES / "riverside-facts.yaml").read_text())
    del facts["outside_zip"]
    facts["service_zips"] = 97201
    bad = home.parent / "bad-facts.yaml"
    bad.write_text(yaml.safe_dump(facts))
    before = doc(home, "ls", "cases", "--team", TEAM)
    proc = cli(home, *APPLY, str(bad), code=1)
    err = " ".join(proc.stderr.split())
    assert f"template 'out-of-area' needs fact 'outside_zip' (text: A ZIP code near the area that the team does not " \
           f"serve); add `outside_zip:` to {bad}" in err, err
    assert f"needs fact 'service_zips' (text_list: The ZIP codes the team serves), and {bad} gives integer (97201)" in err
    assert "nothing was written" in err
    assert doc(home, "ls", "cases", "--team", TEAM) == before


def test_a_changed_template_is_planned_then_reapplied(home: Path) -> None:
    pack = yaml.safe_load((EXAMPLES / "starter-pack.yaml").read_text())
    pack["templates"][0]["case"]["situation"]["wants"] = "A visit first thing tomorrow"
    changed = home.parent / "starter-pack.yaml"
    changed.write_text(yaml.safe_dump(pack, sort_keys=False))

    planned = " ".join(cli(home, "plan", str(changed)).stdout.split())
    assert (f"template out-of-area changed (v1 -> v2): 1 case(s) in 1 team(s) were made from it ({TEAM}/out-of-area); "
            f"they keep their content until `assay template apply home-services --team {TEAM} --facts FILE` "
            "re-applies it") in planned, planned
    plan = doc(home, "plan", str(changed))
    assert [(p["template"], p["from_version"], p["to_version"], p["cases"], p["groups"]) for p in plan["templates"]] == [
        ("out-of-area", 1, 2, [f"{TEAM}/out-of-area"], ["home-services"])]

    cli(home, "load", str(changed))
    rows = {r["template"]: r for r in doc(home, "template", "ls")["templates"]}
    assert rows["out-of-area"]["version"] == 2 and rows["out-of-area"]["behind"] == [f"{TEAM}/out-of-area"]
    applied = doc(home, *APPLY, "examples/templates/riverside-facts.yaml")
    assert [c["action"] for c in applied["cases"]] == ["updated", "unchanged", "unchanged"]
    assert applied["cases"][0]["changes"] == [f"~ case {TEAM}/out-of-area (situation)",
                                              "~ made from template out-of-area (now v2)"]
    assert doc(home, "template", "ls")["templates"][2]["behind"] == []
    # the case is updated; the run made before keeps the content it executed
    now = cli(home, "query", "SELECT content FROM cases WHERE case_key = 'out-of-area'", "--format", "json").stdout
    assert "A visit first thing tomorrow" in now
    snapshot = cli(home, "query", "SELECT case_snapshot FROM case_runs WHERE case_key = 'out-of-area'",
                   "--format", "json").stdout
    assert "A same-day visit for a leaking water heater" in snapshot and "first thing tomorrow" not in snapshot


def test_a_bundle_may_not_take_a_template_cases_key(home: Path) -> None:
    folder = home.parent / "team"
    shutil.copytree(EXAMPLES, folder)
    bundle = yaml.safe_load((folder / "riverside-plumbing.yaml").read_text())
    mine = json.loads(json.dumps(bundle["teams"][0]["cases"][0]))
    bundle["teams"][0]["cases"].append({**mine, "key": "out-of-area"})
    (folder / "riverside-plumbing.yaml").write_text(yaml.safe_dump(bundle, sort_keys=False))
    proc = cli(home, "load", str(folder / "riverside-plumbing.yaml"), code=1)
    assert f"case {TEAM}/out-of-area was made from template 'out-of-area' by `assay template apply`" in \
        " ".join(proc.stderr.split())
