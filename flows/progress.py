"""Live progress on the terminal: a count against its total, a rate and the elapsed time.

While a bar is live, library loggers (Prefect, httpx, uvicorn) are held at WARNING, so their INFO lines
never interleave with it (``--debug`` keeps them). ``--quiet`` (:func:`configure`) turns every bar off.
Cheap to import: rich is imported when a bar starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

_mode = {"quiet": False, "debug": False}

CHATTY = ("prefect", "prefect.server", "prefect.client", "prefect.flow_runs", "prefect.task_runs",
          "httpx", "httpcore", "uvicorn", "uvicorn.error", "fastapi")
"""Loggers whose INFO lines would interleave with a bar."""


def configure(*, quiet: bool, debug: bool) -> None:
    """The command line's global options: ``--quiet`` (no bars) and ``--debug`` (library logs stay on).
    Prefect's own log level is set apart, before it is imported (:func:`.workspace.use_prefect_home`)."""
    _mode.update(quiet=quiet, debug=debug)


def is_quiet() -> bool:
    """Whether ``--quiet`` was given."""
    return _mode["quiet"]


@contextmanager
def libraries_held_back(level: int = logging.WARNING) -> Iterator[None]:
    """Raise the chatty library loggers to ``level`` for the duration (not with ``--debug``)."""
    if _mode["debug"]:
        yield
        return
    loggers = [logging.getLogger(name) for name in CHATTY]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        if lg.getEffectiveLevel() < level:
            lg.setLevel(level)
    try:
        yield
    finally:
        for lg, old in zip(loggers, before, strict=True):
            lg.setLevel(old)


def describe(done: int, total: int | None, unit: str, elapsed: float | None, of: str | None = None) -> str:
    """``"3/4 case runs 1.5/s"``: the count against its total, and the mean rate since the start. A
    count past its total (several case runs of one case, as a call set may hold) names what the total
    counts, ``of`` (default ``unit``): ``"12 case runs (4 cases)"``."""
    if total is None:
        count = f"{done} {unit}"
    elif done <= total:
        count = f"{done}/{total} {unit}"
    else:
        count = f"{done} {unit} ({total} {of or unit})"
    return count + (f" {done / elapsed:.1f}/s" if elapsed and done else "")


@dataclass
class Counter:
    """A live count: :meth:`total` once it is known, :meth:`advance` as work lands."""

    _progress: Any
    _task: Any

    def total(self, total: int | None) -> None:
        self._progress.update(self._task, total=total)

    def advance(self, n: int) -> None:
        self._progress.advance(self._task, n)

    def update(self, done: int, total: int | None, unit: str | None = None) -> None:
        """Set the count, its total and, when given, what it counts (the signature of a plain progress
        callback). A new unit starts its own clock, so its rate is its own."""
        if unit is not None and unit != self._progress.tasks[self._task].fields.get("unit"):
            self._progress.reset(self._task, total=total, completed=done, unit=unit)
        else:
            self._progress.update(self._task, completed=done, total=total)


@contextmanager
def live_count(
    console: Any, description: str, *, unit: str, of: str | None = None, total: int | None = None,
    quiet: bool = False, get_time: Callable[[], float] | None = None,
) -> Iterator[Counter]:
    """A transient one-line bar: spinner, description, bar, ``N/M unit`` (:func:`describe`), rate,
    elapsed. Off when ``quiet`` or ``--quiet``; library logs held back while it runs."""
    from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column
    from rich.text import Text

    class CountColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            total_ = int(task.total) if task.total is not None else None
            return Text(describe(int(task.completed), total_, task.fields.get("unit") or unit, task.elapsed, of))

    progress = Progress(
        SpinnerColumn(),  # the description (a suite, say) whole, folded only when nothing else gives
        TextColumn("[bold]{task.description}", table_column=Column(
            overflow="fold", min_width=max(1, min(len(description), console.width - 40)))),
        BarColumn(bar_width=None, table_column=Column(ratio=1)), CountColumn(table_column=Column(no_wrap=True)),
        TimeElapsedColumn(table_column=Column(no_wrap=True)),
        console=console, transient=True, expand=True,
        disable=quiet or _mode["quiet"] or not console.is_terminal,  # a pipe gets no bar, nor a stray blank line
        **({"get_time": get_time} if get_time else {}),
    )
    with libraries_held_back(), progress:
        yield Counter(progress, progress.add_task(description, total=total))
