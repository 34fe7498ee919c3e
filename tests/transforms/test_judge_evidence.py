"""What the judge sees of a case run, and the hash the judge cache is keyed by."""

from __future__ import annotations

import hashlib

import polars as pl

from assay.core.evidence import CaseRun, Report, ToolCall, Turn
from assay.transforms.judge_evidence import evidence_text, with_evidence


def frame(*runs: CaseRun) -> pl.DataFrame:
    table = pl.from_arrow(Report.from_case_runs("r", list(runs)).case_runs)
    return table.with_columns(case_run_id=pl.col("case_id"))  # type: ignore[union-attr]


TALK = [Turn(role="caller", text="My heater leaks.", t=0.0, end_t=1.0), Turn(role="agent", text="I can book a visit.", t=1.4)]


def test_turns_and_tool_calls_one_line_each() -> None:
    run = CaseRun(case_id="a", transcript=TALK, tool_calls=[
        ToolCall(name="book", arguments={"slot": "9am"}, result={"ok": True}),
        ToolCall(name="transfer", is_error=True)])
    assert evidence_text(frame(run)).to_list() == [
        "TRANSCRIPT\ncaller: My heater leaks.\nagent: I can book a visit.\n\n"
        'TOOL CALLS\nbook({"slot": "9am"}) -> {"ok": true}\ntransfer({}) -> (no result) [error]'
    ]


def test_empty_and_unrecorded_evidence_say_so() -> None:
    empty = frame(CaseRun(case_id="a"))
    unrecorded = empty.with_columns(pl.lit(None).cast(empty.schema["transcript"]).alias("transcript"),
                                    pl.lit(None).cast(empty.schema["tool_calls"]).alias("tool_calls"))
    assert evidence_text(empty).to_list() == ["TRANSCRIPT\n(none)\n\nTOOL CALLS\n(none)"]
    assert evidence_text(unrecorded).to_list() == ["TRANSCRIPT\n(not recorded)\n\nTOOL CALLS\n(not recorded)"]


def test_the_hash_is_the_sha256_of_exactly_that_text_and_timings_do_not_change_it() -> None:
    same_words = [Turn(role=t.role, text=t.text, t=(t.t or 0) + 5.0) for t in TALK]
    other_words = [*TALK[:1], Turn(role="agent", text="I can book a visit!")]
    got = with_evidence(frame(CaseRun(case_id="a", transcript=TALK), CaseRun(case_id="b", transcript=same_words),
                              CaseRun(case_id="c", transcript=other_words)))
    assert got["case_run_id"].to_list() == ["a", "b", "c"]
    assert got["evidence_hash"][0] == hashlib.sha256(got["evidence"][0].encode()).hexdigest()
    assert got["evidence_hash"][0] == got["evidence_hash"][1] != got["evidence_hash"][2]
