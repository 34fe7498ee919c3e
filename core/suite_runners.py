"""Which runners play a suite: the ones it declares (``runners:`` in the bundle), else its target's default.

A suite may name the runners that play it; ``assay run`` without ``--runner``, the nightly sweep and the
deployments then start one run per declared runner. Scheduled work never falls back silently: a suite that
declares no runner is swept on its target's default runner only when that runner evaluates every mechanism
the suite's assertions use, so a conversation suite is never swept by a runner that holds no conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ConfigError, NotFoundError
from .names import nearest
from .plugins import RunnerPluginError, default_runner_for, runner_class, runner_names

__all__ = ["declared_problems", "runners_to_start", "scheduled_runners"]


def _accepting(kind: str) -> list[str]:
    """Installed runners that accept a target of this kind (each imported now)."""
    found = []
    for name in runner_names():
        try:
            if kind in runner_class(name).target_kinds:
                found.append(name)
        except RunnerPluginError:  # a broken plug-in is reported when asked for by name, not while listing others
            continue
    return found


def declared_problems(runners: Sequence[str], kind: str) -> list[tuple[int, str]]:
    """Per declared runner (by its position), why a suite whose target is a ``kind`` cannot name it: not
    installed, or it does not accept that target."""
    installed = runner_names()
    problems = []
    for i, name in enumerate(runners):
        if name not in installed:
            close = nearest(name, installed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append((i, f"unknown runner {name!r}; {hint}installed runners: {', '.join(installed)}"))
            continue
        accepts = runner_class(name).target_kinds
        if kind not in accepts:
            problems.append((i, f"runner {name!r} cannot play a {kind!r} target (it accepts "
                                f"{', '.join(sorted(accepts))}); runners that can: {', '.join(_accepting(kind))}"))
    return problems


def runners_to_start(suite: str, declared: Sequence[str], kind: str, explicit: str | None = None) -> list[str]:
    """The runners a run of ``suite`` starts on: ``explicit`` (``--runner``) alone; else every declared runner
    that accepts the target; else the target's default runner. Declared runners none of which accept the
    target (a plug-in changed since the bundle was loaded) are refused, naming the fix."""
    if explicit is not None:
        return [explicit]
    if not declared:
        return [default_runner_for(kind)]
    usable = [name for name in declared if name in runner_names() and kind in runner_class(name).target_kinds]
    if not usable:
        raise ConfigError(
            f"suite {suite!r} declares runners {', '.join(declared)}, and none of them accepts its {kind!r} target: "
            f"declare one that does in the bundle (`runners: [{', '.join(_accepting(kind)) or 'NAME'}]`) and "
            "`assay load` it, or name one with --runner")
    return usable


def scheduled_runners(suite: str, declared: Sequence[str], kind: str, mechanisms: Iterable[str]) -> list[str]:
    """The runners scheduled work (the nightly sweep, a deployment) starts ``suite`` on: its declared ones; with
    none declared, its target's default runner, only when that runner evaluates every mechanism of the suite's
    assertions (``mechanisms``) — otherwise every assertion it cannot evaluate would fail as unsupported."""
    if declared:
        return runners_to_start(suite, declared, kind)
    try:
        default = default_runner_for(kind)
    except NotFoundError:
        raise ConfigError(
            f"suite {suite!r} declares no runners, and no single runner is the default for its {kind!r} target: "
            f"declare the runners that play it in the bundle (`runners: [...]` on the suite; for a {kind!r} "
            f"target: {', '.join(_accepting(kind))}) and `assay load` it") from None
    missing = sorted(set(mechanisms) - runner_class(default).mechanisms)
    if missing:
        able = [n for n in _accepting(kind) if set(mechanisms) <= runner_class(n).mechanisms]
        some = ", ".join(able or _accepting(kind))
        raise ConfigError(
            f"suite {suite!r} declares no runners, and its default runner {default!r} cannot evaluate "
            f"{', '.join(missing)}: declare the runners that play it in the bundle (`runners: [...]` on the suite; "
            f"for a {kind!r} target: {some}) and `assay load` it")
    return [default]
