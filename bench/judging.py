"""Judging: 1,000,000 stored case runs x 10 transcript and tool assertions, evaluated deterministically.

``evaluate`` (Polars, vectorised) is timed end to end on all 10,000,000 assignments, median of 3.
The baseline is ``evaluate_rowwise`` (the plain-Python, per-row reference with the same semantics: the
tests' oracle, ``tests/transforms/reference.py``), timed in the same process on a sample of the same
data (its rate does not depend on the count); on that sample the two results are also checked to be
identical.

The data is generated column-wise with Polars and Arrow (no Python loop per case run): 6-10 turns
per case run drawn from a phrase vocabulary, 0-3 tool calls with JSON arguments, ~2% null costs,
~1% case runs that did not execute.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow as pa

from .common import Result, median_seconds

CASE_RUNS = 1_000_000
SAMPLE = 50_000
RUNNER = "bench"
REFERENCE_DIR = Path(__file__).resolve().parents[1] / "tests" / "transforms"
"""Where ``reference.py`` (``evaluate_rowwise``) lives."""

OPENERS = [
    "Thanks for calling, how can I help you today?", "I understand, let me check that for you.",
    "Could you give me your zip code please?", "My zip is 60614 and the heater is leaking.",
    "We can book an Appointment for tomorrow morning.", "I would like a refund for the last visit.",
    "Sorry, I cannot help with that request.", "Thank you, that is everything I needed.",
    "Is there anything else I can do for you?", "The technician will call before arriving.",
    "That address is outside our service area.", "Let me transfer you to a licensed plumber.",
    "Our emergency line is open all night.", "The estimate is free of charge.",
    "Can you confirm the address on file?", "I need someone to look at my water heater.",
]
TAILS = [
    "", " Okay.", " thanks!", " Call me at 312 555 0100.", " Zip 94110 please.", " No refund is possible.",
    " We open at 8.", " That works for me.", " I am not sure.", " Great, see you then.",
    " The fee is 49 dollars.", " Please hold a moment.",
]
TOOLS = ["check_service_area", "book_appointment", "transfer_call", "lookup_order"]
ARGUMENTS = [
    '{"zip": "60614"}', '{"zip": "94110"}', '{"zip": 60614}', '{"zip": "10001", "urgent": true}',
    '{"slot": "tomorrow 9:00", "zip": "60614"}', '{"order_id": 4411}', "{}", '{"reason": "out of area"}',
]
ASSERTIONS: list[tuple[str, dict]] = [
    ("transcript.contains", {"text": "refund"}),
    ("transcript.contains", {"text": "appointment", "role": "agent", "case_insensitive": True}),
    ("transcript.not_contains", {"text": "i cannot help", "case_insensitive": True}),
    ("transcript.regex", {"text": r"\b\d{5}\b", "role": "caller"}),
    ("transcript.regex", {"text": r"thank(s| you)", "case_insensitive": True}),
    ("transcript.max_turns", {"max": 8}),
    ("transcript.max_cost", {"max_usd": 0.3}),
    ("tool.called", {"tool": "check_service_area"}),
    ("tool.called", {"tool": "book_appointment", "arguments": {"zip": "60614"}}),
    ("tool.not_called", {"tool": "transfer_call"}),
]


def _pick(index: pl.Expr, seed: int, n: int) -> pl.Expr:
    """A deterministic pseudo-random integer in [0, n) per row."""
    return (index.hash(seed) % n).cast(pl.Int64)


def _lists(lengths: pl.Series, items: pa.StructArray) -> pa.ListArray:
    offsets = pl.concat([pl.Series([0], dtype=pl.Int32), lengths.cast(pl.Int32).cum_sum()])
    return pa.ListArray.from_arrays(offsets.to_arrow(), items)


def case_runs(n: int, seed: int = 11) -> pl.DataFrame:
    """``n`` executed (and ~1% failed) case runs, built column-wise."""
    runs = pl.DataFrame({"i": pl.int_range(n, eager=True)}).with_columns(
        turns=_pick(pl.col("i"), seed, 5) + 6, calls=_pick(pl.col("i"), seed + 1, 4),
    )
    turns = runs.select(run=pl.col("i").repeat_by("turns")).explode("run").with_row_index("g")
    starts = runs["turns"].cum_sum() - runs["turns"]
    turns = turns.with_columns(k=pl.col("g") - starts.gather(turns["run"]).cast(pl.UInt32))
    turns = turns.with_columns(
        role=pl.when(pl.col("k") % 2 == 0).then(pl.lit("agent")).otherwise(pl.lit("caller")),
        text=pl.concat_str(
            pl.lit(pl.Series(OPENERS)).gather(_pick(pl.col("g"), seed + 2, len(OPENERS))),
            pl.lit(pl.Series(TAILS)).gather(_pick(pl.col("g"), seed + 3, len(TAILS))),
        ),
        t=pl.col("k").cast(pl.Float64) * 4.5,
    )
    calls = runs.select(run=pl.col("i").repeat_by("calls")).explode("run").drop_nulls().with_row_index("g")
    calls = calls.with_columns(
        name=pl.lit(pl.Series(TOOLS)).gather(_pick(pl.col("g"), seed + 4, len(TOOLS))),
        arguments=pl.lit(pl.Series(ARGUMENTS)).gather(_pick(pl.col("g"), seed + 5, len(ARGUMENTS))),
        result=pl.lit('{"ok": true}'), is_error=pl.lit(False), t=pl.lit(12.5),
    )
    transcript = _lists(runs["turns"], turns.select("role", "text", "t").to_arrow().to_struct_array().combine_chunks())
    tool_calls = _lists(runs["calls"], calls.select("name", "arguments", "result", "is_error", "t")
                        .to_arrow().to_struct_array().combine_chunks())
    failed = _pick(pl.col("i"), seed + 6, 100) == 0
    return runs.select(
        case_run_id=pl.format("cr-{}", pl.col("i")),
        runner=pl.lit(RUNNER),
        status=pl.when(failed).then(pl.lit("error")).otherwise(pl.lit("executed")),
        error=pl.when(failed).then(pl.lit("vendor timed out")),
    ).with_columns(
        transcript=pl.Series(transcript), tool_calls=pl.Series(tool_calls),
        artefact=pl.lit(None, pl.String),
        cost_usd=pl.when(_pick(pl.int_range(pl.len()), seed + 7, 50) != 0)
        .then(_pick(pl.int_range(pl.len()), seed + 8, 4000).cast(pl.Float64) / 10_000),
        duration_ms=_pick(pl.int_range(pl.len()), seed + 9, 60_000).cast(pl.Float64) + 5_000,
    )


def assignments(runs: pl.DataFrame) -> pl.DataFrame:
    assertions = pl.DataFrame({
        "assertion_id": [f"as-{k}" for k in range(len(ASSERTIONS))],
        "assertion_key": [f"key_{k}" for k in range(len(ASSERTIONS))],
        "assertion_version": [1] * len(ASSERTIONS),
        "mechanism": [m for m, _ in ASSERTIONS],
        "params": [json.dumps(p, sort_keys=True, separators=(",", ":")) for _, p in ASSERTIONS],
    })
    return runs.select("case_run_id").join(assertions, how="cross")


def no_evaluations() -> pl.DataFrame:
    return pl.DataFrame(schema={"case_run_id": pl.String, "name": pl.String, "evaluator": pl.String,
                                "verdict": pl.String, "score": pl.Float64, "scale_min": pl.Float64,
                                "scale_max": pl.Float64, "rationale": pl.String})


def run() -> list[Result]:
    from assay.core.mechanisms import mechanisms_of
    from assay.transforms.judge import evaluate

    # The row-wise reference is test code (it does not ship in the package): import it from the tests'
    # folder, as pytest does.
    sys.path.insert(0, str(REFERENCE_DIR))
    from reference import evaluate_rowwise

    start = time.perf_counter()
    runs = case_runs(CASE_RUNS)
    todo = assignments(runs)
    evaluations = no_evaluations()
    generated = time.perf_counter() - start
    supported = {RUNNER: mechanisms_of("transcript", "tool")}
    turns = runs["transcript"].list.len().sum()

    def vectorised() -> None:
        out = evaluate(runs, evaluations, todo, supported)
        assert out.height == todo.height

    seconds = median_seconds(vectorised, repeats=3)
    rate = todo.height / seconds

    sample_runs = runs.head(SAMPLE)
    sample = assignments(sample_runs)
    start = time.perf_counter()
    rowwise = evaluate_rowwise(sample_runs, evaluations, sample, supported)
    baseline_seconds = time.perf_counter() - start
    baseline = sample.height / baseline_seconds
    keys = ["case_run_id", "assertion_id"]
    same = evaluate(sample_runs, evaluations, sample, supported).sort(keys).equals(rowwise.sort(keys))
    ratio = rate / baseline
    return [
        Result(
            name="judging.deterministic", value=round(rate), unit="assertion results/s", baseline=round(baseline),
            ratio=round(ratio, 1), target=">= 20x a per-row Python loop", met=ratio >= 20 and same,
            note=f"{CASE_RUNS:,} case runs ({turns / CASE_RUNS:.1f} turns each) x {len(ASSERTIONS)} transcript/tool "
                 f"assertions = {todo.height:,} results; evaluate median of 3 runs of {seconds:.2f}s; baseline = "
                 f"evaluate_rowwise on the first {SAMPLE:,} case runs ({sample.height:,} results, {baseline_seconds:.1f}s), "
                 f"rate extrapolated; identical results on the sample: {same}; data generated in {generated:.1f}s",
        )
    ]
