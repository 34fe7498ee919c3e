"""The exam checks and their mechanisms: one home for the parameters, and the mapping the loader uses."""

from __future__ import annotations

from typing import Any

import pytest

from assay.core.exam import ExamAssertion
from assay.core.exam_checks import CHECK_PARAMS, CHECK_TIERS, CHECKS, mechanism_for
from assay.core.mechanisms import MECHANISMS, family, validate_params

EXAMPLES: dict[str, dict[str, Any]] = {
    "command_passes": {"command": "make test"}, "verify": {}, "file_changed": {"path": "a.py"},
    "file_contains": {"path": "a.py", "text": "x"}, "files_within": {"allow": ["src/**"]},
    "tool_used": {"tool": "Edit"}, "tool_not_used": {"tool": "WebFetch"}, "cap": {"measure": "cost_usd", "max": 1.5},
    "band": {"measure": "turns", "k": 3}, "profile": {"measure": "tool_mix"}, "rubric": {"text": "it works"},
}  # fmt: skip


def test_every_check_has_an_example_and_a_declared_mechanism() -> None:
    assert set(EXAMPLES) == set(CHECKS)
    for check, params in EXAMPLES.items():
        mechanism, stored = mechanism_for(check, params)
        assert mechanism in MECHANISMS
        assert validate_params(mechanism, stored).model_dump(mode="json", exclude_defaults=True) == stored


def test_the_exam_checks_take_their_mechanisms_parameters() -> None:
    for check in CHECKS:
        mechanism, _ = mechanism_for(check, EXAMPLES[check])
        if family(mechanism) == "exam":
            assert mechanism == f"exam.{check}" and CHECK_PARAMS[check] is MECHANISMS[mechanism]
    assert CHECK_PARAMS["tool_used"] is CHECK_PARAMS["tool_not_used"] is MECHANISMS["tool.called"]


def test_checks_outside_the_exam_family_are_mapped() -> None:
    assert mechanism_for("tool_used", {"tool": "Edit"}) == ("tool.called", {"tool": "Edit"})
    assert mechanism_for("tool_not_used", {"tool": "WebFetch", "arguments": {"url": "x"}}) == (
        "tool.not_called", {"tool": "WebFetch", "arguments": {"url": "x"}})
    assert mechanism_for("rubric", {"text": "it works"}) == ("rubric", {"rubric": "it works"})


def test_parameters_are_normalised_and_defaults_dropped() -> None:
    assert mechanism_for("band", {"measure": "turns", "k": 3}) == ("exam.band", {"measure": "turns", "k": 3.0})
    calibrated = {"measure": "turns", "k": 3, "center": 6, "spread": 1.5}
    assert mechanism_for("band", calibrated) == ("exam.band", {"measure": "turns", "k": 3.0, "center": 6.0, "spread": 1.5})
    assert mechanism_for("files_within", {"allow": ("a.py",)}) == ("exam.files_within", {"allow": ["a.py"]})
    assert mechanism_for("verify", {}) == ("exam.verify", {})


def test_bad_parameters_and_unknown_checks_are_refused() -> None:
    with pytest.raises(ValueError, match="'text' is missing; rubric takes: text"):
        mechanism_for("rubric", {"rubric": "x"})
    with pytest.raises(ValueError, match="'command' is not a parameter of verify; its parameters are: none"):
        mechanism_for("verify", {"command": "x"})
    with pytest.raises(ValueError, match="'max'.*finite"):
        mechanism_for("cap", {"measure": "turns", "max": float("inf")})
    with pytest.raises(ValueError, match="give center and spread together"):
        mechanism_for("band", {"measure": "turns", "k": 3, "spread": 1})
    with pytest.raises(KeyError):
        mechanism_for("limit", {})


def test_verify_is_an_outcome_check_without_parameters() -> None:
    assert CHECK_TIERS["verify"] == "outcome"
    assert ExamAssertion(key="verified", tier="outcome", check="verify").params == {}
    with pytest.raises(ValueError, match="belongs to tier 'outcome'"):
        ExamAssertion(key="verified", tier="trajectory", check="verify")
