"""Builders shared by the judging tests: case runs, evaluations and assignments as Polars frames, replays'
artefacts, and :func:`judged`, which evaluates with the engine and with the row-wise reference and requires them
to agree."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal
from reference import evaluate_rowwise

from assay.core.ids import canonical_json
from assay.core.mechanisms import MECHANISMS, validate_params
from assay.transforms.judge import evaluate

TURN = pl.Struct({"role": pl.String, "text": pl.String, "t": pl.Float64, "end_t": pl.Float64})
CALL = pl.Struct({"name": pl.String, "arguments": pl.String, "result": pl.String, "is_error": pl.Boolean, "t": pl.Float64})
CASE_RUN_SCHEMA = {
    "case_run_id": pl.String, "runner": pl.String, "status": pl.String, "error": pl.String,
    "transcript": pl.List(TURN), "tool_calls": pl.List(CALL), "artefact": pl.String,
    "cost_usd": pl.Float64, "duration_ms": pl.Float64,
}
EVALUATION_SCHEMA = {
    "case_run_id": pl.String, "name": pl.String, "evaluator": pl.String, "verdict": pl.String,
    "score": pl.Float64, "scale_min": pl.Float64, "scale_max": pl.Float64, "rationale": pl.String,
}
ASSIGNMENT_SCHEMA = {
    "case_run_id": pl.String, "assertion_id": pl.String, "assertion_key": pl.String,
    "assertion_version": pl.Int64, "mechanism": pl.String, "params": pl.String,
}
EVERYTHING = {"r": frozenset(MECHANISMS)}
CALL_TRANSCRIPT = [("agent", "Hello, how can I help?"), ("caller", "I want a Refund."), ("agent", "Sorry to hear that.")]
CALLS = [
    ("check_service_area", {"zip": "60614"}),
    ("check_service_area", {"zip": 60614, "urgent": True}),
    ("book_appointment", {"slot": "9:00", "zip": "60614", "note": 'say "hi" \\ bye'}),
    ("book_appointment", '{"zip": "60614"'),  # malformed: never matches arguments
    ("lookup", {"nested": {"zip": "60614"}}),
]
CONFIG = {
    "name": "receptionist",
    "prompt": "You answer for {{ business }}. Never quote prices. Hours: {{hours}}.",
    "variables": {"business": "Acme Plumbing", "hours": "8-5"},
    "tools": [{"name": "check_service_area"}, {"name": "book_appointment", "description": "x"}],
}

def probe(check: str, held: bool | None, *, command: str | None = None, path: str | None = None,
          text: str | None = None, exit_code: int | None = None, output: str = "") -> dict[str, Any]:
    """One outcome probe as a replay's artefact records it."""
    return {"check": check, "key": check if check != "verify" else "verify.sh", "command": command, "path": path,
            "text": text, "exit_code": exit_code, "output": output, "held": held}


GOOD_PROBES = [
    probe("command_passes", True, command="make test", exit_code=0, output="5 passed"),
    probe("file_changed", True, path="pricing.py", output="modified"),
    probe("file_contains", True, path="NOTES.md", text="half a cent", output="found"),
    probe("verify", True, command="/home/dev/acme-app/.assay/exams/fix/verify.sh", exit_code=0),
]
SESSION = {"adapter": "headless", "transcript": True, "turns": 6, "cost_usd": 0.02, "wall_seconds": 12.5,
           "reads_before_first_write": 2, "tool_mix": {"Read": 2, "Bash": 2, "Edit": 1}}


def replay(probes: list[dict] = GOOD_PROBES, changed: list[str] = ("pricing.py",), session: dict = SESSION,
           **workspace: Any) -> dict[str, Any]:
    """A replay's artefact: its workspace (probes, files changed as modified) and its session summary."""
    return {"workspace": {"worktree": "fix-r1-0a1b2c3d", "files_changed": [{"status": "modified", "path": c} for c in changed],
                          "probes": list(probes), **workspace}, "session": dict(session)}


EXAM_ARTEFACTS = [json.dumps(a) for a in [
    replay(),
    replay([probe("command_passes", False, command="make test", exit_code=1, output="1 failed"),
            probe("file_changed", False, path="pricing.py", output="unchanged"),
            probe("file_contains", False, path="NOTES.md", text="half a cent", output="no such file"),
            probe("verify", False, command="verify.sh", exit_code=1)],
           ["pricing.py", "setup.cfg", "src/a/b.py", "docs/x.md", "README.md"],
           {**SESSION, "turns": 30, "cost_usd": 0.5, "wall_seconds": 100}),
    replay([probe("command_passes", None, command="make test", output="running\n[stopped after 600 s]"),
            probe("verify", None, command="verify.sh", exit_code=2),
            probe("file_changed", None, path="../x", output="the path leaves the workspace")],
           ["src/pricing.py"], {"transcript": False, "cost_usd": None, "wall_seconds": 3}),
    replay([], [], SESSION, probes_skipped="no outcome probe ran: the harness failed before doing anything (boom)"),
    {"workspace": [], "session": "x"},
    {"workspace": {"probes": {}, "files_changed": "a"}, "session": {"turns": True, "cost_usd": "1", "tool_mix": []}},
]] + ['{"workspace": {"probes": [], "files_changed": []}, "session": {"cost_usd": NaN}}']
"""Replays' artefacts: good, regressed, without verdicts, probes skipped, not a replay's, mistyped, not JSON."""
EXAM_ASSERTIONS: list[tuple[str, dict[str, Any]]] = [
    ("exam.command_passes", {"command": "make test"}), ("exam.command_passes", {"command": "npm test"}),
    ("exam.verify", {}), ("exam.file_changed", {"path": "./pricing.py"}), ("exam.file_changed", {"path": "../x"}),
    ("exam.file_contains", {"path": "NOTES.md", "text": "half a cent"}),
    ("exam.files_within", {"allow": ["pricing.py", "src/**"]}), ("exam.files_within", {"allow": ["**"]}),
    ("exam.cap", {"measure": "turns", "max": 10}), ("exam.cap", {"measure": "cost_usd", "max": 0.1}),
    ("exam.cap", {"measure": "wall_seconds", "max": 60}), ("exam.band", {"measure": "turns", "k": 2}),
    ("exam.band", {"measure": "turns", "k": 2, "center": 6, "spread": 1.5}),
    ("exam.profile", {"measure": "reads_before_first_write"}), ("exam.profile", {"measure": "tool_mix"}),
]
"""Every exam mechanism, with parameters that meet, fail and cannot tell on :data:`EXAM_ARTEFACTS`."""


