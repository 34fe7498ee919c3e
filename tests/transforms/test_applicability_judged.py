"""One suite judged on three runners' evidence, under a gate that says where its keys count.

vapi_chat reports tool calls but no vendor evaluations; hamming reports its own evaluations but no tool
calls; elevenlabs_chat supports both kinds of evidence, yet does not produce the evaluation this suite
names. The real judge (with each runner's declared mechanisms) writes every result, unsupported ones
included; the gate counts each key only where it can be evaluated, and says what it left out.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest
from judge_kit import assignment, case_run, evaluation, judged

from assay.core.criteria import UNSUPPORTED, CriteriaSpec
from assay.core.plugins import registered
from assay.transforms.verdicts import run_verdicts

RUNNERS = ("vapi_chat", "hamming", "elevenlabs_chat")
BOOKS = ("tool.called", {"tool": "book_appointment"}, "books")
GREETS = ("transcript.contains", {"text": "Welcome to Bright Smile Dental", "role": "agent"}, "greets")
POLITE = ("vendor.evaluation", {"name": "polite"}, "polite")
GATE = CriteriaSpec(required=["key_books", "key_greets", "key_polite"],
                    applies={"key_books": "capable", "key_polite": "capable"})


def evidence(runner: str, behaves: bool) -> tuple[dict, list[dict]]:
    """One case run of ``runner`` and the evaluations it reports, for an agent that behaves or not."""
    said = "Welcome to Bright Smile Dental, how can I help?" if behaves else "Yeah?"
    turns = [("agent", said), ("caller", "I need a cleaning on Tuesday."), ("agent", "Done.")]
    calls = [("book_appointment", {"day": "Tuesday"})] if behaves else []
    run = case_run(f"{runner}-c1", runner=runner, transcript=turns,
                   tool_calls=calls if "tool.called" in registered()[runner].mechanisms else None)
    evaluations = ([evaluation(f"{runner}-c1", "polite", evaluator="hamming:polite",
                               verdict="pass" if behaves else "fail")] if runner == "hamming" else [])
    return run, evaluations


def atoms(behaves: bool) -> pl.LazyFrame:
    runs, evaluations, todo = [], [], []
    for runner in RUNNERS:
        run, found = evidence(runner, behaves)
        runs.append(run)
        evaluations += found
        todo += [assignment(m, p, run["case_run_id"], assertion_id=key) for m, p, key in (BOOKS, GREETS, POLITE)]
    supported = {name: frozenset(cls.mechanisms) for name, cls in registered().items()}
    results = judged(runs, todo, evaluations, supported=supported)
    runner = pl.col("case_run_id").str.extract(r"^(.+)-c1$", 1)
    return results.lazy().with_columns(run_id=runner, outcome_id=pl.col("case_run_id"), case_key=pl.lit("cleaning"),
                                       judged_at=pl.lit(datetime(2026, 12, 1, tzinfo=UTC)))


@pytest.mark.parametrize(("behaves", "verdict"), [(True, "pass"), (False, "fail")])
def test_the_gate_agrees_on_every_runner_and_reports_what_it_did_not_count(behaves: bool, verdict: str) -> None:
    got = {r["run_id"]: r for r in run_verdicts(atoms(behaves), GATE).collect().to_dicts()}
    assert {run: v["verdict"] for run, v in got.items()} == dict.fromkeys(RUNNERS, verdict)
    left_out = {
        "vapi_chat": "1 result not counted: `key_polite` is not evaluated by vapi_chat",
        "hamming": "1 result not counted: `key_books` is not evaluated by hamming",
        "elevenlabs_chat": "1 result not counted: `key_polite` is not evaluated by elevenlabs_chat",
    }
    assert {run: v["reason"].rsplit("; ", 1)[-1] for run, v in got.items()} == left_out
    assert all(v["counted"] == 2 for v in got.values())


def test_every_result_is_still_written_with_its_reason_and_evaluator() -> None:
    results = atoms(True).collect()
    unable = results.filter(pl.col("evaluator") == UNSUPPORTED).sort("case_run_id")
    assert unable.select("case_run_id", "assertion_key", "met").rows() == [
        ("elevenlabs_chat-c1", "key_polite", False), ("hamming-c1", "key_books", False),
        ("vapi_chat-c1", "key_polite", False)]
    reasons = unable["reason"].to_list()
    assert 'runner "elevenlabs_chat" reported no evaluation named "polite"' in reasons[0]  # not produced
    assert 'mechanism "tool.called" is not supported by runner "hamming"' in reasons[1]  # not supported
    assert 'mechanism "vendor.evaluation" is not supported by runner "vapi_chat"' in reasons[2]


def test_without_applies_the_keys_a_runner_cannot_evaluate_fail_there() -> None:
    strict = CriteriaSpec(required=GATE.required)
    got = {r["run_id"]: r["failed_required"] for r in run_verdicts(atoms(True), strict).collect().to_dicts()}
    assert got == {"elevenlabs_chat": ["key_polite"], "hamming": ["key_books"], "vapi_chat": ["key_polite"]}
