"""A criteria spec's allowance of undetermined results and its per-case pass rate: their validation, and a
stored spec that does not change when neither is given (existing criteria versions and spec hashes stay
what they were)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import base, suite, write
from pydantic import ValidationError

from assay.core.bundle import criteria_spec, read_bundle
from assay.core.criteria import CriteriaSpec, PassRate, Sequential
from assay.core.errors import BundleError
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


# --- a per-case pass rate --------------------------------------------------------------------------

DEFAULT_RATE = {"min": 0.9, "confidence": 0.95,
                "sequential": {"healthy": 0.95, "regressed": 0.8, "alpha": 0.05, "beta": 0.1}}


def test_a_bundle_with_a_pass_rate_loads_with_its_defaults(tmp_path: Path) -> None:
    doc = base()
    suite(doc)["criteria"]["nightly"] = {"required": ["resolves"], "pass_rate": {"min": 0.9}}
    suite(doc)["criteria"]["ci"]["pass_rate"] = {"min": 0.8, "confidence": 0.9, "sequential": None}
    criteria = read_bundle(write(tmp_path, doc)).teams[0].suites[0].criteria
    assert criteria_spec(criteria["nightly"]) == {"required": ["resolves"], "threshold": [], "ignore": [],
                                                  "pass_rate": DEFAULT_RATE}
    assert criteria["ci"].pass_rate == PassRate(min=0.8, confidence=0.9, sequential=None)
    assert criteria_spec(criteria["ci"])["pass_rate"] == {"min": 0.8, "confidence": 0.9, "sequential": None}
    assert criteria["nightly"].pass_rate.sequential == Sequential()


def test_a_pass_rate_is_stored_and_makes_a_new_version_and_an_old_spec_is_unchanged() -> None:
    stored = criteria_spec(spec(pass_rate={"min": 0.9}))
    assert stored == {**BEFORE, "pass_rate": DEFAULT_RATE}
    assert content_hash(stored) != content_hash(BEFORE)
    assert "pass_rate" not in criteria_spec(spec()) and "pass_rate" not in spec().model_dump()
    assert content_hash(criteria_spec(spec())) == "736c133a68c40b89d8ce90acd0d0db9023d8d15e7319e9356774d62967646c89"
    reread = CriteriaSpec.model_validate(json.loads(json.dumps(stored)))
    assert reread == CriteriaSpec.model_validate({**BEFORE, "pass_rate": {"min": 0.9}})
    assert criteria_spec(reread) == stored


@pytest.mark.parametrize(("rate", "where", "words"), [
    ({}, "pass_rate.min", "required field 'min' is missing"),
    ({"min": 1}, "pass_rate.min", "min must be greater than 0 and less than 1"),
    ({"min": 0}, "pass_rate.min", "min must be greater than 0 and less than 1"),
    ({"min": 0.9, "confidence": 0.5}, "pass_rate.confidence", "confidence must be greater than 0.5 and less than 1"),
    ({"min": 0.9, "confidence": 1}, "pass_rate.confidence", "confidence must be greater than 0.5 and less than 1"),
    ({"min": 0.9, "sequential": {"healthy": 1.0}}, "pass_rate.sequential.healthy",
     "healthy must be greater than 0 and less than 1"),
    ({"min": 0.9, "sequential": {"regressed": 0.96}}, "pass_rate.sequential",
     "sequential.regressed (0.96) must be less than sequential.healthy (0.95): 0 < regressed < healthy < 1"),
    ({"min": 0.9, "sequential": {"alpha": 0.5}}, "pass_rate.sequential.alpha",
     "alpha must be greater than 0 and less than 0.5"),
    ({"min": 0.9, "sequential": {"beta": 0}}, "pass_rate.sequential.beta",
     "beta must be greater than 0 and less than 0.5"),
    ({"min": 0.9, "level": 0.9}, "pass_rate.level", "unknown field 'level'; allowed here: min, confidence, sequential"),
])
def test_a_bad_pass_rate_is_refused_naming_the_field_and_its_range(tmp_path: Path, rate: dict, where: str,
                                                                   words: str) -> None:
    doc = base()
    suite(doc)["criteria"]["nightly"] = {"required": ["resolves"], "pass_rate": rate}
    with pytest.raises(BundleError) as info:
        read_bundle(write(tmp_path, doc))
    text = str(info.value)
    assert f"criteria.nightly.{where}" in text and words in text, text


def test_a_mistyped_key_is_refused_with_the_nearest_assertion_key() -> None:
    from assay.core.criteria import resolve
    from assay.core.errors import CriteriaError

    typo = CriteriaSpec.model_validate({"required": ["tool_caled"], "threshold": [{"keys": ["ghost", "polite"], "min": 0.5}]})
    with pytest.raises(CriteriaError) as info:
        resolve("ci", typo, ["tool_called", "polite", "books"])
    said = str(info.value)
    assert "required key 'tool_caled' (did you mean 'tool_called'?) matches no assertion" in said
    assert "threshold group 0: key(s) ghost match no assertion" in said  # nothing close: no guess
