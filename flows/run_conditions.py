"""A suite run under a named condition, or with another model under test (``assay run SUITE --condition --model``).

An exam records its condition (:mod:`.exam_run`); a suite run on a platform runner does the same: the runner
creates the assistant with the model asked for in place of the config's and records ``condition: {name,
model_asked}`` with the config it ran in every case run's artefact
(:meth:`assay.adapters.runners.platform_chat.PlatformRunner.artefact`). A runner that does not create the
assistant (a recording, a call set, a vendor-held agent) cannot honour either, so such a run is refused
before it starts rather than run on a model nobody asked for.
"""

from __future__ import annotations

from typing import Any

from assay.core.errors import UsageError
from assay.core.plugins import RunnerPluginError, runner_class, runner_names


def check_conditions(ws: Any, suite: str, runner: str | None) -> None:
    """Refuse ``--condition``/``--model`` when a runner the run would start cannot take them, naming those that can."""
    from .operations import runners_for

    names = runners_for(ws, suite, runner)
    unable = [name for name in names if not _creates_assistant(name)]
    if unable:
        able = [n for n in runner_names() if _creates_assistant(n)]
        raise UsageError(f"runner {', '.join(map(repr, unable))} cannot run suite {suite!r} under --condition or "
                         f"--model: it does not create the assistant under test; run it with --runner "
                         f"{' or '.join(able) or 'a platform runner'}, or drop --condition and --model")


def _creates_assistant(name: str) -> bool:
    """Whether runner ``name`` creates the assistant from a compiled config, and so can be told its model."""
    try:
        cls = runner_class(name)
    except RunnerPluginError:  # a broken plug-in is reported when asked for by name, not while listing others
        return False
    return bool(getattr(cls, "takes_model", False)) and "config" in cls.target_kinds
