"""timing.*: response latency percentiles, interruptions, silences and talk ratio from turn timings, checked
against hand-computed figures (every case is also held to the row-wise reference by ``one``)."""

from __future__ import annotations

import pytest
from judge_kit import CALL_TRANSCRIPT, case_run, one, result

from assay.core.mechanisms import ValidationError, validate_params

# (role, text, t, end_t). Gaps (this t - previous end_t): -500 (turn 1: the caller barges in), 800 (turn 2: a
# reply), 2500 (turn 3: a silence), -300 (turn 4: the agent talks over the caller), 500, 1200 (turn 6: a reply).
CALL = [
    ("agent", "Thanks for calling, how can I help?", 0.0, 2.0), ("caller", "My heater is leaking.", 1.5, 4.0),
    ("agent", "Sorry to hear that. Your zip?", 4.8, 7.0), ("caller", "60614.", 9.5, 11.0),
    ("agent", "Checking that now.", 10.7, 13.0), ("caller", "Thanks.", 13.5, 14.0),
    ("agent", "We serve 60614. Tomorrow at nine?", 15.2, 17.0),
]
EV = "assay:timing"


def test_response_latency_percentiles() -> None:
    run = case_run(transcript=CALL)  # replies: 800 (turn 2), -300 (turn 4), 1200 (turn 6) ms
    p95 = pytest.approx(1160.0)  # 800 + 0.9 * (1200 - 800)
    assert one(run, "timing.response_latency", {"p50_ms": 800, "p95_ms": 1160.5, "max_ms": 1200}) == result(
        True, p95, None, EV)
    assert one(run, "timing.response_latency", {"p50_ms": 799}) == result(
        False, p95, "the median of the agent's replies is over 799 ms; the agent's slowest reply (turn 6) came "
        "1200 ms after the caller stopped", EV)
    assert one(run, "timing.response_latency", {"p95_ms": 800, "p50_ms": 500})["reason"].startswith(
        "the 95th percentile of the agent's replies is over 800 ms")
    assert one(run, "timing.response_latency", {"max_ms": 1000, "p50_ms": 500})["reason"] == (
        "the agent's slowest reply (turn 6) came 1200 ms after the caller stopped; at most 1000 ms allowed")


def test_interruptions_count_barge_ins_and_talk_overs() -> None:
    run = case_run(transcript=CALL)
    assert one(run, "timing.interruptions", {"max_barge_ins": 1, "max_talk_overs": 1}) == result(True, 2.0, None, EV)
    assert one(run, "timing.interruptions", {"max_barge_ins": 0, "max_talk_overs": 0}) == result(
        False, 2.0, "barge-ins (the caller over the agent): 1, the first at turn 1; at most 0 allowed; talk-overs "
        "(the agent over the caller): 1, the first at turn 4; at most 0 allowed", EV)
    # overlaps of 500 ms (turn 1) and 300 ms (turn 4): a tolerance of 350 ms forgives the second only
    assert one(run, "timing.interruptions", {"max_talk_overs": 0, "tolerance_ms": 350}) == result(True, 1.0, None, EV)
    assert one(run, "timing.interruptions", {"max_barge_ins": 0, "tolerance_ms": 499})["met"] is False


def test_silences_longer_than_the_threshold() -> None:
    run = case_run(transcript=CALL)
    assert one(run, "timing.silence", {"threshold_ms": 2500}) == result(True, 2500.0, None, EV)
    assert one(run, "timing.silence", {"threshold_ms": 2000}) == result(
        False, 2500.0, "silences longer than 2000 ms: 1; at most 0 allowed; the longest, before turn 3, lasted 2500 ms", EV)
    assert one(run, "timing.silence", {"threshold_ms": 1000, "max_count": 1})["reason"].startswith(
        "silences longer than 1000 ms: 2; at most 1 allowed")
    assert one(case_run(transcript=CALL[:1]), "timing.silence", {"threshold_ms": 1}) == result(True, None, None, EV)


