"""The mechanism registry: every mechanism core declares has exactly one registered evaluator, and the
registry refuses what would break that (an undeclared name, a second registration, the wrong parameter
model)."""

from __future__ import annotations

import polars as pl
import pytest

from assay.core.mechanisms import MECHANISMS, TextMatch, ToolCalled, family
from assay.transforms.mechanisms import evaluator_versions, mechanism, registered
from assay.transforms.mechanisms.evidence import Evidence


def test_every_declared_mechanism_has_an_evaluator_and_every_evaluator_a_declaration() -> None:
    declared, found = set(MECHANISMS), set(registered())
    assert not declared - found, f"declared in core without an evaluator: {sorted(declared - found)}"
    assert not found - declared, f"evaluators without a declaration in core: {sorted(found - declared)}"


def test_each_registration_binds_the_declared_model_family_and_a_version() -> None:
    for name, registration in registered().items():
        assert registration.name == name
        assert registration.params is MECHANISMS[name]
        assert registration.family == family(name)
        assert callable(registration.evaluate)
    versions = evaluator_versions()
    assert list(versions) == list(MECHANISMS)  # in core's order
    assert all(isinstance(v, int) and v >= 1 for v in versions.values())
    fixed = {"vendor.evaluation": 3}  # v2: value normalised onto 0-1; v3: a missing evaluation is unsupported
    assert {n: v for n, v in versions.items() if v != 1} == fixed


def test_an_undeclared_name_is_refused() -> None:
    with pytest.raises(ValueError, match="'transcript.vibes' is not declared"):
        mechanism("transcript.vibes", version=1)


def test_a_second_registration_is_refused_and_the_first_kept() -> None:
    first = registered()["transcript.contains"].evaluate

    def again(evidence: Evidence, rows: pl.Series, p: TextMatch, judge: str | None) -> pl.DataFrame:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="'transcript.contains' is already registered by .*transcript.contains"):
        mechanism("transcript.contains", version=2)(again)
    assert registered()["transcript.contains"].evaluate is first


def test_the_wrong_parameter_model_is_refused() -> None:
    def confused(evidence: Evidence, rows: pl.Series, p: ToolCalled, judge: str | None) -> pl.DataFrame:
        raise AssertionError("never called")

    def unannotated(evidence, rows, p, judge):  # type: ignore[no-untyped-def]
        raise AssertionError("never called")

    for evaluator in (confused, unannotated):
        with pytest.raises(TypeError, match="must annotate its parameter p as TextMatch"):
            mechanism("transcript.not_contains", version=1)(evaluator)


@pytest.mark.parametrize("version", [0, -1, True, 1.0, "1"])
def test_a_version_is_a_positive_integer(version: object) -> None:
    with pytest.raises(ValueError, match="version must be a positive integer"):
        mechanism("transcript.contains", version=version)  # type: ignore[arg-type]
