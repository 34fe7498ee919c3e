"""structural.*: clause present, variables resolve, tool attached, read from the compiled artefact."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judge_kit import CONFIG, assignment, case_run, judged, one, result

from assay.core.compiled import read_artefact


def test_clause_present() -> None:
    run = case_run(artefact=CONFIG)
    assert one(run, "structural.clause_present", {"clause": "Never quote prices"}) == result(True, None, None, "assay:structural")
    assert one(run, "structural.clause_present", {"clause": "never quote prices"}) == result(
        False, None, 'the compiled prompt does not contain the clause "never quote prices"', "assay:structural")
    assert one(run, "structural.clause_present", {"clause": "NEVER QUOTE", "case_insensitive": True})["met"] is True
    assert one(run, "structural.clause_present", {"clause": "refunds", "case_insensitive": True})["reason"] == (
        'the compiled prompt does not contain the clause "refunds" (ignoring case)')


@pytest.mark.parametrize("artefact,reason", [
    (None, "the case run has no compiled artefact"),
    ("{not json", "the compiled artefact is not a JSON object"),
    ("[1, 2]", "the compiled artefact is not a JSON object"),
    ({"name": "x", "variables": {}}, "the compiled artefact has no prompt"),
    ({"name": "x", "prompt": 42}, "the compiled artefact has no prompt"),
])
def test_structural_checks_without_a_usable_artefact_are_null(artefact: Any, reason: str) -> None:
    for mechanism, params in [("structural.clause_present", {"clause": "x"}), ("structural.variables_resolve", {})]:
        assert one(case_run(artefact=artefact), mechanism, params) == result(None, None, reason, "assay:structural")


def test_variables_resolve() -> None:
    assert one(case_run(artefact=CONFIG), "structural.variables_resolve") == result(True, 0.0, None, "assay:structural")
    config = {**CONFIG, "prompt": "{{a}} {{ b }} {{c}} {{a}} {{d}} {{ e }}", "variables": {"a": None, "b": "", "c": 0, "e": "ok"}}
    assert one(case_run(artefact=config), "structural.variables_resolve") == result(
        False, 3.0, "unresolved variables: a, b, d", "assay:structural")
    no_variables = {"name": "x", "prompt": "hi {{who}}"}
    assert one(case_run(artefact=no_variables), "structural.variables_resolve")["reason"] == "unresolved variables: who"
    assert one(case_run(artefact={"prompt": "plain", "variables": []}), "structural.variables_resolve") == result(
        None, None, "the compiled artefact's variables are not an object", "assay:structural")


def test_tool_attached() -> None:
    run = case_run(artefact=CONFIG)
    assert one(run, "structural.tool_attached", {"tool": "book_appointment"}) == result(True, None, None, "assay:structural")
    assert one(run, "structural.tool_attached", {"tool": "transfer_call"}) == result(
        False, None, 'no tool named "transfer_call" is attached; attached: check_service_area, book_appointment',
        "assay:structural")
    assert one(case_run(artefact={"prompt": "p"}), "structural.tool_attached", {"tool": "t"})["reason"] == (
        'no tool named "t" is attached; attached: none')
    assert one(case_run(artefact={"prompt": "p", "tools": "t"}), "structural.tool_attached", {"tool": "t"}) == result(
        None, None, "the compiled artefact's tools are not a list", "assay:structural")


def test_structural_results_are_per_case_run_when_many_share_an_artefact() -> None:
    runs = [case_run(f"c{k}", artefact=CONFIG if k % 2 else {**CONFIG, "tools": []}) for k in range(6)]
    todo = [assignment("structural.tool_attached", {"tool": "check_service_area"}, f"c{k}") for k in range(6)]
    assert judged(runs, todo)["met"].to_list() == [False, True, False, True, False, True]


def test_the_artefact_is_read_part_by_part() -> None:
    nameless = read_artefact(json.dumps({"prompt": "Hi {{ who }} at {{where}}", "variables": {"where": "x"}, "tools": "t"}))
    assert (nameless.prompt, nameless.prompt_problem) == ("Hi {{ who }} at {{where}}", None)  # no name: still a prompt
    assert (nameless.unresolved, nameless.variables_problem) == (("who",), None)
    assert (nameless.tools, nameless.tools_problem) == (None, "the compiled artefact's tools are not a list")
    no_prompt = read_artefact(json.dumps({"tools": [{"name": "a"}, {"name": 1}, "b"], "variables": None}))
    assert (no_prompt.prompt_problem, no_prompt.variables_problem) == ("the compiled artefact has no prompt",) * 2
    assert no_prompt.tools == ("a",)
    assert read_artefact('{"prompt": NaN}').prompt_problem == "the compiled artefact is not a JSON object"