def test_talk_ratio_is_the_agents_share_of_speaking_time() -> None:
    run = case_run(transcript=CALL)
    share = pytest.approx(8.3 / 12.8)  # agent 2.0 + 2.2 + 2.3 + 1.8 s; caller 2.5 + 1.5 + 0.5 s
    assert one(run, "timing.talk_ratio", {"min": 0.6, "max": 0.65}) == result(True, share, None, EV)
    assert one(run, "timing.talk_ratio", {"max": 0.6}) == result(
        False, share, "the agent's share of the speaking time is over 0.6", EV)
    assert one(run, "timing.talk_ratio", {"min": 0.7}) == result(
        False, share, "the agent's share of the speaking time is under 0.7", EV)
    chat = [("caller", "hi", 1.0, 1.0), ("agent", "hello", 2.0, 2.0)]  # a text chat: no durations
    assert one(case_run(transcript=chat), "timing.talk_ratio", {"max": 0.5}) == result(
        None, None, "the turns have no duration (each ends when it starts): the talk ratio cannot be measured", EV)


def test_missing_timings_are_undetermined_naming_the_turn() -> None:
    gapped = [turn if k != 3 else (*turn[:2], None, turn[3]) for k, turn in enumerate(CALL)]  # turn 3 has no t
    run = case_run(transcript=gapped)
    assert one(run, "timing.silence", {"threshold_ms": 99_999}) == result(
        None, None, "turn timings are missing: turn 3 has no t, or the turn before it no end_t, so silences cannot "
        "be measured", EV)
    assert one(run, "timing.interruptions", {"max_barge_ins": 99}) == result(
        None, None, "turn timings are missing: turn 3 has no t, or the turn before it no end_t, so interruptions "
        "cannot be counted", EV)
    assert one(run, "timing.talk_ratio", {"min": 0.0}) == result(
        None, None, "turn timings are missing: turn 3 has no t or no end_t, so the talk ratio cannot be measured", EV)
    assert one(run, "timing.response_latency", {"max_ms": 99_999})["met"] is True  # turn 3 is no reply: not needed
    plain = case_run(transcript=CALL_TRANSCRIPT)  # t only, as runners without end times report them
    for mechanism, params in [("timing.response_latency", {"max_ms": 99_999}), ("timing.silence", {"threshold_ms": 1}),
                              ("timing.interruptions", {"max_talk_overs": 9}), ("timing.talk_ratio", {"max": 1})]:
        assert one(plain, mechanism, params)["met"] is None, mechanism
        assert one(case_run(transcript=None), mechanism, params) == result(
            None, None, "the case run recorded no transcript", EV)


@pytest.mark.parametrize(("mechanism", "params", "says"), [
    ("timing.response_latency", {}, "give at least one of p50_ms, p95_ms, max_ms"),
    ("timing.response_latency", {"p50_ms": 0}, "greater than 0"),
    ("timing.interruptions", {}, "give max_barge_ins, max_talk_overs or both"),
    ("timing.interruptions", {"max_barge_ins": -1}, "greater than or equal to 0"),
    ("timing.silence", {}, "threshold_ms"),
    ("timing.talk_ratio", {"min": 0.7, "max": 0.2}, "min \\(0.7\\) is greater than max \\(0.2\\)"),
    ("timing.talk_ratio", {"max": 1.5}, "less than or equal to 1"),
    ("timing.talk_ratio", {}, "give min, max or both"),
])
def test_parameters_are_validated(mechanism: str, params: dict, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        validate_params(mechanism, params)


def test_runners_declare_the_timing_mechanisms_their_evidence_supports() -> None:
    from assay.adapters.runners.config_check import ConfigCheckRunner
    from assay.adapters.runners.elevenlabs_chat import ElevenLabsChatRunner
    from assay.adapters.runners.hamming import HammingRunner
    from assay.adapters.runners.recorded import RecordedRunner
    from assay.adapters.runners.vapi_chat import VapiChatRunner
    from assay.core.mechanisms import mechanisms_of

    timing = mechanisms_of("timing")
    assert timing == {"timing.response_latency", "timing.interruptions", "timing.silence", "timing.talk_ratio"}
    declared = {cls.name: cls.mechanisms & timing for cls in (RecordedRunner, VapiChatRunner, ElevenLabsChatRunner,
                                                              HammingRunner, ConfigCheckRunner)}
    assert declared == {"recorded": timing, "vapi_chat": {"timing.response_latency"}, "elevenlabs_chat": set(),
                        "hamming": set(), "config_check": set()}
