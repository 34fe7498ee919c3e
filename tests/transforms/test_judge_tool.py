"""tool.*: calls by name and by JSON-typed arguments; and the argument parameters' validation."""

from __future__ import annotations

import json
import math

import pytest
from judge_kit import CALLS, case_run, one, result

from assay.core.mechanisms import ValidationError, validate_params


def test_tool_called_by_name() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.called", {"tool": "check_service_area"}) == result(True, 2.0, None, "assay:tool")
    assert one(run, "tool.called", {"tool": "transfer_call"}) == result(False, 0.0, '"transfer_call" was not called', "assay:tool")


@pytest.mark.parametrize("arguments,count", [
    ({"zip": "60614"}, 1),          # the string, not the number
    ({"zip": 60614}, 1),            # the number, not the string
    ({"zip": 60614.0}, 1),          # numbers compare as numbers
    ({"urgent": True}, 1),
    ({"urgent": "true"}, 0),
    ({"zip": 60614, "urgent": True}, 1),
    ({"zip": "60614", "urgent": True}, 0),
    ({"zip": "6061"}, 0),
])
def test_tool_called_with_arguments_compares_json_typed(arguments: dict, count: int) -> None:
    got = one(case_run(tool_calls=CALLS), "tool.called", {"tool": "check_service_area", "arguments": arguments})
    assert (got["met"], got["value"]) == (count > 0, float(count))
    if not count:
        assert got["reason"] == f'"check_service_area" was not called with arguments {json.dumps(arguments, sort_keys=True)}'


def test_tool_called_arguments_with_quotes_and_backslashes_and_only_top_level_keys() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.called", {"tool": "book_appointment", "arguments": {"note": 'say "hi" \\ bye'}})["value"] == 1.0
    assert one(run, "tool.called", {"tool": "book_appointment", "arguments": {"zip": "60614"}})["value"] == 1.0
    assert one(run, "tool.called", {"tool": "lookup", "arguments": {"zip": "60614"}})["met"] is False


def test_tool_not_called() -> None:
    run = case_run(tool_calls=CALLS)
    assert one(run, "tool.not_called", {"tool": "transfer_call"}) == result(True, 0.0, None, "assay:tool")
    assert one(run, "tool.not_called", {"tool": "book_appointment"}) == result(
        False, 2.0, '"book_appointment" was called 2 time(s)', "assay:tool")
    assert one(run, "tool.not_called", {"tool": "check_service_area", "arguments": {"zip": 60614}})["reason"] == (
        '"check_service_area" was called with arguments {"zip": 60614} 1 time(s)')


def test_tool_checks_without_tool_call_evidence_are_null() -> None:
    for mechanism in ("tool.called", "tool.not_called"):
        assert one(case_run(tool_calls=None), mechanism, {"tool": "x"}) == result(
            None, None, "the case run recorded no tool calls", "assay:tool")


@pytest.mark.parametrize("arguments,message", [
    ({"zip": {"code": "1"}}, "must be a string, number or boolean"),
    ({"zip": None}, "must be a string, number or boolean"),
    ({"zip": [1]}, "must be a string, number or boolean"),
    ({"zip code": "1"}, "is not allowed"),
    ({"1zip": "1"}, "is not allowed"),
    ({"a.b": "1"}, "is not allowed"),
    ({"n": 2**60}, "limited to"),
    ({"n": math.inf}, "finite"),
])
def test_tool_arguments_are_scalars_with_identifier_keys(arguments: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        validate_params("tool.called", {"tool": "t", "arguments": arguments})


def test_tool_arguments_keep_their_json_types() -> None:
    got = validate_params("tool.called", {"tool": "t", "arguments": {"s": "1", "i": 1, "f": 1.5, "b": True}}).arguments
    assert got == {"s": "1", "i": 1, "f": 1.5, "b": True}
    assert [type(v) for v in got.values()] == [str, int, float, bool]

