"""The scripted agent the model server plays: a fake-harness playbook, turned into model responses.

The same playbook format as :mod:`assay.fakes.harness` (``[[good]]`` steps: ``say`` and at most one of
``read``, ``edit``, ``write``, ``run``), so one project's ``.fake-harness/playbook.toml`` drives the fake
harness and the real ones alike. Here the harness does the work and the server only decides what the model
says next, so the script is cut into **turns**: each tool step is one response (its text, then the call),
and text-only steps are folded into the next response's text (the last ones into the final answer, which
ends the session).

The server keeps no state between requests: the conversation a request carries says how far the agent got.
The number of tool results already in it is the index of the turn to play next, so a retried request gets
the same answer and two sessions can share one server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import Step, load_playbook
from .harness_tools import UsageError

FLAVOURS = ("good", "regressed")
PLAYBOOK_IN_PROJECT = Path(".fake-harness") / "playbook.toml"
"""Where a project keeps its playbook, relative to the agent's working directory."""
DONE_TEXT = "Done."
"""The final answer of a script whose last step is a tool call."""


@dataclass(frozen=True)
class Turn:
    """One model response of the script: optional text, then at most one tool call (None: the final answer)."""

    text: str
    action: str | None = None
    """``read``, ``edit``, ``write`` or ``run``."""
    argument: Any = None


def turns_of(steps: list[Step]) -> list[Turn]:
    """The script's responses: one per tool step, text-only steps folded forward, a final answer last."""
    turns: list[Turn] = []
    said: list[str] = []
    for step in steps:
        if step.say:
            said.append(step.say)
        if step.action:
            turns.append(Turn("\n\n".join(said), step.action, step.argument))
            said = []
    turns.append(Turn("\n\n".join(said) or DONE_TEXT))
    return turns


@dataclass(frozen=True)
class Script:
    """Where the playbook comes from: a fixed file, else the project's own under the agent's working directory."""

    playbook: Path | None = None
    flavour: str = "good"

    def __post_init__(self) -> None:
        if self.flavour not in FLAVOURS:
            raise UsageError(f"script flavour {self.flavour!r} is not one of {', '.join(FLAVOURS)}")

    def turns(self, cwd: str | None) -> list[Turn]:
        """The turns to play for an agent working in ``cwd``; UsageError when there is no playbook to read."""
        path = self.playbook
        if path is None:
            if not cwd:
                raise UsageError("the request does not say the agent's working directory, and the server was "
                                 "started without a playbook (--playbook)")
            path = Path(cwd) / PLAYBOOK_IN_PROJECT
        steps = load_playbook(path)[self.flavour]
        if not steps:
            raise UsageError(f"playbook {path} has no [[{self.flavour}]] steps")
        return turns_of(steps)

    def next_turn(self, cwd: str | None, tool_results: int) -> Turn:
        """The turn after ``tool_results`` answered calls; past the script's end, its final answer again."""
        turns = self.turns(cwd)
        return turns[min(tool_results, len(turns) - 1)]


def edit_hunk(text: str, old: str, new: str, replace_all: bool = False) -> tuple[list[str], list[str]]:
    """The whole lines of ``text`` that the (first, or every) occurrence of ``old`` spans, before and after the
    edit: what a line-based patch removes and adds. UsageError when ``old`` is not there."""
    start = text.find(old)
    if start < 0:
        raise UsageError(f"the text to replace was not found: {old[:80]!r}")
    end = text.rfind(old) + len(old) if replace_all else start + len(old)
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    last = len(text) if last < 0 else last
    before = text[first:last]
    after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
    return before.split("\n"), after.split("\n")


__all__ = ["DONE_TEXT", "FLAVOURS", "PLAYBOOK_IN_PROJECT", "Script", "Turn", "edit_hunk", "turns_of"]
