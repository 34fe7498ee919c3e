"""The same judging as :func:`assay.transforms.judge.evaluate`, one assignment at a time in plain Python.

This is the oracle of the differential test (``test_judge_differential.py``) and the baseline of the
judging benchmark (``bench/judging.py``, which puts this folder on ``sys.path``): every rule is written
out with ``json.loads``, ``re`` and loops, independently of the Polars implementation, and the two must
agree exactly (same met, value, reason and evaluator for every row). Only two readings are shared,
both plain Python at home in core: a compiled artefact's (:func:`assay.core.compiled.read_artefact`) and
a vendor evaluation's value on our scale (:func:`assay.core.evidence.vendor_reading`, the one mapping
runners store with their evaluations), so the differential test holds ``vendor.evaluation`` to it.

Case-insensitive matching is ``re.IGNORECASE`` here and ``(?i)`` in Polars: both are Unicode simple
case folding. Known engine differences this cannot see (kept out of the differential test's data):
Python's ``re`` and Rust's ``regex`` differ on ``$`` before a final newline, on a few Unicode class
and case-folding details (Python folds "İ" to "i", Rust does not), and JSON parsing differs on lone
surrogates and on numbers too large for a 64-bit float.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from assay.core.compiled import read_artefact
from assay.core.evidence import vendor_reading
from assay.core.mechanisms import MECHANISMS
from assay.transforms.judge import RESULT_SCHEMA
from assay.transforms.mechanisms.rubric import AWAITING_JUDGE, NO_JUDGE
from reference_exam import exam
from reference_timing import timing

NO_TRANSCRIPT = "the case run recorded no transcript"

Result = tuple[bool | None, float | None, str | None, str]


def evaluate_rowwise(case_runs: pl.DataFrame, evaluations: pl.DataFrame, assignments: pl.DataFrame,
                     supported: Mapping[str, frozenset[str]], judge: str | None = None) -> pl.DataFrame:
    """What :func:`assay.transforms.judge.evaluate` returns (same arguments), one row at a time."""
    runs: dict[str, dict[str, Any]] = {}
    for run in case_runs.iter_rows(named=True):
        if run["case_run_id"] in runs:
            raise ValueError(f"case_runs has duplicate case_run_id values, e.g. {[run['case_run_id']]}: one row per case run")
        runs[run["case_run_id"]] = run
    evals: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in evaluations.iter_rows(named=True):
        evals[(e["case_run_id"], e["name"])].append(e)
    out = []
    for a in assignments.iter_rows(named=True):
        if a["mechanism"] not in MECHANISMS:
            raise ValueError(f"assignments name unknown mechanisms [{a['mechanism']!r}]")
        met, value, reason, evaluator = judge_one(a, runs.get(a["case_run_id"]), evals, supported, judge)
        out.append({**a, "met": met, "value": value, "reason": reason, "evaluator": evaluator})
    return pl.DataFrame(out, schema={**assignments.schema, **RESULT_SCHEMA})


def judge_one(
    a: dict[str, Any],
    run: dict[str, Any] | None,
    evals: Mapping[tuple[str, str], list[dict[str, Any]]],
    supported: Mapping[str, frozenset[str]],
    judge: str | None,
) -> Result:
    mechanism = a["mechanism"]
    if run is None:
        return None, None, f"case run {a['case_run_id']} is not in this batch of evidence", "assay:execution"
    if run["status"] == "error":
        return None, None, f"the case run did not execute: {run['error'] or 'no reason given'}", "assay:execution"
    runner = run["runner"]
    if mechanism not in supported.get(runner, frozenset()):
        mechs = supported.get(runner, frozenset())
        supports = f"it supports: {', '.join(sorted(mechs))}" if mechs else "it supports no mechanisms"
        return False, None, f'mechanism "{mechanism}" is not supported by runner "{runner or ""}"; {supports}', "assay:unsupported"
    p = json.loads(a["params"])
    family = mechanism.split(".")[0]
    if family == "structural":
        return structural(mechanism, p, run["artefact"])
    if family == "transcript":
        return transcript(mechanism, p, run)
    if family == "timing":
        return timing(mechanism, p, run["transcript"])
    if family == "tool":
        return tool(mechanism, p, run["tool_calls"])
    if family == "vendor":
        return vendor(p, evals.get((a["case_run_id"], p["name"]), []), run["runner"])
    if family == "exam":
        return exam(mechanism, p, run["artefact"])
    if judge is None:
        return None, None, NO_JUDGE, "assay:judge"
    return None, None, AWAITING_JUDGE, f"assay:judge:{judge}"


def number(x: float) -> str:
    return str(int(x)) if float(x) == int(x) else repr(float(x))


def finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


# --------------------------------------------------------------------------------------- structural

def structural(mechanism: str, p: dict[str, Any], artefact: str | None) -> Result:
    ev = "assay:structural"
    parts = read_artefact(artefact)
    if mechanism == "structural.tool_attached":
        if parts.tools_problem:
            return None, None, parts.tools_problem, ev
        if p["tool"] in parts.tools:
            return True, None, None, ev
        return False, None, f'no tool named "{p["tool"]}" is attached; attached: {", ".join(parts.tools) or "none"}', ev
    if mechanism == "structural.clause_present":
        if parts.prompt_problem:
            return None, None, parts.prompt_problem, ev
        clause = p["clause"]
        if p.get("case_insensitive", False):
            found = re.search(re.escape(clause), parts.prompt, re.IGNORECASE) is not None
        else:
            found = clause in parts.prompt
        if found:
            return True, None, None, ev
        case = " (ignoring case)" if p.get("case_insensitive", False) else ""
        return False, None, f'the compiled prompt does not contain the clause "{clause}"{case}', ev
    if parts.variables_problem:
        return None, None, parts.variables_problem, ev
    if not parts.unresolved:
        return True, 0.0, None, ev
    return False, float(len(parts.unresolved)), "unresolved variables: " + ", ".join(parts.unresolved), ev


# --------------------------------------------------------------------------------------- transcript

def transcript(mechanism: str, p: dict[str, Any], run: dict[str, Any]) -> Result:
    ev = "assay:transcript"
    caps = {  # mechanism -> (measured, cap, reason when not recorded, reason when over the cap)
        "transcript.max_latency": ("duration_ms", "max_ms", "the case run recorded no duration",
                                   "the case run took longer than {} ms"),
        "transcript.max_cost": ("cost_usd", "max_usd", "the case run recorded no cost", "the case run cost more than {} USD"),
    }
    if mechanism in caps:
        column, cap, missing, over = caps[mechanism]
        measured = finite(run[column])
        if measured is None:
            return None, None, missing, ev
        if measured <= p[cap]:
            return True, measured, None, ev
        return False, measured, over.format(number(p[cap])), ev

    turns = run["transcript"]
    if turns is None:
        return None, None, NO_TRANSCRIPT, ev
    if mechanism == "transcript.response_latency":
        return response_latency(p, turns)
    if mechanism == "transcript.max_turns":
        n = len(turns)
        if n <= p["max"]:
            return True, float(n), None, ev
        return False, float(n), f"the conversation took {n} turns; at most {p['max']} allowed", ev

    role = p.get("role")
    ci = p.get("case_insensitive", False)
    text = p["text"]
    found = False
    for turn in turns:
        if turn is None or (role is not None and turn["role"] != role):
            continue
        said = turn["text"] or ""
        if mechanism in ("transcript.regex", "transcript.not_regex"):
            hit = re.search(text, said, re.IGNORECASE if ci else 0) is not None
        elif ci:
            hit = re.search(re.escape(text), said, re.IGNORECASE) is not None
        else:
            hit = text in said
        if hit:
            found = True
            break
    by = f" by the {role}" if role else ""
    case = " (ignoring case)" if ci else ""
    if mechanism == "transcript.regex":
        return (True, None, None, ev) if found else (False, None, f'no turn{by} matches the pattern "{text}"{case}', ev)
    if mechanism == "transcript.not_regex":
        return (False, None, f'a turn{by} matches the pattern "{text}"{case}', ev) if found else (True, None, None, ev)
    if mechanism == "transcript.contains":
        return (True, None, None, ev) if found else (False, None, f'no turn{by} contains "{text}"{case}', ev)
    return (False, None, f'a turn{by} contains "{text}"{case}', ev) if found else (True, None, None, ev)


def response_latency(p: dict[str, Any], turns: list[dict[str, Any] | None]) -> Result:
    ev = "assay:transcript"
    replies: list[tuple[int, float | None]] = []  # (the agent turn's index, ms since the caller's turn ended)
    for i in range(1, len(turns)):
        before, turn = turns[i - 1], turns[i]
        if turn is None or before is None or turn["role"] != "agent" or before["role"] != "caller":
            continue
        started, ended = finite(turn["t"]), finite(before["end_t"])
        replies.append((i, None if started is None or ended is None else (started - ended) * 1000))
    if not replies:
        return None, None, "no agent turn answers a caller turn: response latency cannot be measured", ev
    untimed = [i for i, ms in replies if ms is None]
    if untimed:
        return None, None, (f"turn timings are missing: the reply at turn {untimed[0]} has no t, or the caller turn "
                            "before it no end_t, so response latency cannot be measured"), ev
    values = sorted(ms for _, ms in replies if ms is not None)
    at = 0.95 * (len(values) - 1)  # the 95th percentile, interpolated linearly between neighbours
    low = math.floor(at)
    p95 = values[low] + (values[min(low + 1, len(values) - 1)] - values[low]) * (at - low)
    slowest = values[-1]
    worst = min(i for i, ms in replies if ms == slowest)
    said = f"the agent's slowest reply (turn {worst}) came {math.floor(slowest + 0.5)} ms after the caller stopped"
    if p.get("max_ms") is not None and slowest > p["max_ms"]:
        return False, p95, f"{said}; at most {number(p['max_ms'])} ms allowed", ev
    if p.get("p95_ms") is not None and p95 > p["p95_ms"]:
        return False, p95, f"the 95th percentile of the agent's replies is over {number(p['p95_ms'])} ms; {said}", ev
    return True, p95, None, ev


# --------------------------------------------------------------------------------------- tool calls

def argument_equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual == expected
    if isinstance(expected, str):
        return isinstance(actual, str) and actual == expected
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return False
    return float(actual) == float(expected)


def tool(mechanism: str, p: dict[str, Any], calls: list[dict[str, Any]] | None) -> Result:
    ev = "assay:tool"
    if calls is None:
        return None, None, "the case run recorded no tool calls", ev
    wanted = p.get("arguments") or {}
    n = 0
    for call in calls:
        if call is None or call["name"] != p["tool"]:
            continue
        ok = True
        if wanted:
            try:
                arguments = json.loads(call["arguments"], parse_constant=_no_constant) if call["arguments"] is not None else None
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                ok = False
            else:
                for key, expected in wanted.items():
                    if key not in arguments or not argument_equal(arguments[key], expected):
                        ok = False
                        break
        if ok:
            n += 1
    with_args = f" with arguments {json.dumps(wanted, sort_keys=True)}" if wanted else ""
    if mechanism == "tool.called":
        if n > 0:
            return True, float(n), None, ev
        return False, float(n), f'"{p["tool"]}" was not called{with_args}', ev
    if n == 0:
        return True, 0.0, None, ev
    return False, float(n), f'"{p["tool"]}" was called{with_args} {n} time(s)', ev


def _no_constant(name: str) -> Any:
    raise ValueError(name)


# --------------------------------------------------------------------------------------- vendor

def vendor(p: dict[str, Any], found: list[dict[str, Any]], runner: str | None) -> Result:
    name = p["name"]
    if not found:  # the runner does not produce it: as unsupported
        why = f'runner "{runner or ""}" reported no evaluation named "{name}": it does not produce that evaluation'
        return False, None, why, "assay:unsupported"
    if len(found) > 1:
        return None, None, f'the runner reported {len(found)} evaluations named "{name}"; expected one', "assay:vendor"
    e = found[0]
    verdict, score, ev = e["verdict"], finite(e["score"]), e["evaluator"]
    rationale = e["rationale"] or "no rationale given"
    _, value = vendor_reading(verdict, score, e["scale_min"], e["scale_max"])
    if verdict == "error":
        return None, value, f"the vendor reported an error: {rationale}", ev
    if verdict == "unknown":
        return None, value, "the vendor could not reach a verdict (unknown)", ev
    if verdict is not None and verdict not in ("pass", "fail"):
        return None, value, f'the vendor reported an unrecognised verdict "{verdict}"', ev
    pass_score = p.get("pass_score")
    if score is not None and pass_score is not None:
        if score >= pass_score:
            return True, value, None, ev
        return False, value, f"the vendor's score is below pass_score {number(pass_score)}", ev
    if verdict == "pass":
        return True, value, None, ev
    if verdict == "fail":
        return False, value, f"the vendor judged it failed: {rationale}", ev
    if score is not None:
        return None, value, "the vendor gave a score but no verdict: set pass_score on the assertion to map the score onto met", ev
    return None, value, "the vendor reported neither a verdict nor a score", ev


__all__ = ["evaluate_rowwise", "judge_one"]
