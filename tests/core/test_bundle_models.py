"""Reading and validating bundles: the format, and every bad-input rule with its message."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from factories import CONFIG, Mutation, append_at, base, case, delete_at, set_at, suite, write

from assay.core.bundle import Bundle, criteria_spec, read_bundle
from assay.core.errors import BundleError
from assay.core.mechanisms import MECHANISMS


def problems_of(tmp_path: Path, doc: Any, name: str = "bundle.yaml") -> BundleError:
    path = write(tmp_path, doc, name)
    with pytest.raises(BundleError) as caught:
        read_bundle(path)
    assert caught.value.file == str(path)
    assert all(line.startswith(f"{path}: ") for line in str(caught.value).splitlines())
    return caught.value


# --- a good bundle -------------------------------------------------------------------------------


def test_reads_a_complete_bundle(tmp_path: Path) -> None:
    path = write(tmp_path, base())
    bundle = read_bundle(path)
    assert bundle.file == str(path)
    assert [c.key for c in bundle.consumers] == ["ci", "nightly"]
    acme = bundle.teams[0]
    assert [c.key for c in acme.cases] == ["outside-area", "burst-pipe", "reschedule"]
    assert acme.cases[0].source_recipe == "outside-area"
    assert acme.cases[0].content() == {
        "title": "Caller outside the service area",
        "situation": {
            "caller": "Dana, homeowner",
            "wants": "A same-day repair",
            "must_be_told": ["The address is not served"],
            "world": {"caller_zip": "60827", "heater_model": "XE40", "zips": [{"zip": "60601"}]},
        },
    }
    main, recorded = acme.suites
    assert main.resolved_target.kind == "config"
    assert main.resolved_target.target == {"config": CONFIG}
    calls = tmp_path / "calls" / "recorded.jsonl"
    assert recorded.resolved_target.kind == "call_set"
    assert recorded.resolved_target.target == {
        "call_set": {"path": str(calls.resolve()), "sha256": hashlib.sha256(calls.read_bytes()).hexdigest()}
    }
    assert criteria_spec(main.criteria["ci"]) == {
        "required": ["area_tool", "declines"],
        "threshold": [],
        "ignore": ["hours"],
    }


def test_json_reads_like_yaml(tmp_path: Path) -> None:
    from_yaml = read_bundle(write(tmp_path, base()))
    from_json = read_bundle(write(tmp_path, base(), "bundle.json"))
    assert from_json.model_dump() == from_yaml.model_dump()
    assert from_json.teams[0].suites[0].resolved_target == from_yaml.teams[0].suites[0].resolved_target


def test_stored_assertion_drops_defaults_so_spelling_one_out_is_no_change() -> None:
    from assay.core.bundle import AssertionDef

    terse = AssertionDef(key="a", mechanism="transcript.contains", params={"text": "x"})
    spelled = AssertionDef(key="a", mechanism="transcript.contains", params={"text": "x", "case_insensitive": False})
    reworded = AssertionDef(key="a", mechanism="transcript.contains", params={"text": "x"}, description="new words")
    assert terse.stored() == {
        "mechanism": "transcript.contains",
        "params": {"text": "x"},
        "role": None,
        "description": "",
    }
    assert terse.content_hash == spelled.content_hash != reworded.content_hash


def test_criteria_order_does_not_change_the_stored_spec(tmp_path: Path) -> None:
    doc = base()
    suite(doc)["criteria"]["ci"]["required"] = ["declines", "area_tool"]
    a = read_bundle(write(tmp_path, base())).teams[0].suites[0].criteria["ci"]
    b = read_bundle(write(tmp_path, doc)).teams[0].suites[0].criteria["ci"]
    assert criteria_spec(a) == criteria_spec(b)


def test_vendor_words_in_values_and_longer_keys_are_situation_not_mechanism(tmp_path: Path) -> None:
    doc = base()
    case(doc)["situation"]["caller"] = "A Vapi sales rep calling about their own water heater model"
    case(doc)["situation"]["world"]["heater_model"] = "Rheem XE40"  # 'model' alone is a mechanism; this is not
    read_bundle(write(tmp_path, doc))


def test_importing_the_bundle_module_stays_light() -> None:
    heavy = ["sqlalchemy", "polars", "duckdb", "prefect", "pyarrow", "alembic"]
    code = f"import sys, assay.core.bundle; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- every rule, its path and its fix ------------------------------------------------------------


VALID = ", ".join(MECHANISMS)
C0 = "teams.0.cases.0"
S0 = "teams.0.suites.0"
RULES: dict[str, tuple[Mutation, str, str]] = {
    # name: (mutation, path in the message, words of the fix)
    "team id": (set_at("teams.0.id", "Acme Plumbing"), "teams[0].id", "not a valid identifier"),
    "case key": (set_at(f"{C0}.key", "Outside/Area"), "teams[0].cases[0].key", "lower-case letters"),
    "suite key": (set_at(f"{S0}.key", "main line"), "teams[0].suites[0].key", "e.g. 'main-line'"),
    "consumer key": (set_at("consumers.1.key", "Nightly Sweep"), "consumers[1].key", "not a valid identifier"),
    "assertion key": (
        set_at(f"{C0}.assertions.0.key", "Declines!"),
        "teams[0].cases[0].assertions[0].key",
        "not a valid identifier",
    ),
    "unknown mechanism": (
        set_at(f"{C0}.assertions.0.mechanism", "transcript.contians"),
        "teams[0].cases[0].assertions[0].mechanism",
        f"did you mean 'transcript.contains'? valid mechanisms: {VALID}",
    ),
    "missing param": (
        set_at(f"{S0}.assertions.1.params", {}),
        "teams[0].suites[0].assertions[1].params.tool",
        "structural.tool_attached needs parameter 'tool'",
    ),
    "unknown param": (
        set_at(f"{S0}.assertions.1.params", {"tool": "x", "tools": ["y"]}),
        "teams[0].suites[0].assertions[1].params.tools",
        "unknown parameter 'tools' for structural.tool_attached; its parameters: tool",
    ),
    "param out of range": (
        set_at("teams.0.suites.1.assertions.0.params", {"max": -1}),
        "teams[0].suites[1].assertions[0].params.max",
        "parameter 'max' of transcript.max_turns: Input should be greater than or equal to 0",
    ),
    "regex that does not compile": (
        set_at(f"{C0}.assertions.0", {"key": "r", "mechanism": "transcript.regex", "params": {"text": "(book"}}),
        "teams[0].cases[0].assertions[0].params.text",
        "the regular expression '(book'",
    ),
    "vendor key in situation": (
        set_at(f"{C0}.situation.platform", "vapi"),
        "teams[0].cases[0].situation.platform",
        "'platform' is a vendor mechanism; a case names a situation, never how it runs — remove it "
        "(the runner is chosen at run time: assay run --runner)",
    ),
    "vendor key deep in the world": (
        set_at(f"{C0}.situation.world.zips.0.assistantId", "asst_123"),
        "teams[0].cases[0].situation.world.zips[0].assistantId",
        "'assistantId' is a vendor mechanism",
    ),
    "vendor key on a case": (set_at(f"{C0}.squad_id", "sq_1"), "teams[0].cases[0].squad_id", "remove it"),
    "vendor key on a suite": (
        set_at(f"{S0}.assistantOverrides", {}),
        "teams[0].suites[0].assistantOverrides",
        "a suite names its cases and its target, never how it runs",
    ),
    "vendor key in a target": (
        set_at(f"{S0}.target.provider", "vapi"),
        "teams[0].suites[0].target.provider",
        "assay run --runner",
    ),
    "target with both": (
        set_at(f"{S0}.target", {"config": "configs/main.json", "call_set": "calls/recorded.jsonl"}),
        "teams[0].suites[0].target",
        "exactly one of 'config'",
    ),
    "target with neither": (set_at(f"{S0}.target", {}), "teams[0].suites[0].target", "found neither"),
    "missing config file": (
        set_at(f"{S0}.target", {"config": "configs/nope.json"}),
        "teams[0].suites[0].target.config",
        "configs/nope.json does not exist; target paths are relative to the bundle's folder",
    ),
    "missing call set": (
        set_at("teams.0.suites.1.target", {"call_set": "calls/nope.jsonl"}),
        "teams[0].suites[1].target.call_set",
        "calls/nope.jsonl does not exist",
    ),
    "config that is not an object": (
        set_at(f"{S0}.target", {"config": "calls/recorded.jsonl"}),
        "teams[0].suites[0].target.config",
        "is not valid JSON",
    ),
    "suite names a case of no team": (
        set_at(f"{S0}.cases", ["outside-area", "flooded-basement"]),
        "teams[0].suites[0].cases[1]",
        "'flooded-basement' is not a case of team 'acme' (its cases: outside-area, burst-pipe, reschedule)",
    ),
    "suite with no cases": (set_at(f"{S0}.cases", []), "teams[0].suites[0].cases", "at least 1 item"),
    "duplicate case key": (
        set_at("teams.0.cases.1.key", "outside-area"),
        "teams[0].cases[1].key",
        "duplicate case key 'outside-area' in team 'acme' (first at teams[0].cases[0].key)",
    ),
    "duplicate suite key": (
        set_at("teams.0.suites.1.key", "main-line"),
        "teams[0].suites[1].key",
        "duplicate suite key",
    ),
    "duplicate case assertion key": (
        append_at(
            f"{C0}.assertions", {"key": "declines", "mechanism": "transcript.contains", "params": {"text": "no"}}
        ),
        "teams[0].cases[0].assertions[1].key",
        "duplicate assertion key 'declines' on case 'outside-area'",
    ),
    "duplicate suite assertion key": (
        append_at(f"{S0}.assertions", {"key": "hours", "mechanism": "structural.variables_resolve"}),
        "teams[0].suites[0].assertions[3].key",
        "duplicate assertion key 'hours' on suite 'main-line'",
    ),
    "duplicate consumer": (append_at("consumers", {"key": "ci"}), "consumers[2].key", "duplicate consumer key 'ci'"),
    "duplicate team": (
        lambda doc: doc["teams"].append(copy.deepcopy(doc["teams"][0])),
        "teams[1].id",
        "duplicate team id 'acme'",
    ),
    "case twice in a suite": (
        set_at(f"{S0}.cases", ["outside-area", "outside-area"]),
        "teams[0].suites[0].cases[1]",
        "duplicate case 'outside-area'",
    ),
    "criteria required key matches nothing": (
        set_at(f"{S0}.criteria.ci.required", ["area_tool", "no_raw_liquid"]),
        "teams[0].suites[0].criteria.ci.required[1]",
        "'no_raw_liquid' matches no assertion of suite 'main-line' (its assertion keys: area_tool, declines, hours, resolves)",
    ),
    "criteria key of a case outside the suite": (
        set_at("teams.0.suites.1.criteria.ci.required", ["short", "area_tool"]),
        "teams[0].suites[1].criteria.ci.required[1]",
        "'area_tool' matches no assertion of suite 'recorded'",
    ),
    "criteria key mistyped": (
        set_at(f"{S0}.criteria.ci.required", ["area_tol"]),
        "teams[0].suites[0].criteria.ci.required[0]",
        "'area_tol' (did you mean 'area_tool'?) matches no assertion of suite 'main-line'",
    ),
    "criteria threshold key matches nothing": (
        set_at(f"{S0}.criteria.nightly.threshold.0.keys", ["resolves", "ghost"]),
        "teams[0].suites[0].criteria.nightly.threshold[0].keys[1]",
        "'ghost' matches no assertion",
    ),
    "criteria ignore key matches nothing": (
        set_at(f"{S0}.criteria.ci.ignore", ["ghost"]),
        "teams[0].suites[0].criteria.ci.ignore[0]",
        "remove it from the criteria",
    ),
    "criteria min above 1": (
        set_at(f"{S0}.criteria.nightly.threshold.0.min", 1.5),
        "teams[0].suites[0].criteria.nightly.threshold[0].min",
        "less than or equal to 1",
    ),
    "criteria min below 0": (
        set_at(f"{S0}.criteria.nightly.threshold.0.min", -0.1),
        "teams[0].suites[0].criteria.nightly.threshold[0].min",
        "greater than or equal to 0",
    ),
    "criteria empty threshold group": (
        set_at(f"{S0}.criteria.nightly.threshold.0.keys", []),
        "teams[0].suites[0].criteria.nightly.threshold[0].keys",
        "at least 1 item",
    ),
    "criteria required and ignored": (
        set_at(f"{S0}.criteria.ci.ignore", ["area_tool"]),
        "teams[0].suites[0].criteria.ci",
        "keys both required and ignored: area_tool",
    ),
    "criteria ignored and in a threshold": (
        set_at(f"{S0}.criteria.nightly.ignore", ["hours"]),
        "teams[0].suites[0].criteria.nightly.ignore[0]",
        "both ignored and counted in a threshold group",
    ),
    "criteria that could never fail": (
        set_at(f"{S0}.criteria.nightly", {"ignore": ["hours"]}),
        "teams[0].suites[0].criteria.nightly",
        "names no required key and no threshold group",
    ),
    "criteria unknown field": (
        set_at(f"{S0}.criteria.ci.requires", ["x"]),
        "teams[0].suites[0].criteria.ci.requires",
        "unknown field 'requires'; allowed here: required, threshold, ignore",
    ),
    "unknown field": (
        set_at(f"{C0}.descripton", "x"),
        "teams[0].cases[0].descripton",
        "unknown field 'descripton'; allowed here: key, title, source_recipe, situation, assertions",
    ),
    "missing field": (
        delete_at(f"{C0}.title"),
        "teams[0].cases[0].title",
        "required field 'title' is missing (One line naming",
    ),
    "wrong type": (
        set_at(f"{C0}.situation.must_be_told", "the address"),
        "teams[0].cases[0].situation.must_be_told",
        "valid list",
    ),
    "unknown schema": (set_at("schema", "assay.bundle/v2"), "schema", "known: assay.bundle/v1"),
    "missing schema": (delete_at("schema"), "schema", "start the file with `schema: assay.bundle/v1`"),
}


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_names_file_path_and_fix(tmp_path: Path, rule: str) -> None:
    mutate, where, fix = RULES[rule]
    doc = base()
    mutate(doc)
    error = problems_of(tmp_path, doc)
    lines = str(error).splitlines()
    assert any(f": {where}: " in line and fix in line for line in lines), f"no line at {where} with {fix!r}:\n{error}"


VENDOR_SPELLINGS = [
    "platform",
    "provider",
    "vendor",
    "model",
    "llm",
    "voice",
    "voice_id",
    "voiceId",
    "squad",
    "squad_id",
    "squadId",
    "assistant_id",
    "assistantId",
    "agent_id",
    "agentId",
    "phone_number",
    "phone_numbers",
    "phoneNumbers",
    "assistantOverrides",
    "variableValues",
    "simulation_specification",
    "testConfigurations",
    "vapi",
    "elevenlabs",
    "ElevenLabs",
    "hamming",
    "vapi_assistant",
    "elevenLabsVoice",
]


@pytest.mark.parametrize("key", VENDOR_SPELLINGS)
def test_every_vendor_mechanism_is_refused_in_a_situation(tmp_path: Path, key: str) -> None:
    doc = base()
    case(doc, 1)["situation"][key] = "x"
    error = problems_of(tmp_path, doc)
    assert error.problems == [
        (
            f"teams[0].cases[1].situation.{key}",
            f"{key!r} is a vendor mechanism; a case names a situation, never how it runs — remove it "
            "(the runner is chosen at run time: assay run --runner)",
        )
    ]


@pytest.mark.parametrize("where", ["case", "suite", "target"])
@pytest.mark.parametrize("key", ["platform", "squadId", "assistant_id", "vapi_config", "phone_number", "model"])
def test_the_definitions_structure_refuses_vendor_keys(tmp_path: Path, where: str, key: str) -> None:
    doc = base()
    owner = {"case": case(doc), "suite": suite(doc), "target": suite(doc)["target"]}[where]
    owner[key] = "x"
    at = {"case": "teams[0].cases[0]", "suite": "teams[0].suites[0]", "target": "teams[0].suites[0].target"}[where]
    assert [where for where, _ in problems_of(tmp_path, doc).problems] == [f"{at}.{key}"]


FACTS = {  # ordinary words that name facts of the situation's world, not how a test runs
    "panel": {"model": "Carrier 59TP6", "serial": "X123"},
    "phone_number": "+1 312 555 0142",
    "caller_phone_numbers": ["+1 773 555 0110"],
    "insurance": {"provider": "Acme Mutual", "platform": "web portal"},
    "technicians": [{"name": "Ray", "agent_id": "T-7", "voice": "hoarse"}],
    "llm": "the caller mentions a chatbot", "vendor": "Rheem",
}


def test_the_worlds_facts_are_not_policed(tmp_path: Path) -> None:
    doc = base()
    case(doc)["situation"]["world"] = FACTS
    loaded = read_bundle(write(tmp_path, doc))
    assert loaded.teams[0].cases[0].situation.world == FACTS


@pytest.mark.parametrize("key", ["assistantId", "squad_id", "assistantOverrides", "variableValues",
                                 "simulation_specification", "testConfigurations", "vapi_config", "elevenLabsAgent",
                                 "hamming"])
def test_a_vendors_request_fields_and_names_are_refused_even_among_the_facts(tmp_path: Path, key: str) -> None:
    doc = base()
    case(doc)["situation"]["world"] = {"panel": {"model": "X", "parts": [{key: "x"}]}}
    assert problems_of(tmp_path, doc).problems == [(
        f"teams[0].cases[0].situation.world.panel.parts[0].{key}",
        f"{key!r} is a vendor mechanism; the world holds the situation's facts, never how it runs — remove it "
        "(the runner is chosen at run time: assay run --runner)",
    )]


def test_a_vendor_key_is_reported_once_not_also_as_an_unknown_field(tmp_path: Path) -> None:
    doc = base()
    case(doc)["situation"]["voice"] = "alloy"
    assert [where for where, _ in problems_of(tmp_path, doc).problems] == ["teams[0].cases[0].situation.voice"]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    doc = base()
    for rule in (
        "team id",
        "regex that does not compile",
        "unknown param",
        "vendor key in situation",
        "missing config file",
        "suite names a case of no team",
        "duplicate suite assertion key",
        "criteria ignore key matches nothing",
    ):
        RULES[rule][0](doc)
    where = [w for w, _ in problems_of(tmp_path, doc).problems]
    assert set(where) >= {
        "teams[0].id",
        "teams[0].cases[0].assertions[0].params.text",
        "teams[0].suites[0].assertions[1].params.tools",
        "teams[0].cases[0].situation.platform",
        "teams[0].suites[0].target.config",
        "teams[0].suites[0].cases[1]",
        "teams[0].suites[0].assertions[3].key",
        "teams[0].suites[0].criteria.ci.ignore[0]",
    }


def test_duplicate_yaml_keys_are_refused_not_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, base())
    text = path.read_text().replace("  name: Acme Plumbing\n", "  name: Acme Plumbing\n  name: Acme Heating\n", 1)
    path.write_text(text)
    with pytest.raises(BundleError, match=r"line \d+, column \d+: duplicate key 'name' \(first on line \d+\)"):
        read_bundle(path)


def test_duplicate_json_keys_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, base(), "bundle.json")
    path.write_text(path.read_text().replace('"name": "Acme Plumbing"', '"name": "Acme Plumbing", "name": "Other"', 1))
    with pytest.raises(BundleError, match="duplicate key 'name'"):
        read_bundle(path)


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("bundle.yaml", "schema: assay.bundle/v1\nteams: [\n", "not valid YAML: line"),
        ("bundle.json", '{"schema": "assay.bundle/v1",', "not valid JSON: line 1"),
        ("bundle.yaml", "- just\n- a list\n", "a bundle is a mapping"),
        ("bundle.toml", "schema = 1", "unknown extension '.toml'; a bundle is a .yaml, .yml or .json file"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BundleError, match=message) as caught:
        read_bundle(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_missing_bundle_names_the_path_tried(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=f"no such file \\(tried {tmp_path / 'nope.yaml'}\\)"):
        read_bundle(tmp_path / "nope.yaml")


def test_undeclared_consumers_are_left_to_the_catalog(tmp_path: Path) -> None:
    doc = base()
    doc["consumers"] = []
    bundle = read_bundle(write(tmp_path, doc))  # whether 'ci' exists is checked at plan time
    assert isinstance(bundle, Bundle) and "ci" in bundle.teams[0].suites[0].criteria


def test_a_repeat_plan_defaults_to_ten_replays_and_a_budget_of_sixty() -> None:
    from pydantic import ValidationError

    from assay.core.bundle_models import RepeatPlan

    assert RepeatPlan().model_dump() == {"count": 10, "budget": 60}
    assert RepeatPlan(count=3, budget=None).budget is None  # no escalation
    with pytest.raises(ValidationError, match=r"budget \(60\) must be at least count \(80\)"):
        RepeatPlan(count=80)
