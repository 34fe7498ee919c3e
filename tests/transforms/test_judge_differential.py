"""A differential test: the vectorised engine and the row-wise reference agree on random data, and the data
exercises every mechanism's outcomes."""

from __future__ import annotations

import json
import math
import random

import polars as pl
from judge_kit import CONFIG, EXAM_ARTEFACTS, EXAM_ASSERTIONS, assignment, evaluation, frames
from polars.testing import assert_frame_equal
from reference import evaluate_rowwise

from assay.core.mechanisms import MECHANISMS, mechanisms_of
from assay.transforms.judge import evaluate


WORDS = ("hello refund Refund REFUND sorry thanks appointment 60614 94110 café CAFÉ Straße STRASSE zip "
         "yes no price quote a.b a-b ab email@example.com ok, well: um").split()
PATTERNS = [r"\bref(und|unds)\b", r"^hello", r"\d{5}", r"caf[eé]", r"(?:yes|no)\s+thanks", r"a.b", r"^$", r"um\W*$",
            r"stra(ss|ß)e", r"[A-Z]{3,}"]
ARGUMENTS = ['{"zip": "60614"}', '{"zip": 60614}', '{"zip": 60614.0}', '{"urgent": true}', '{"urgent": "true"}',
             '{"n": 1}', '{"n": 1.0}', '{"n": true}', '{"a": {"zip": "60614"}}', "[1]", "not json", None, "{}",
             '{"zip": "6061\\"4"}', '{"q": "a\\\\b"}', '{"city": "Zürich"}', '{"zip": "60614", "urgent": false}',
             '{"zip": NaN}', '{"zip": "60614", "zip": "94110"}']
TOOL_NAMES = ["check_service_area", "book_appointment", "transfer_call", "lookup", None]
ARTEFACTS = [
    json.dumps(CONFIG), None, "{oops", "[]", "null",
    json.dumps({"prompt": "Hi {{ name }}, {{missing}} and {{empty}} {{zero}}", "variables": {"name": "Bo", "empty": "", "zero": 0}}),
    json.dumps({"prompt": "NEVER QUOTE PRICES for {{x}}", "variables": None, "tools": None}),
    json.dumps({"prompt": 3, "tools": [{"name": "book_appointment"}, "junk", {"name": 5}]}),
    json.dumps({"prompt": "never quote prices", "variables": [], "tools": {"name": "x"}}),
    *EXAM_ARTEFACTS,
]
RUNNERS = {
    "full": frozenset(MECHANISMS), "chat": mechanisms_of("transcript", "tool", "rubric"),
    "voice": mechanisms_of("transcript", "vendor"), "config": mechanisms_of("structural"),
}


def _random_text(rng: random.Random) -> str | None:
    if rng.random() < 0.03:
        return None
    return rng.choice([" ", "\n", " ", ", "]).join(rng.choice(WORDS) for _ in range(rng.randint(0, 7)))


def _random_case_runs(rng: random.Random, n: int) -> tuple[list[dict], list[dict]]:
    runs, evals = [], []
    for k in range(n):
        cid = f"cr-{k:05d}"
        failed = rng.random() < 0.04
        transcript = None if rng.random() < 0.04 else [
            {"role": rng.choice(["caller", "agent", "agent", "system", None]), "text": _random_text(rng),
             "t": rng.choice([2.0 * j] * 30 + [None, math.nan]),  # replies 0.1 s to 1.9 s after the caller ends
             # ends 0.1 s to 2.2 s after it began: the next turn (at 2 * (j + 1)) may overlap it by up to 0.2 s
             "end_t": rng.choice([None, math.nan, *[2.0 * j + 0.1 * s for s in range(1, 23)] * 3])}
            for j in range(rng.randint(0, 9))]
        calls = None if rng.random() < 0.04 else [
            {"name": rng.choice(TOOL_NAMES), "arguments": rng.choice(ARGUMENTS), "result": None, "is_error": False, "t": 1.0}
            for _ in range(rng.randint(0, 4))]
        measured = [rng.choice([None, math.nan, rng.uniform(0, 10_000), 5000.0]) if rng.random() < 0.15
                    else rng.uniform(0, 10_000) for _ in range(2)]
        runs.append({
            "case_run_id": cid, "runner": rng.choice([*RUNNERS, "stranger"]), "status": "error" if failed else "executed",
            "error": rng.choice([None, "", "HTTP 500 from vendor"]) if failed else None,
            "transcript": transcript, "tool_calls": calls, "artefact": rng.choice(ARTEFACTS),
            "duration_ms": measured[0], "cost_usd": None if measured[1] is None else measured[1] / 10_000,
        })
        for name in ("guard", "scorer"):
            for _ in range(rng.choice([0, 1, 1, 1, 2])):
                evals.append(evaluation(
                    cid, name, evaluator=f"vendor:{name}",
                    verdict=rng.choice([None, "pass", "fail", "error", "unknown", "maybe"]),
                    score=rng.choice([None, None, rng.random(), math.nan, 0.5]),
                    scale=rng.choice([(0.0, 1.0), (0.0, 1.0), (None, None), (0.0, None), (-1.0, 3.0), (0.5, 0.5)]),
                    rationale=rng.choice([None, "", "because"])))
    return runs, evals


