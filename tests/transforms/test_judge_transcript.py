"""transcript.*: text in one turn, regular expressions, turns, latency and cost; and regex parameters."""

from __future__ import annotations

import math

import pytest
from judge_kit import CALL_TRANSCRIPT, case_run, one, result

from assay.core.mechanisms import ValidationError, validate_params


def test_contains() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.contains", {"text": "Refund"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.contains", {"text": "refund"}) == result(False, None, 'no turn contains "refund"', "assay:transcript")
    assert one(run, "transcript.contains", {"text": "refund", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.contains", {"text": "Refund", "role": "agent"}) == result(
        False, None, 'no turn by the agent contains "Refund"', "assay:transcript")
    assert one(run, "transcript.contains", {"text": "REFUND", "role": "caller", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.contains", {"text": "x", "role": "agent", "case_insensitive": True})["reason"] == (
        'no turn by the agent contains "x" (ignoring case)')


def test_text_never_matches_across_turns() -> None:
    run = case_run(transcript=[("agent", "good"), ("caller", "bye")])
    assert one(run, "transcript.contains", {"text": "goodbye"})["met"] is False
    assert one(run, "transcript.contains", {"text": "good\nbye"})["met"] is False
    assert one(run, "transcript.regex", {"text": "good.*bye"})["met"] is False
    assert one(run, "transcript.regex", {"text": r"good[\s\S]bye"})["met"] is False


def test_not_contains() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.not_contains", {"text": "lawyer"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.not_contains", {"text": "sorry", "case_insensitive": True}) == result(
        False, None, 'a turn contains "sorry" (ignoring case)', "assay:transcript")
    assert one(run, "transcript.not_contains", {"text": "Refund", "role": "agent"})["met"] is True


def test_regex_searches_each_turn() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.regex", {"text": r"^I want a \w+\.$"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.regex", {"text": r"^Sorry", "role": "agent"})["met"] is True
    assert one(run, "transcript.regex", {"text": r"^sorry"})["met"] is False
    assert one(run, "transcript.regex", {"text": r"^sorry", "case_insensitive": True})["met"] is True
    assert one(run, "transcript.regex", {"text": r"\d{5}", "role": "caller"}) == result(
        False, None, r'no turn by the caller matches the pattern "\d{5}"', "assay:transcript")


def test_transcript_checks_without_a_transcript_are_null() -> None:
    run = case_run(transcript=None)
    for mechanism, params in [("transcript.contains", {"text": "x"}), ("transcript.not_contains", {"text": "x"}),
                              ("transcript.regex", {"text": "x"}), ("transcript.max_turns", {"max": 3})]:
        assert one(run, mechanism, params) == result(None, None, "the case run recorded no transcript", "assay:transcript")
    empty = case_run(transcript=[])
    assert one(empty, "transcript.contains", {"text": "x"})["met"] is False
    assert one(empty, "transcript.not_contains", {"text": "x"})["met"] is True
    assert one(empty, "transcript.max_turns", {"max": 0}) == result(True, 0.0, None, "assay:transcript")


def test_max_turns() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.max_turns", {"max": 3}) == result(True, 3.0, None, "assay:transcript")
    assert one(run, "transcript.max_turns", {"max": 2}) == result(
        False, 3.0, "the conversation took 3 turns; at most 2 allowed", "assay:transcript")


def test_max_latency_and_max_cost() -> None:
    run = case_run(duration_ms=5000.5, cost_usd=0.25)
    assert one(run, "transcript.max_latency", {"max_ms": 6000}) == result(True, 5000.5, None, "assay:transcript")
    assert one(run, "transcript.max_latency", {"max_ms": 5000}) == result(
        False, 5000.5, "the case run took longer than 5000 ms", "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 0.25}) == result(True, 0.25, None, "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 0.1}) == result(
        False, 0.25, "the case run cost more than 0.1 USD", "assay:transcript")


@pytest.mark.parametrize("measured", [None, math.nan])
def test_max_latency_and_cost_without_a_measurement_are_null(measured: float | None) -> None:
    run = case_run(duration_ms=measured, cost_usd=measured)
    assert one(run, "transcript.max_latency", {"max_ms": 1}) == result(
        None, None, "the case run recorded no duration", "assay:transcript")
    assert one(run, "transcript.max_cost", {"max_usd": 1}) == result(None, None, "the case run recorded no cost", "assay:transcript")


def test_regex_params_refuse_what_either_engine_cannot_compile() -> None:
    for pattern in [r"(?<=a)b", r"(a)\1", r"\p{L}", "[[:alpha:]]", "a{,3}", "("]:
        with pytest.raises(ValidationError, match="cannot be used") as info:
            validate_params("transcript.regex", {"text": pattern})
        assert "look-around" in str(info.value)  # the message says which syntax is allowed
    assert validate_params("transcript.regex", {"text": r"^\d{5}(?:-\d{4})?\b"}).text == r"^\d{5}(?:-\d{4})?\b"

