"""Reading a suite's target: where it may be, and what a config, a call set or an exam must hold.

A target names a file (an exam: a directory) relative to the bundle's folder. It must resolve, links
followed, to a regular file (a directory) inside that folder: otherwise a bundle could make ``assay load``
read ``/etc/passwd`` or ``/proc/self/environ`` and, were it JSON, store it. A config is read whole under
its cap; a call set is checked line by line by :func:`~.callset.explain`, the same line model the
``recorded`` runner replays with, so a bad line is refused at load rather than in the middle of a run.
An exam is loaded whole (:func:`~.exam.load_exam`) and must have every assertion reviewed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .bundle_input import (
    InputLimits, InputProblem, dotted, hostile_values, read_capped, refuse_special, resolved, utf8,
)  # fmt: skip
from .callset import explain
from .errors import BundleError, SchemaVersionError
from .exam import exam_digest, load_exam, unreviewed

__all__ = ["check_call_set", "exam_target", "read_config", "target_path"]

_FIX = "put the file inside the bundle's folder ({base}) and name it relative to that folder"


def target_path(base_dir: Path, named: str, *, folder: bool = False) -> Path:
    """The resolved path of a target named ``named``; :class:`InputProblem` when it leaves ``base_dir``, or
    is not a regular file (``folder``: not a directory)."""
    base = resolved(base_dir)
    fix = _FIX.format(base=base)
    if "\x00" in named:
        raise InputProblem(f"the path {named!r} holds a NUL character; {fix}")
    relative = Path(named)
    if relative.is_absolute():
        raise InputProblem(f"{named} is an absolute path; {fix}")
    full = resolved(base / relative)
    if not full.is_relative_to(base):
        how = "through '..'" if ".." in relative.parts else f"through a link (it resolves to {full})"
        raise InputProblem(f"{named} leads outside the bundle's folder {how}; {fix}")
    if not full.exists():
        raise InputProblem(f"{full} does not exist; target paths are relative to the bundle's folder ({base})")
    if folder:
        if not full.is_dir():
            raise InputProblem(f"{full} is not a directory; an exam target names the exam's directory")
        return full
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


def exam_target(path: Path) -> dict[str, Any]:
    """The stored target of the exam directory ``path`` (resolved): ``{"exam": {"repo", "dir", "harness",
    "sha256"}}``. Refused when the exam does not load, has assertions in draft, or lives anywhere but
    ``<repo>/.assay/exams/<slug>``: the replay runs in that repository, at the exam's pinned commit."""
    try:
        exam = load_exam(path)
    except (BundleError, SchemaVersionError) as exc:
        raise InputProblem(f"{path} is not a valid exam: " + "; ".join(str(exc).splitlines())) from None
    drafts = unreviewed(exam)
    if drafts:
        shown = ", ".join(drafts[:10]) + (f" and {len(drafts) - 10} more" if len(drafts) > 10 else "")
        raise InputProblem(f"exam {exam.spec.slug!r} ({path}) has {len(drafts)} draft assertion(s) not yet "
                           f"reviewed: {shown}; an exam runs only once every assertion is reviewed — accept or "
                           f"delete each with: assay review {path}")
    if path.parent.name != "exams" or path.parent.parent.name != ".assay":
        raise InputProblem(f"{path} is not in a repository's .assay/exams/ folder; an exam replays in the "
                           "repository that holds it — move it to <repo>/.assay/exams/<slug>/")
    repo = path.parent.parent.parent
    return {"exam": {"repo": str(repo), "dir": path.relative_to(repo).as_posix(), "harness": exam.spec.runner.name,
                     "sha256": exam_digest(path)}}