def _random_assertions(rng: random.Random) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = [
        ("structural.clause_present", {"clause": "Never quote prices"}),
        ("structural.clause_present", {"clause": "never quote", "case_insensitive": True}),
        ("structural.variables_resolve", {}),
        ("structural.tool_attached", {"tool": "book_appointment"}),
        ("transcript.max_turns", {"max": 4}), ("transcript.max_latency", {"max_ms": 5000}),
        ("transcript.max_cost", {"max_usd": 0.5}), ("rubric", {"rubric": "be kind"}),
        ("transcript.response_latency", {"max_ms": 1500}), ("transcript.response_latency", {"p95_ms": 1200}),
        ("transcript.response_latency", {"max_ms": 1700, "p95_ms": 900}),
        ("vendor.evaluation", {"name": "guard"}), ("vendor.evaluation", {"name": "scorer", "pass_score": 0.5}),
        ("vendor.evaluation", {"name": "absent"}),
        ("timing.response_latency", {"p50_ms": 900}), ("timing.response_latency", {"p95_ms": 1500, "max_ms": 1700}),
        ("timing.interruptions", {"max_barge_ins": 0}), ("timing.interruptions", {"max_talk_overs": 0, "max_barge_ins": 1}),
        ("timing.interruptions", {"max_talk_overs": 0, "tolerance_ms": 150}),
        ("timing.silence", {"threshold_ms": 1500}), ("timing.silence", {"threshold_ms": 1200, "max_count": 1}),
        ("timing.talk_ratio", {"min": 0.3, "max": 0.6}), ("timing.talk_ratio", {"max": 0.5}),
    ]
    for k in range(8):
        role = rng.choice([None, "caller", "agent", "system"])
        ci = rng.random() < 0.5
        out.append((["transcript.contains", "transcript.not_contains"][k % 2],
                    {"text": rng.choice(WORDS + ["refund please", "a.b", "\n"]), "role": role, "case_insensitive": ci}))
    for pattern in PATTERNS:
        out.append((rng.choice(["transcript.regex", "transcript.not_regex"]), {"text": pattern, "role": rng.choice([None, "agent"]), "case_insensitive": rng.random() < 0.5}))
    for k, tool in enumerate(TOOL_NAMES[:4]):
        out.append((["tool.called", "tool.not_called"][k % 2], {"tool": tool}))
    for arguments in [{"zip": "60614"}, {"zip": 60614}, {"urgent": True}, {"n": 1}, {"zip": "60614", "urgent": False},
                      {"q": "a\\b"}, {"zip": '6061"4'}, {"city": "Zürich"}]:
        out.append((rng.choice(["tool.called", "tool.not_called"]), {"tool": rng.choice(TOOL_NAMES[:2]), "arguments": arguments}))
    return out


def test_vectorised_and_rowwise_agree_on_random_data() -> None:
    rng = random.Random(20261129)
    runs, evals = _random_case_runs(rng, 3000)
    ids = [r["case_run_id"] for r in runs]
    todo = []
    for k, (mechanism, params) in enumerate(_random_assertions(rng)):
        # most assertions cover every case run (the whole batch is tested once); some only a few (picked first)
        scope = ids if k % 4 else rng.sample(ids, 40) + ["cr-missing"]
        todo += [assignment(mechanism, params, cid, assertion_id=f"a{k:02d}") for cid in scope]
    todo += [assignment("transcript.max_turns", {"max": 4}, cid, assertion_id="twin") for cid in ids[:500]]
    todo += [assignment(mechanism, params, cid, assertion_id=f"exam{k:02d}")
             for k, (mechanism, params) in enumerate(EXAM_ASSERTIONS) for cid in ids]
    case_runs, evaluations, assignments = frames(runs, todo, evals)
    supported = dict(RUNNERS)

    got = evaluate(case_runs, evaluations, assignments, supported, None)
    ref = evaluate_rowwise(case_runs, evaluations, assignments, supported, None)
    keys = ["assertion_id", "assertion_version", "case_run_id"]
    assert got.height == ref.height == assignments.height
    assert_frame_equal(got.sort(keys), ref.sort(keys))

    # The data must exercise every mechanism's outcomes, or agreement proves little.
    outcomes = got.group_by("mechanism").agg(pl.col("met").unique().alias("seen"), pl.col("evaluator").unique())
    seen = {row["mechanism"]: set(row["seen"]) for row in outcomes.iter_rows(named=True)}
    assert set(seen) == set(MECHANISMS)
    for mechanism, outcomes_seen in seen.items():
        assert {False, None} <= outcomes_seen, mechanism
        if mechanism != "rubric":
            assert True in outcomes_seen, mechanism
    evaluators = set(got["evaluator"].unique())
    assert {"assay:execution", "assay:unsupported", "assay:structural", "assay:transcript", "assay:timing", "assay:tool",
            "assay:vendor", "assay:exam", "assay:judge", "vendor:guard", "vendor:scorer"} <= evaluators
