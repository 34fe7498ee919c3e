"""Templates in the catalog on both databases: versioned like assertions, applied to a team in one
transaction, and kept apart from the team's own bundle."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from assay.core.errors import BundleError, ImmutableError, TemplateError
from assay.core.template_facts import read_facts
from assay.storage.catalog import tables as t
from assay.storage.catalog.engine import refusing_changes
from assay.storage.catalog.load import load_bundle
from assay.storage.catalog.templates import apply_group, list_templates

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "templates"
TEAM = "riverside-plumbing"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "templates")
    return tmp_path / "templates"


@pytest.fixture
def loaded(engine: sa.Engine, folder: Path) -> sa.Engine:
    load_bundle(engine, folder / "starter-pack.yaml")
    load_bundle(engine, folder / "riverside-plumbing.yaml")
    return engine


def _apply(engine: sa.Engine, folder: Path, suite: str | None = "front-desk") -> dict:
    facts = folder / "riverside-facts.yaml"
    return apply_group(engine, "home-services", TEAM, read_facts(facts), str(facts), suite)


def _members(engine: sa.Engine) -> list[str]:
    with engine.connect() as conn:
        return list(conn.execute(
            sa.select(t.cases.c.case_key).join(t.suite_cases, t.suite_cases.c.case_id == t.cases.c.case_id)
            .order_by(t.suite_cases.c.position)).scalars())


def _rows(engine: sa.Engine, table: sa.Table) -> list[tuple]:
    with engine.connect() as conn:
        return sorted(tuple(map(str, r)) for r in conn.execute(sa.select(table)))


def test_apply_makes_one_case_per_template_with_its_source_recipe(loaded: sa.Engine, folder: Path) -> None:
    body = _apply(loaded, folder)
    assert [(c["case"], c["action"]) for c in body["cases"]] == [
        (f"{TEAM}/out-of-area", "created"), (f"{TEAM}/after-hours-booking", "created"),
        (f"{TEAM}/emergency-transfer", "created")]
    with loaded.connect() as conn:
        made = dict(conn.execute(sa.select(t.cases.c.case_key, t.cases.c.source_recipe_id)
                                 .where(t.cases.c.team_id == TEAM)).all())
        recorded = conn.execute(sa.select(t.template_cases.c.template_key, t.template_cases.c.facts)).all()
    assert made == {"billing-question": None, "out-of-area": "out-of-area",
                    "after-hours-booking": "after-hours-booking", "emergency-transfer": "emergency-transfer"}
    facts = dict(recorded)["out-of-area"]
    assert facts == {"business_name": "Riverside Plumbing", "service_zips": ["97201", "97202", "97214", "97215"],
                     "outside_zip": "97229"}
    assert _members(loaded) == ["billing-question", "out-of-area", "after-hours-booking", "emergency-transfer"]
    listed = list_templates(loaded)
    assert {r["template"]: (r["cases"], r["teams"]) for r in listed["templates"]} == {
        "after-hours-booking": (1, 1), "emergency-transfer": (1, 1), "out-of-area": (1, 1)}


def test_applying_again_changes_nothing(loaded: sa.Engine, folder: Path) -> None:
    _apply(loaded, folder)
    before = {table.name: _rows(loaded, table) for table in (t.cases, t.assertions, t.suite_cases, t.template_cases)}
    again = _apply(loaded, folder)
    assert not again["changed"] and {c["action"] for c in again["cases"]} == {"unchanged"}
    assert {table.name: _rows(loaded, table) for table in (t.cases, t.assertions, t.suite_cases, t.template_cases)} == before


def test_bad_facts_write_nothing(loaded: sa.Engine, folder: Path) -> None:
    facts = folder / "riverside-facts.yaml"
    data = yaml.safe_load(facts.read_text())
    data["service_zips"] = "97201"
    facts.write_text(yaml.safe_dump(data))
    before = _rows(loaded, t.cases)
    with pytest.raises(TemplateError, match="needs fact 'service_zips'"):
        _apply(loaded, folder)
    assert _rows(loaded, t.cases) == before and _rows(loaded, t.template_cases) == []


def test_the_teams_bundle_keeps_template_cases_and_may_not_take_their_keys(loaded: sa.Engine, folder: Path) -> None:
    _apply(loaded, folder)
    bundle = folder / "riverside-plumbing.yaml"
    data = yaml.safe_load(bundle.read_text())
    own = data["teams"][0]["cases"][0]
    data["teams"][0]["cases"].append({**copy.deepcopy(own), "key": "leak-under-sink", "title": "A leak under the sink"})
    data["teams"][0]["suites"][0]["cases"].append("leak-under-sink")
    bundle.write_text(yaml.safe_dump(data, sort_keys=False))
    summary = load_bundle(loaded, bundle)
    assert summary.counts["cases"]["kept"] == 3  # the template-made cases: not in the bundle, left as they are
    assert _members(loaded) == ["billing-question", "leak-under-sink", "out-of-area", "after-hours-booking",
                                "emergency-transfer"]
    data["teams"][0]["cases"].append({**copy.deepcopy(own), "key": "out-of-area"})
    bundle.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BundleError, match="case riverside-plumbing/out-of-area was made from template 'out-of-area'"):
        load_bundle(loaded, bundle)


def test_a_template_never_overwrites_a_bundles_case(loaded: sa.Engine, folder: Path) -> None:
    bundle = folder / "riverside-plumbing.yaml"
    data = yaml.safe_load(bundle.read_text())
    data["teams"][0]["cases"].append({**copy.deepcopy(data["teams"][0]["cases"][0]), "key": "emergency-transfer"})
    bundle.write_text(yaml.safe_dump(data, sort_keys=False))
    load_bundle(loaded, bundle)
    with pytest.raises(TemplateError, match="case riverside-plumbing/emergency-transfer was loaded from a bundle"):
        _apply(loaded, folder)
    assert _rows(loaded, t.template_cases) == []


def test_a_changed_template_is_a_new_version_and_reapplying_updates_its_cases(loaded: sa.Engine, folder: Path) -> None:
    _apply(loaded, folder)
    pack = folder / "starter-pack.yaml"
    data = yaml.safe_load(pack.read_text())
    data["templates"][0]["case"]["situation"]["wants"] = "A visit tomorrow morning"
    pack.write_text(yaml.safe_dump(data, sort_keys=False))
    summary = load_bundle(loaded, pack)
    assert summary.new_versions == ["template out-of-area v2"]
    assert list_templates(loaded)["templates"][2]["behind"] == [f"{TEAM}/out-of-area"]
    again = _apply(loaded, folder)
    assert {c["template"]: c["action"] for c in again["cases"]} == {
        "out-of-area": "updated", "after-hours-booking": "unchanged", "emergency-transfer": "unchanged"}
    assert f"~ case {TEAM}/out-of-area (situation)" in again["cases"][0]["changes"]
    with loaded.connect() as conn:
        wants = conn.execute(sa.select(t.cases.c.content).where(t.cases.c.case_key == "out-of-area")).scalar_one()
    assert wants["situation"]["wants"] == "A visit tomorrow morning"
    assert list_templates(loaded)["templates"][2]["behind"] == []


def test_template_versions_are_immutable(loaded: sa.Engine) -> None:
    with pytest.raises(ImmutableError, match="templates are immutable"):
        with refusing_changes(), loaded.begin() as conn:
            conn.execute(t.templates.update().values(title="rewritten"))


def test_a_group_naming_an_unknown_template_is_refused(engine: sa.Engine, folder: Path) -> None:
    pack = folder / "starter-pack.yaml"
    data = yaml.safe_load(pack.read_text())
    data["template_groups"][0]["templates"].append("gas-leak")
    pack.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(BundleError, match=r"template_groups\[0\].templates\[3\]: template 'gas-leak' is neither"):
        load_bundle(engine, pack)
    assert _rows(engine, t.templates) == []
