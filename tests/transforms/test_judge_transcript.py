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


def test_not_regex_is_met_only_when_no_turn_matches() -> None:
    run = case_run(transcript=CALL_TRANSCRIPT)
    assert one(run, "transcript.not_regex", {"text": r"\$\d+"}) == result(True, None, None, "assay:transcript")
    assert one(run, "transcript.not_regex", {"text": r"^sorry", "case_insensitive": True}) == result(
        False, None, 'a turn matches the pattern "^sorry" (ignoring case)', "assay:transcript")
    assert one(run, "transcript.not_regex", {"text": r"^Sorry", "role": "caller"})["met"] is True  # the agent said it
    assert one(run, "transcript.not_regex", {"text": r"^Sorry", "role": "agent"}) == result(
        False, None, 'a turn by the agent matches the pattern "^Sorry"', "assay:transcript")
    assert one(case_run(transcript=[]), "transcript.not_regex", {"text": "x"})["met"] is True


def test_transcript_checks_without_a_transcript_are_null() -> None:
    run = case_run(transcript=None)
    for mechanism, params in [("transcript.contains", {"text": "x"}), ("transcript.not_contains", {"text": "x"}),
                              ("transcript.regex", {"text": "x"}), ("transcript.not_regex", {"text": "x"}),
                              ("transcript.max_turns", {"max": 3})]:
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


@pytest.mark.parametrize("mechanism", ["transcript.regex", "transcript.not_regex"])
def test_regex_params_refuse_what_either_engine_cannot_compile(mechanism: str) -> None:
    for pattern in [r"(?<=a)b", r"(a)\1", r"\p{L}", "[[:alpha:]]", "a{,3}", "("]:
        with pytest.raises(ValidationError, match="cannot be used") as info:
            validate_params(mechanism, {"text": pattern})
        assert "look-around" in str(info.value)  # the message says which syntax is allowed
    assert validate_params(mechanism, {"text": r"^\d{5}(?:-\d{4})?\b"}).text == r"^\d{5}(?:-\d{4})?\b"



TIMED = [  # (role, text, t, end_t): replies 1.2 s (turn 1), 0.4 s (turn 3) and 2.35 s (turn 5) after the caller
    ("caller", "My heater is leaking.", 0.0, 2.0), ("agent", "Sorry to hear that.", 3.2, 4.0),
    ("caller", "I'm at 60827.", 4.5, 5.6), ("agent", "Checking.", 6.0, 6.5),
    ("caller", "Well?", 8.0, 8.65), ("agent", "Outside our area.", 11.0, 12.0),
    ("agent", "I can refer you.", 12.2, 13.0),  # follows an agent turn: not a reply
]


def test_response_latency_measures_each_reply_to_the_caller() -> None:
    run = case_run(transcript=TIMED)
    got = one(run, "transcript.response_latency", {"max_ms": 2500})
    assert got["met"] is True and got["reason"] is None
    assert got["value"] == pytest.approx(2235.0)  # p95 of 400, 1200, 2350: 1200 + 0.9 * (2350 - 1200)
    assert one(run, "transcript.response_latency", {"max_ms": 2000}) == result(
        False, pytest.approx(2235.0),
        "the agent's slowest reply (turn 5) came 2350 ms after the caller stopped; at most 2000 ms allowed",
        "assay:transcript")
    assert one(run, "transcript.response_latency", {"p95_ms": 2000, "max_ms": 3000}) == result(
        False, pytest.approx(2235.0), "the 95th percentile of the agent's replies is over 2000 ms; the agent's slowest "
        "reply (turn 5) came 2350 ms after the caller stopped", "assay:transcript")
    assert one(run, "transcript.response_latency", {"p95_ms": 2300})["met"] is True


def test_response_latency_without_timings_is_never_a_pass() -> None:
    untimed = [turn if k != 2 else (*turn[:3], None) for k, turn in enumerate(TIMED)]  # turn 2 has no end_t
    assert one(case_run(transcript=untimed), "transcript.response_latency", {"max_ms": 99_999}) == result(
        None, None, "turn timings are missing: the reply at turn 3 has no t, or the caller turn before it no end_t, "
        "so response latency cannot be measured", "assay:transcript")
    plain = case_run(transcript=CALL_TRANSCRIPT)  # turns with t only, as a runner without end times reports them
    assert one(plain, "transcript.response_latency", {"max_ms": 99_999})["met"] is None
    monologue = case_run(transcript=[("agent", "Hello?", 0.0, 1.0), ("agent", "Anyone there?", 5.0, 6.0)])
    assert one(monologue, "transcript.response_latency", {"max_ms": 1}) == result(
        None, None, "no agent turn answers a caller turn: response latency cannot be measured", "assay:transcript")
    assert one(case_run(transcript=None), "transcript.response_latency", {"max_ms": 1}) == result(
        None, None, "the case run recorded no transcript", "assay:transcript")


def test_response_latency_names_the_first_of_equally_slow_replies() -> None:
    turns = [("caller", "a", 0.0, 1.0), ("agent", "b", 2.0, 2.5), ("caller", "c", 3.0, 4.0), ("agent", "d", 5.0, 6.0)]
    got = one(case_run(transcript=turns), "transcript.response_latency", {"max_ms": 500})
    assert got == result(False, 1000.0, "the agent's slowest reply (turn 1) came 1000 ms after the caller stopped; "
                         "at most 500 ms allowed", "assay:transcript")


def test_response_latency_needs_a_bound() -> None:
    with pytest.raises(ValidationError, match="give max_ms, p95_ms or both"):
        validate_params("transcript.response_latency", {})
    with pytest.raises(ValidationError):
        validate_params("transcript.response_latency", {"max_ms": 0})
