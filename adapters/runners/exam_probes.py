"""Outcome probes: what a replay's workspace says about the work, read after the agent stopped.

Each outcome assertion of an exam becomes one :class:`Probe`, run in the replay's worktree:

- ``command_passes`` runs its command with ``bash -c`` from the workspace root; it holds when it exits 0;
- ``verify.sh`` (when the exam has one) holds on exit 0, does not on exit 1, and anything else means the
  check itself failed (``held`` None);
- ``file_changed`` holds when the work created or changed the path (from the worktree's diff);
- ``file_contains`` holds when the file exists in the workspace and contains the text.

A command that runs past its time is killed with everything it started; its probe has no verdict (``held``
None), like a check that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assay.core.exam import Exam
from assay.core.files import inside

from .watched import run_watched
from .worktree import ChangedFile

__all__ = ["OUTPUT_CHARS", "PROBE_TIMEOUT", "Probe", "run_probes"]

OUTPUT_CHARS = 4000
"""How much of the end of a probe command's output is kept."""
PROBE_TIMEOUT = 600.0
"""Seconds a probe command may run by default."""
VERIFY_KEY = "verify.sh"


@dataclass(frozen=True)
class Probe:
    """One outcome probe and what it found."""

    check: str
    """``command_passes``, ``verify``, ``file_changed`` or ``file_contains``."""
    key: str
    """The assertion's key (``verify.sh`` for the exam's verify script)."""
    command: str | None = None
    """The command run, for ``command_passes`` and ``verify``."""
    path: str | None = None
    """The path read, for ``file_changed`` and ``file_contains``."""
    text: str | None = None
    """The text looked for, for ``file_contains``."""
    exit_code: int | None = None
    """The command's exit status (None when it did not finish, or for a file probe)."""
    output: str = ""
    """The end of the command's output, or what the file probe found."""
    held: bool | None = None
    """Whether the assertion holds; None when the check itself could not tell."""

    def as_json(self) -> dict[str, Any]:
        """The probe as a JSON-safe dict."""
        return asdict(self)


def _workspace_path(text: str) -> str | None:
    """A workspace-relative path, normalised (``./a/../b`` is ``b``); None when it leaves the workspace."""
    return inside(text)


def _run(check: str, key: str, argv: list[str], shown: str, workspace: Path, env: Mapping[str, str],
         timeout: float, heartbeat: Callable[[], None] | None, *, verify: bool) -> Probe:
    done = run_watched(argv, cwd=workspace, env=env, timeout=timeout, heartbeat=heartbeat, merge_stderr=True)
    output = "\n".join(done.lines)[-OUTPUT_CHARS:]
    if done.start_error is not None:
        return Probe(check, key, command=shown, output=f"could not start: {done.start_error}")
    if done.timed_out:
        return Probe(check, key, command=shown, output=f"{output}\n[stopped after {timeout:g} s]".lstrip())
    code = done.exit_code
    held = (code == 0) if not verify else {0: True, 1: False}.get(code if code is not None else -1)
    return Probe(check, key, command=shown, exit_code=code, output=output, held=held)


def _file_probe(check: str, key: str, raw_path: str, text: str | None, workspace: Path,
                changed: list[ChangedFile]) -> Probe:
    path = _workspace_path(raw_path)
    if path is None:
        return Probe(check, key, path=raw_path, text=text, output="the path leaves the workspace")
    if check == "file_changed":
        status = next((c.status for c in changed if c.path == path), None)
        held = status is not None and status != "deleted"
        return Probe(check, key, path=path, output=status or "unchanged", held=held)
    target = workspace / path
    if not target.is_file():
        return Probe(check, key, path=path, text=text, output="no such file", held=False)
    content = target.read_text(encoding="utf-8", errors="replace")
    found = text is not None and text in content
    return Probe(check, key, path=path, text=text, output="found" if found else "not found", held=found)


def run_probes(exam: Exam, workspace: Path, changed: list[ChangedFile], *, env: Mapping[str, str],
               timeout: float = PROBE_TIMEOUT, heartbeat: Callable[[], None] | None = None) -> list[Probe]:
    """Every outcome probe of ``exam`` in ``workspace``: its outcome assertions in file order, then verify.sh.
    ``changed`` is what the agent changed (:func:`~.worktree.changed_files`, taken before any probe ran)."""
    probes: list[Probe] = []
    for assertion in exam.assertions:
        params = assertion.params
        if assertion.check == "command_passes":
            command = str(params["command"])
            probes.append(_run(assertion.check, assertion.key, ["bash", "-c", command], command, workspace, env,
                               timeout, heartbeat, verify=False))
        elif assertion.check in ("file_changed", "file_contains"):
            probes.append(_file_probe(assertion.check, assertion.key, str(params["path"]), params.get("text"),
                                      workspace, changed))
    if exam.verify_path is not None:
        script = str(exam.verify_path.resolve())
        probes.append(_run("verify", VERIFY_KEY, ["bash", script], script, workspace, env, timeout, heartbeat,
                           verify=True))
    return probes
