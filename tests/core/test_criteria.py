"""A criteria spec's allowance of undetermined results: its validation, and a stored spec that does not
change when no allowance is given (existing criteria versions and spec hashes stay what they were)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from assay.core.bundle import criteria_spec
from assay.core.criteria import CriteriaSpec
from assay.core.ids import canonical_json, content_hash

BEFORE = {"required": ["a", "b"], "threshold": [{"keys": ["c", "d"], "min": 0.75}], "ignore": ["e"]}
"""A spec as every build before allowances stored it; its hash was 736c133a..."""


def spec(**extra: object) -> CriteriaSpec:
    return CriteriaSpec.model_validate({"required": ["b", "a"], "threshold": [{"keys": ["d", "c"], "min": 0.75}],
                                        "ignore": ["e"], **extra})


def test_without_an_allowance_the_stored_spec_and_its_hash_are_unchanged() -> None:
    stored = criteria_spec(spec())
    assert canonical_json(stored) == canonical_json(BEFORE)
    assert content_hash(stored) == "736c133a68c40b89d8ce90acd0d0db9023d8d15e7319e9356774d62967646c89"
    assert spec().model_dump() == {**BEFORE, "required": ["b", "a"], "threshold": [{"keys": ["d", "c"], "min": 0.75}]}
    assert CriteriaSpec.model_validate(json.loads(json.dumps(stored))) == CriteriaSpec.model_validate(BEFORE)


@pytest.mark.parametrize("allowance", [{"count": 0}, {"count": 3}, {"ratio": 0.15}, {"ratio": 1}])
def test_an_allowance_is_stored_in_the_form_given_and_makes_a_new_version(allowance: dict) -> None:
    stored = criteria_spec(spec(allow_undetermined=allowance))
    assert stored == {**BEFORE, "allow_undetermined": allowance}
    assert content_hash(stored) != content_hash(BEFORE)
    assert spec(allow_undetermined=allowance).model_dump()["allow_undetermined"] == allowance


@pytest.mark.parametrize(("allowance", "words"), [
    ({}, "exactly one of count"),
    ({"count": 1, "ratio": 0.1}, "exactly one of count"),
    ({"count": -1}, "greater than or equal to 0"),
    ({"count": 1.5}, "valid integer"),
    ({"count": True}, "valid integer"),
    ({"ratio": 1.01}, "less than or equal to 1"),
    ({"ratio": -0.1}, "greater than or equal to 0"),
    ({"share": 0.1}, "Extra inputs are not permitted"),
])
def test_a_malformed_allowance_is_refused_with_the_valid_forms(allowance: dict, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        spec(allow_undetermined=allowance)
    assert words in str(info.value)


def test_the_allowance_reads_as_a_person_would_say_it() -> None:
    assert spec(allow_undetermined={"count": 3}).allow_undetermined.allowed() == "3"
    assert spec(allow_undetermined={"ratio": 0.15}).allow_undetermined.allowed() == "0.15 of the counted results"
