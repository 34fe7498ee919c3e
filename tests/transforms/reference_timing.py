"""The ``timing.*`` mechanisms one case run at a time in plain Python: the oracle the differential test
holds :mod:`assay.transforms.mechanisms.timing` to (see :mod:`reference`)."""

from __future__ import annotations

import math
from typing import Any

EV = "assay:timing"
NO_TRANSCRIPT = "the case run recorded no transcript"

Result = tuple[bool | None, float | None, str | None, str]


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def _number(x: float) -> str:
    return str(int(x)) if float(x) == int(x) else repr(float(x))


def _half_up(ms: float) -> int:
    return math.floor(ms + 0.5)


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    at = q * (len(values) - 1)
    low = math.floor(at)
    return values[low] + (values[min(low + 1, len(values) - 1)] - values[low]) * (at - low)


def _field(turn: dict[str, Any] | None, name: str) -> Any:
    return None if turn is None else turn[name]


def _gap(before: dict[str, Any] | None, turn: dict[str, Any] | None) -> float | None:
    started, ended = _finite(_field(turn, "t")), _finite(_field(before, "end_t"))
    return None if started is None or ended is None else (started - ended) * 1000


def timing(mechanism: str, p: dict[str, Any], turns: list[dict[str, Any] | None] | None) -> Result:
    if turns is None:
        return None, None, NO_TRANSCRIPT, EV
    return {"timing.response_latency": latency, "timing.interruptions": interruptions,
            "timing.silence": silence, "timing.talk_ratio": talk_ratio}[mechanism](p, turns)


def latency(p: dict[str, Any], turns: list[dict[str, Any] | None]) -> Result:
    replies = [(i, _gap(turns[i - 1], turns[i])) for i in range(1, len(turns))
               if _field(turns[i], "role") == "agent" and _field(turns[i - 1], "role") == "caller"]
    if not replies:
        return None, None, "no agent turn answers a caller turn: response latency cannot be measured", EV
    untimed = [i for i, ms in replies if ms is None]
    if untimed:
        return None, None, (f"turn timings are missing: the reply at turn {untimed[0]} has no t, or the caller turn "
                            "before it no end_t, so response latency cannot be measured"), EV
    values = [ms for _, ms in replies if ms is not None]
    p95, p50, slowest = _quantile(values, 0.95), _quantile(values, 0.5), max(values)
    worst = min(i for i, ms in replies if ms == slowest)
    said = f"the agent's slowest reply (turn {worst}) came {_half_up(slowest)} ms after the caller stopped"
    if p.get("max_ms") is not None and slowest > p["max_ms"]:
        return False, p95, f"{said}; at most {_number(p['max_ms'])} ms allowed", EV
    if p.get("p95_ms") is not None and p95 > p["p95_ms"]:
        return False, p95, f"the 95th percentile of the agent's replies is over {_number(p['p95_ms'])} ms; {said}", EV
    if p.get("p50_ms") is not None and p50 > p["p50_ms"]:
        return False, p95, f"the median of the agent's replies is over {_number(p['p50_ms'])} ms; {said}", EV
    return True, p95, None, EV


def interruptions(p: dict[str, Any], turns: list[dict[str, Any] | None]) -> Result:
    barge_ins: list[int] = []
    talk_overs: list[int] = []
    for i in range(1, len(turns)):
        pair = (_field(turns[i - 1], "role"), _field(turns[i], "role"))
        if pair not in (("agent", "caller"), ("caller", "agent")):
            continue
        gap = _gap(turns[i - 1], turns[i])
        if gap is None:
            return None, None, (f"turn timings are missing: turn {i} has no t, or the turn before it no end_t, "
                                "so interruptions cannot be counted"), EV
        if gap < -p.get("tolerance_ms", 0):
            (barge_ins if pair[1] == "caller" else talk_overs).append(i)
    value = float(len(barge_ins) + len(talk_overs))
    broken = []
    for found, cap, said in ((barge_ins, p.get("max_barge_ins"), "barge-ins (the caller over the agent)"),
                             (talk_overs, p.get("max_talk_overs"), "talk-overs (the agent over the caller)")):
        if cap is not None and len(found) > cap:
            broken.append(f"{said}: {len(found)}, the first at turn {found[0]}; at most {cap} allowed")
    return (False, value, "; ".join(broken), EV) if broken else (True, value, None, EV)


def silence(p: dict[str, Any], turns: list[dict[str, Any] | None]) -> Result:
    gaps = []
    for i in range(1, len(turns)):
        gap = _gap(turns[i - 1], turns[i])
        if gap is None:
            return None, None, (f"turn timings are missing: turn {i} has no t, or the turn before it no end_t, "
                                "so silences cannot be measured"), EV
        gaps.append((i, gap))
    if not gaps:
        return True, None, None, EV
    longest = max(g for _, g in gaps)
    at = min(i for i, g in gaps if g == longest)
    count = sum(1 for _, g in gaps if g > p["threshold_ms"])
    if count <= p.get("max_count", 0):
        return True, longest, None, EV
    return False, longest, (f"silences longer than {_number(p['threshold_ms'])} ms: {count}; at most "
                            f"{p.get('max_count', 0)} allowed; the longest, before turn {at}, lasted "
                            f"{_half_up(longest)} ms"), EV


def talk_ratio(p: dict[str, Any], turns: list[dict[str, Any] | None]) -> Result:
    if not turns:
        return None, None, "the conversation has no turns: the talk ratio cannot be measured", EV
    total = agent = 0.0
    for i, turn in enumerate(turns):
        started, ended = _finite(_field(turn, "t")), _finite(_field(turn, "end_t"))
        if started is None or ended is None:
            return None, None, (f"turn timings are missing: turn {i} has no t or no end_t, so the talk ratio "
                                "cannot be measured"), EV
        total += ended - started
        agent += (ended - started) if _field(turn, "role") == "agent" else 0.0
    if not total > 0:
        return None, None, "the turns have no duration (each ends when it starts): the talk ratio cannot be measured", EV
    share = agent / total
    if p.get("min") is not None and share < p["min"]:
        return False, share, f"the agent's share of the speaking time is under {_number(p['min'])}", EV
    if p.get("max") is not None and share > p["max"]:
        return False, share, f"the agent's share of the speaking time is over {_number(p['max'])}", EV
    return True, share, None, EV
