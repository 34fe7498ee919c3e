"""The ``exam.*`` mechanisms one case run at a time in plain Python: the oracle the differential test holds
:mod:`assay.transforms.mechanisms.exam` to (see :mod:`reference`). Globs are matched by :func:`glob_match`,
a recursive matcher written independently of the engine's translation into regular expressions."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from posixpath import normpath
from typing import Any

EV = "assay:exam"
NOT_RUN = "the runner did not run the exam's outcome probes"
NOT_CALIBRATED = "not calibrated: the band is set from the exam's own baseline replays (assay calibrate)"
LABELS = {"turns": "turns", "cost_usd": "cost (USD)", "wall_seconds": "wall time (seconds)"}
UNRECORDED = {"turns": "the replay recorded no turns", "cost_usd": "the replay recorded no cost: the harness reported none",
              "wall_seconds": "the replay recorded no wall time"}

Result = tuple[bool | None, float | None, str | None, str]


def glob_match(pattern: str, path: str) -> bool:
    """``**/``: any whole directories (none too); ``**``: anything; ``*``: anything but ``/``; else itself."""
    @lru_cache(maxsize=None)
    def at(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(path)
        if pattern.startswith("**/", i):
            return at(i + 3, j) or any(at(i + 3, k + 1) for k in range(j, len(path)) if path[k] == "/")
        if pattern.startswith("**", i):
            return any(at(i + 2, k) for k in range(j, len(path) + 1))
        if pattern[i] == "*":
            return any(at(i + 1, k) for k in range(j, len(path) + 1) if "/" not in path[j:k])
        return j < len(path) and path[j] == pattern[i] and at(i + 1, j + 1)

    return at(0, 0)


def _number(x: float) -> str:
    return str(int(x)) if float(x) == int(x) else repr(float(x))


def _no_constants(name: str) -> Any:
    raise ValueError(name)


def _read(artefact: str | None) -> tuple[dict | None, str | None]:
    if artefact is None:
        return None, "the case run has no artefact"
    try:
        data = json.loads(artefact, parse_constant=_no_constants)
    except ValueError:
        return None, "the case run's artefact is not valid JSON"
    if not isinstance(data, dict):
        return None, "the case run's artefact is not a JSON object"
    return data, None


def _string(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _measure(session: dict, name: str) -> float | None:
    x = session.get(name)
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        return None
    return float(x)


def exam(mechanism: str, p: dict[str, Any], artefact: str | None) -> Result:
    if mechanism == "exam.band" and p.get("center") is None:
        return None, None, NOT_CALIBRATED, EV
    data, problem = _read(artefact)
    if mechanism in ("exam.cap", "exam.band", "exam.profile"):
        session = data.get("session") if data is not None else None
        if problem is None and not isinstance(session, dict):
            problem = "the case run's artefact has no session summary: it is not a replay's"
        if problem is not None:
            return None, None, problem, EV
        return _session(mechanism, p, session)
    workspace = data.get("workspace") if data is not None else None
    if problem is None and not isinstance(workspace, dict):
        problem = "the case run's artefact has no workspace: it is not a replay's"
    if problem is not None:
        return None, None, problem, EV
    if mechanism == "exam.files_within":
        return _files_within(p, workspace.get("files_changed"))
    return _probe(mechanism, p, workspace)


def _session(mechanism: str, p: dict[str, Any], session: dict) -> Result:
    if mechanism == "exam.profile":
        if p["measure"] == "tool_mix":
            mix = session.get("tool_mix")
            return True, float(len(mix)) if isinstance(mix, dict) else None, None, EV
        return True, _measure(session, p["measure"]), None, EV
    used = _measure(session, p["measure"])
    if used is None:
        why = UNRECORDED[p["measure"]]
        if p["measure"] == "turns" and session.get("transcript") is False:
            why += ": it kept no transcript"
        return None, None, why, EV
    label = LABELS[p["measure"]]
    if mechanism == "exam.cap":
        if used <= p["max"]:
            return True, used, None, EV
        return False, used, f"the replay's {label} exceeded the cap of {_number(p['max'])}", EV
    low = p["center"] - p["k"] * p["spread"]
    high = p["center"] + p["k"] * p["spread"]
    if low <= used <= high:
        return True, used, None, EV
    return False, used, f"the replay's {label} is outside the calibrated band [{_number(low)}, {_number(high)}]", EV


def _files_within(p: dict[str, Any], changed: Any) -> Result:
    if not isinstance(changed, list):
        return None, None, "the replay's artefact does not list the files changed", EV
    paths = [c["path"] for c in changed if isinstance(c, dict) and isinstance(c.get("path"), str)]
    outside = [path for path in paths if not any(glob_match(g, path) for g in p["allow"])]
    if not outside:
        return True, 0.0, None, EV
    more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
    globs = ", ".join(f'"{g}"' for g in p["allow"])
    return False, float(len(outside)), f"{len(outside)} changed file(s) outside {globs}: {', '.join(outside[:3])}{more}", EV


def _probe(mechanism: str, p: dict[str, Any], workspace: dict) -> Result:
    check = mechanism.removeprefix("exam.")
    probes = workspace.get("probes")
    found = None
    for probe in probes if isinstance(probes, list) else []:
        if not isinstance(probe, dict) or probe.get("check") != check:
            continue
        if check == "command_passes" and probe.get("command") != p["command"]:
            continue
        if check in ("file_changed", "file_contains"):
            if probe.get("path") not in (p["path"], normpath(p["path"])):
                continue
            if check == "file_contains" and probe.get("text") != p["text"]:
                continue
        found = probe
        break
    what = {"command_passes": f"`{p.get('command')}`", "verify": "verify.sh"}.get(check, f'"{p.get("path")}"')
    if found is None:
        skipped = workspace.get("probes_skipped")
        if isinstance(skipped, str) and skipped:
            return None, None, skipped, EV
        absent = {"command_passes": f"no probe ran {what}: {NOT_RUN}",
                  "verify": f"no probe ran verify.sh: the exam has none, or {NOT_RUN}",
                  "file_changed": f"no probe checked {what}: {NOT_RUN}",
                  "file_contains": f'no probe looked for "{p.get("text")}" in {what}: {NOT_RUN}'}[check]
        return None, None, absent, EV
    code = found.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    output = _string(found.get("output"))
    held = found.get("held")
    value = float(code) if code is not None and check in ("command_passes", "verify") else None
    if not isinstance(held, bool):
        if check in ("file_changed", "file_contains"):
            return None, None, f"no verdict on {what}: {output or 'no output'}", EV
        if code is not None:
            return None, value, f"{what} exited {code}: the check itself failed", EV
        return None, value, f"{what} did not finish: {(output or '').split(chr(10))[-1] or 'no output'}", EV
    if held:
        return True, value, None, EV
    if check in ("command_passes", "verify"):
        meaning = ": the work does not hold" if check == "verify" else ""
        return False, value, f"{what} exited {code if code is not None else 'without an exit code'}{meaning}", EV
    if check == "file_changed":
        return False, None, f"the work left {what} {output or 'unchanged'}", EV
    return False, None, f'{what} does not contain "{p["text"]}" ({output or "not found"})', EV


__all__ = ["exam", "glob_match"]
