"""Templates as a bundle declares them: placeholders filled whole or inside text, checked when loaded, and a
team's facts checked (missing, ill-typed, unknown) before any case is made."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.core.bundle import read_bundle, validate_bundle
from assay.core.bundle_templates import TemplateDef, substitute
from assay.core.errors import BundleError, TemplateError
from assay.core.template_facts import instantiate_all, read_facts

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "examples" / "templates" / "starter-pack.yaml"
FACTS = ROOT / "examples" / "templates" / "riverside-facts.yaml"


def _raw() -> dict[str, Any]:
    return yaml.safe_load(PACK.read_text())


def _templates() -> list[TemplateDef]:
    return read_bundle(PACK).templates


def test_a_whole_value_placeholder_becomes_the_fact_and_one_in_text_its_text_form() -> None:
    body = {"zips": "{{zips}}", "fee": " {{ fee }} ", "said": "we serve {{zips}} for ${{fee}}; open: {{open}}",
            "nested": [{"x": "{{open}}"}], "untouched": 3}
    facts = {"zips": ["97201", "97202"], "fee": 95, "open": True}
    assert substitute(body, facts) == {"zips": ["97201", "97202"], "fee": 95, "said": "we serve 97201, 97202 for $95; open: yes",
                                       "nested": [{"x": True}], "untouched": 3}


def test_the_starter_pack_filled_with_a_teams_facts() -> None:
    cases = instantiate_all("home-services", _templates(), read_facts(FACTS), str(FACTS))
    out_of_area, after_hours, emergency = cases
    assert (out_of_area.key, out_of_area.source_recipe) == ("out-of-area", "out-of-area")
    assert out_of_area.situation.world == {"caller_zip": "97229", "service_zips": ["97201", "97202", "97214", "97215"]}
    assert out_of_area.situation.must_be_told[0] == (
        "97229 is outside the area Riverside Plumbing serves (97201, 97202, 97214, 97215)")
    assert out_of_area.title == "Caller at 97229, outside Riverside Plumbing's service area"
    assert after_hours.situation.world["after_hours_fee_usd"] == 95  # a number stays a number
    assert after_hours.situation.world["job_types"] == ["drain cleaning", "water heater repair"]
    assert emergency.title == "Caller reports a burst pipe at night"  # the placeholder's default
    assert [a.key for a in out_of_area.assertions] == ["declines_out_of_area", "checks_area_with_tool"]


@pytest.mark.parametrize(("edit", "said"), [
    (lambda t: t["case"]["situation"].update(wants="{{budget}}"), "{{budget}} is used in the case but not declared"),
    (lambda t: t["placeholders"].update(spare={"type": "text", "description": "x"}),
     "placeholder 'spare' is declared but the case never uses it"),
    (lambda t: t["placeholders"]["outside_zip"].update(default=97229), "its default 97229 is integer, not text"),
    (lambda t: t["case"].update(key="mine"), "case field 'key' is not allowed"),
    (lambda t: t["case"]["assertions"][0]["params"].update(text="{{business_name}}", role="nobody"),
     "case.assertions.0.params: parameter 'role'"),
    (lambda t: t["placeholders"]["service_zips"].update(type="zip_list"), "service_zips.type"),
    (lambda t: t["case"]["situation"]["world"].update(assistantId="{{business_name}}"),
     "templates[0].case.situation.world.assistantId: 'assistantId' is a vendor mechanism"),
])
def test_a_template_is_checked_when_loaded(edit: Any, said: str) -> None:
    raw = _raw()
    edit(raw["templates"][0])
    with pytest.raises(BundleError) as caught:
        validate_bundle(raw, "pack.yaml")
    assert said in str(caught.value) and "templates[0]" in str(caught.value)


def test_repeated_template_and_group_keys_are_refused() -> None:
    raw = _raw()
    raw["templates"].append(copy.deepcopy(raw["templates"][0]))
    raw["template_groups"][0]["templates"].append("out-of-area")
    with pytest.raises(BundleError) as caught:
        validate_bundle(raw, "pack.yaml")
    text = str(caught.value)
    assert "templates[3].key: duplicate template key 'out-of-area'" in text
    assert "template(s) 'out-of-area' listed twice" in text


def test_missing_ill_typed_and_unknown_facts_are_all_named_with_the_fix() -> None:
    facts = read_facts(FACTS)
    del facts["service_zips"]
    facts["after_hours_fee_usd"] = "ninety-five"
    facts["job_types"] = "drains"
    facts["busines_name"] = facts.pop("business_name")
    with pytest.raises(TemplateError) as caught:
        instantiate_all("home-services", _templates(), facts, "team.yaml")
    problems = caught.value.problems
    assert any("template 'out-of-area' needs fact 'service_zips' (text_list: The ZIP codes the team serves); "
               "add `service_zips:` to team.yaml" in p for p in problems), problems
    assert any("needs fact 'after_hours_fee_usd' (number:" in p and "team.yaml gives text ('ninety-five')" in p
               for p in problems), problems
    assert any("needs fact 'job_types'" in p and "write it as a list of text" in p for p in problems), problems
    assert any("fact 'busines_name' is no placeholder of group 'home-services'; did you mean 'business_name'?" in p
               for p in problems), problems
    assert str(caught.value).endswith("nothing was written")


def test_a_facts_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "facts.yaml"
    path.write_text("- 97201\n")
    with pytest.raises(TemplateError, match="a mapping of fact name to value"):
        read_facts(path)
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(TemplateError, match="duplicate key 'a'"):
        read_facts(path)
    with pytest.raises(TemplateError, match="cannot read"):
        read_facts(tmp_path / "absent.yaml")
