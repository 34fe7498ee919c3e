"""The exit-code contract: verdicts map to codes, and the most severe code wins in the order 82, 80, 81, 83, 0."""

from __future__ import annotations

import itertools

import pytest

from assay.core.errors import AssayError, GateError
from assay.core.exit_codes import ExitCode, most_severe, verdict_code


def test_the_codes_are_the_documented_numbers() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 80, 81, 82, 83]
    assert AssayError.exit_code == GateError.exit_code == ExitCode.FAILURE == 1


@pytest.mark.parametrize(("verdict", "code"), [("pass", 0), ("fail", 80), ("error", 82), (None, 82)])
def test_a_verdict_gates_to_its_code(verdict: str | None, code: int) -> None:
    assert verdict_code(verdict) == code


def test_the_most_severe_wins_whatever_the_order() -> None:
    order = [ExitCode.NO_VERDICT, ExitCode.FAIL, ExitCode.DRIFT, ExitCode.STALE, ExitCode.PASS]
    for n in range(1, len(order) + 1):
        for chosen in itertools.permutations(order, n):
            assert most_severe(chosen) == min(chosen, key=order.index)
    assert most_severe([ExitCode.PASS, ExitCode.FAIL, ExitCode.PASS]) == 80
    assert most_severe([]) == ExitCode.PASS


def test_a_gate_error_names_the_consumer_and_those_that_have_criteria() -> None:
    err = GateError("--gate", ["nobody"], "suite acme/main", ["blueprint_ci", "publish_gate"])
    assert str(err).startswith("--gate: 'nobody' has no criteria on suite acme/main")
    assert "consumers with criteria there: blueprint_ci, publish_gate" in str(err)
    assert isinstance(err, LookupError)
    typo = GateError("--gate", ["publish-gate"], "suite acme/main", ["blueprint_ci", "publish_gate"])
    assert "has no verdict there; did you mean publish_gate?" in str(typo)
