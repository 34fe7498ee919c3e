"""Reading a coding-agent replay's artefact into columns, once per distinct artefact, for the ``exam.*`` mechanisms.

A replay's case run carries its evidence as JSON in ``artefact``::

    {"workspace": {"worktree", "files_changed": [{"status", "path"}], "probes": [{"check", "key", "command",
                   "path", "text", "exit_code", "output", "held"}], "probes_skipped"?},
     "session": {"transcript": bool, "turns"?, "cost_usd", "wall_seconds", "reads_before_first_write"?,
                 "tool_mix"?: {tool: calls}, ...}}

:func:`read_replays` reads each distinct artefact of a batch into one row of :data:`REPLAY_SCHEMA`: a part
that cannot be read names its problem (``workspace_problem``, ``session_problem``, ``changed_problem``),
and a field of the wrong type reads as null. :func:`glob_regex` turns an ``exam.files_within`` glob into
the regular expression Polars matches paths with.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

NO_ARTEFACT = "the case run has no artefact"
NOT_JSON = "the case run's artefact is not valid JSON"
NOT_OBJECT = "the case run's artefact is not a JSON object"
NO_WORKSPACE = "the case run's artefact has no workspace: it is not a replay's"
NO_SESSION = "the case run's artefact has no session summary: it is not a replay's"
NO_CHANGES = "the replay's artefact does not list the files changed"

PROBE = pl.Struct({"check": pl.String, "command": pl.String, "path": pl.String, "text": pl.String,
                   "exit_code": pl.Int64, "output": pl.String, "held": pl.Boolean})
"""One outcome probe, as the ``exam.*`` mechanisms read it."""
MEASURES = ("turns", "cost_usd", "wall_seconds", "reads_before_first_write")
"""The session summary's numbers the mechanisms read."""
REPLAY_SCHEMA: dict[str, pl.DataType] = {
    "artefact": pl.String(), "workspace_problem": pl.String(), "session_problem": pl.String(),
    "probes": pl.List(PROBE), "probes_skipped": pl.String(), "changed": pl.List(pl.String()),
    "changed_problem": pl.String(), **{m: pl.Float64() for m in MEASURES}, "tool_mix": pl.Float64(),
    "transcript": pl.Boolean(),
}
"""One row per distinct artefact; ``tool_mix`` is how many distinct tools the replay called."""


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    """A finite JSON number (not a boolean) as a float; anything else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _probe(entry: dict[str, Any]) -> dict[str, Any]:
    code = entry.get("exit_code")
    held = entry.get("held")
    return {**{name: _text(entry.get(name)) for name in ("check", "command", "path", "text", "output")},
            "exit_code": code if isinstance(code, int) and not isinstance(code, bool) else None,
            "held": held if isinstance(held, bool) else None}


def _workspace(workspace: Any) -> dict[str, Any]:
    if not isinstance(workspace, dict):
        return {"workspace_problem": NO_WORKSPACE, "probes": []}
    probes = workspace.get("probes")
    changed = workspace.get("files_changed")
    paths = ([_text(c.get("path")) for c in changed if isinstance(c, dict) and isinstance(c.get("path"), str)]
             if isinstance(changed, list) else None)
    return {"probes": [_probe(p) for p in probes if isinstance(p, dict)] if isinstance(probes, list) else [],
            "probes_skipped": _text(workspace.get("probes_skipped")), "changed": paths,
            "changed_problem": NO_CHANGES if paths is None else None}


def _session(session: Any) -> dict[str, Any]:
    if not isinstance(session, dict):
        return {"session_problem": NO_SESSION}
    mix = session.get("tool_mix")
    transcript = session.get("transcript")
    return {**{m: _number(session.get(m)) for m in MEASURES},
            "tool_mix": float(len(mix)) if isinstance(mix, dict) else None,
            "transcript": transcript if isinstance(transcript, bool) else None}


def read_replay(text: str | None) -> dict[str, Any]:
    """One artefact as a row of :data:`REPLAY_SCHEMA` (missing columns are null)."""
    if text is None:
        problem = NO_ARTEFACT
    else:
        try:
            data = json.loads(text, parse_constant=_refuse)
        except ValueError:
            problem = NOT_JSON
        else:
            if isinstance(data, dict):
                return {"artefact": text, **_workspace(data.get("workspace")), **_session(data.get("session"))}
            problem = NOT_OBJECT
    return {"artefact": text, "workspace_problem": problem, "session_problem": problem, "probes": []}


def read_replays(artefacts: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
    """One row per distinct artefact (null included), read; and each case run's row in it."""
    distinct = artefacts.unique(maintain_order=True)
    table = pl.DataFrame([read_replay(text) for text in distinct.to_list()], schema=REPLAY_SCHEMA).with_row_index("_a")
    index = artefacts.to_frame("artefact").join(
        table.select("artefact", "_a"), on="artefact", how="left", nulls_equal=True, maintain_order="left",
    )["_a"]
    return table, index


def glob_regex(pattern: str) -> str:
    """The regular expression (Rust's ``regex`` syntax, anchored) matching the paths ``pattern`` matches.

    ``**/`` matches any number of whole directories (none included), ``**`` anything (across directories),
    ``*`` anything within one directory; every other character matches itself. So ``src/**`` is everything
    under ``src/``, ``**/test_*.py`` a test module in any directory (the root too), ``src/*.py`` only
    ``src``'s own modules."""
    out, k = ["(?s)^"], 0
    while k < len(pattern):
        if pattern.startswith("**/", k):
            out.append("(?:.*/)?")
            k += 3
        elif pattern.startswith("**", k):
            out.append(".*")
            k += 2
        elif pattern[k] == "*":
            out.append("[^/]*")
            k += 1
        else:
            end = k
            while end < len(pattern) and pattern[end] != "*":
                end += 1
            out.append(pl.escape_regex(pattern[k:end]))
            k = end
    return "".join(out) + "$"


__all__ = ["NO_ARTEFACT", "NO_CHANGES", "NO_SESSION", "NO_WORKSPACE", "NOT_JSON", "NOT_OBJECT", "REPLAY_SCHEMA",
           "glob_regex", "read_replay", "read_replays"]