def case_run(case_run_id: str = "c1", *, runner: str = "r", status: str = "executed", error: str | None = None,
             transcript: list[tuple[str, str]] | None = (), tool_calls: list[tuple[str, Any]] | None = (),
             artefact: Any = None, cost_usd: float | None = None, duration_ms: float | None = None) -> dict[str, Any]:
    """A case-run row; turns as (role, text) (t = the turn's index, no end_t) or (role, text, t, end_t),
    calls as (name, arguments: dict -> JSON text, or raw text)."""
    return {
        "case_run_id": case_run_id, "runner": runner, "status": status, "error": error,
        "transcript": None if transcript is None else [
            {"role": turn[0], "text": turn[1], "t": float(k), "end_t": None} if len(turn) == 2
            else dict(zip(("role", "text", "t", "end_t"), turn)) for k, turn in enumerate(transcript)],
        "tool_calls": None if tool_calls is None else [
            {"name": n, "arguments": a if isinstance(a, str) or a is None else json.dumps(a), "result": None,
             "is_error": False, "t": 1.0} for n, a in tool_calls],
        "artefact": artefact if isinstance(artefact, str) or artefact is None else json.dumps(artefact),
        "cost_usd": cost_usd, "duration_ms": duration_ms,
    }


def evaluation(case_run_id: str = "c1", name: str = "guard", *, evaluator: str = "hamming:guardrail",
               verdict: str | None = None, score: float | None = None, rationale: str | None = None,
               scale: tuple[float | None, float | None] = (None, None)) -> dict[str, Any]:
    return {"case_run_id": case_run_id, "name": name, "evaluator": evaluator, "verdict": verdict, "score": score,
            "scale_min": scale[0], "scale_max": scale[1], "rationale": rationale}


def assignment(mechanism: str, params: dict[str, Any] | None = None, case_run_id: str = "c1",
               assertion_id: str = "a1", version: int = 1) -> dict[str, Any]:
    """An assignment whose params are validated and canonical, as the catalog stores them."""
    canonical = canonical_json(validate_params(mechanism, params or {}).model_dump())
    return {"case_run_id": case_run_id, "assertion_id": assertion_id, "assertion_key": f"key_{assertion_id}",
            "assertion_version": version, "mechanism": mechanism, "params": canonical}


def frames(runs: list[dict], assignments: list[dict], evaluations: list[dict] = ()) -> tuple[pl.DataFrame, ...]:
    return (pl.DataFrame(runs, schema=CASE_RUN_SCHEMA), pl.DataFrame(list(evaluations), schema=EVALUATION_SCHEMA),
            pl.DataFrame(assignments, schema=ASSIGNMENT_SCHEMA))


def judged(runs: list[dict], assignments: list[dict], evaluations: list[dict] = (), supported=EVERYTHING,
           judge: str | None = None) -> pl.DataFrame:
    """Evaluate with Polars and with the reference; they must agree. Sorted by assertion, then case run."""
    case_runs, evals, todo = frames(runs, assignments, evaluations)
    got = evaluate(case_runs, evals, todo, supported, judge)
    ref = evaluate_rowwise(case_runs, evals, todo, supported, judge)
    keys = ["assertion_id", "assertion_version", "case_run_id"]
    assert got.height == todo.height
    assert_frame_equal(got.sort(keys), ref.sort(keys))
    return got.sort(keys)


def one(runs: list[dict] | dict, mechanism: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """Judge one assertion on one case run; the result columns of the single row."""
    runs = [runs] if isinstance(runs, dict) else runs
    out = judged(runs, [assignment(mechanism, params, runs[0]["case_run_id"])], **kwargs)
    assert out.height == 1
    return {k: out.row(0, named=True)[k] for k in ("met", "value", "reason", "evaluator")}


def result(met: bool | None, value: float | None, reason: str | None, evaluator: str) -> dict[str, Any]:
    return {"met": met, "value": value, "reason": reason, "evaluator": evaluator}


__all__ = ["ASSIGNMENT_SCHEMA", "CALLS", "CALL_TRANSCRIPT", "CONFIG", "EVERYTHING", "EXAM_ARTEFACTS", "EXAM_ASSERTIONS",
           "GOOD_PROBES", "SESSION", "assignment", "case_run", "evaluation", "frames", "judged", "one", "probe", "replay",
           "result"]
