"""Reading a suite's target file: where it may be, and what a config or a call set must hold.

A target names a file relative to the bundle's folder. It must resolve, links followed, to a regular
file inside that folder: otherwise a bundle could make ``assay load`` read ``/etc/passwd`` or
``/proc/self/environ`` and, were it JSON, store it. A config is read whole under its cap; a call set
is checked line by line by :func:`~.callset.explain`, the same line model the ``recorded`` runner
replays with, so a bad line is refused at load rather than in the middle of a run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .bundle_input import InputLimits, InputProblem, dotted, hostile_values, read_capped, refuse_special, utf8
from .callset import explain

__all__ = ["check_call_set", "read_config", "target_path"]

_FIX = "put the file inside the bundle's folder ({base}) and name it relative to that folder"


def target_path(base_dir: Path, named: str) -> Path:
    """The resolved path of a target named ``named``; :class:`InputProblem` when it leaves ``base_dir``."""
    base = base_dir.resolve()
    fix = _FIX.format(base=base)
    if "\x00" in named:
        raise InputProblem(f"the path {named!r} holds a NUL character; {fix}")
    relative = Path(named)
    if relative.is_absolute():
        raise InputProblem(f"{named} is an absolute path; {fix}")
    full = (base / relative).resolve()
    if not full.is_relative_to(base):
        how = "through '..'" if ".." in relative.parts else f"through a link (it resolves to {full})"
        raise InputProblem(f"{named} leads outside the bundle's folder {how}; {fix}")
    if not full.exists():
        raise InputProblem(f"{full} does not exist; target paths are relative to the bundle's folder ({base})")
    refuse_special(full)
    return full


def read_config(path: Path, limits: InputLimits) -> dict[str, Any]:
    """The compiled config in ``path``: a JSON object of finite numbers and NUL-free text, under the caps."""
    try:
        text = utf8(read_capped(path, limits.max_config_bytes, "ASSAY_MAX_CONFIG_BYTES"))
        config = json.loads(text)
    except InputProblem as exc:
        raise InputProblem(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputProblem(f"{path} is not valid JSON: {exc}; a config target is a compiled config in JSON") from None
    except RecursionError:
        why = f"{path} is nested too deeply to parse; flatten it (the cap is ASSAY_MAX_NESTING levels)"
        raise InputProblem(why) from None
    if not isinstance(config, dict):
        raise InputProblem(f"{path} holds a JSON {type(config).__name__}; a compiled config is a JSON object")
    hostile = hostile_values(config, limits.max_nesting)
    if hostile:
        raise InputProblem(f"{path}: " + "; ".join(f"{dotted(loc)}: {what}" for loc, what in hostile[:5]))
    return config


def check_call_set(path: Path, case_keys: Collection[str], limits: InputLimits) -> str:
    """Check every line of the call set ``path`` against the suite's cases; return the file's sha256."""
    problems, more = explain(path, set(case_keys), limit=5, limits=limits)
    if problems:
        where = [", ".join(p for p in (f"line {n}" if n else "", field) if p) for n, field, _ in problems]
        lines = [f"{at}: {what}" for at, (_, _, what) in zip(where, problems)]
        tail = "; and more" if more else ""
        raise InputProblem(f"{path} is not a valid call set: " + "; ".join(lines) + tail)
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
