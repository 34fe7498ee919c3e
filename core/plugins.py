"""The registry of installed runners: plug-ins in the ``assay.runners`` entry-point group.

A distribution declares each of its runners as an entry point in the group ``assay.runners``
(``<name> = "<module>:<class>"``), and Assay's built-ins register the same way in its own
pyproject.toml. Nothing is imported to list names (:func:`runner_names`); a class is imported when it
is first asked for (:func:`runner_class`) and checked then: a :class:`~.runner.Runner` subclass whose
declared name is the entry point's name, with known mechanisms and target kinds. A broken plug-in
raises :class:`RunnerPluginError` (naming its distribution and entry point) when asked for by name, and
is left out of :func:`registered` with that error logged, so it never takes the other runners down.

Scanning the installed distributions' entry points and reading their metadata costs milliseconds each
time, and a run asks for its runner several times. The scan is kept until the import path changes: a
folder added to ``sys.path``, or a package installed, removed or upgraded in one of its folders (which
changes that folder's modification time), makes the next question scan again. Like importlib.metadata's
own cache of a folder, it is as fine as the file system's clock: a change within a few milliseconds of
a scan is seen from the folder's next change on.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from .errors import AssayError, NotFoundError
from .mechanisms import MECHANISMS
from .runner import TARGET_KINDS, Runner

log = logging.getLogger(__name__)

__all__ = [
    "ENTRY_POINT_GROUP", "RunnerPluginError", "declaration_problems", "default_runner_for", "registered",
    "runner_class", "runner_names",
]

ENTRY_POINT_GROUP = "assay.runners"
"""The entry-point group a distribution declares its runners in: ``<runner name> = "<module>:<class>"``."""


class RunnerPluginError(AssayError, TypeError):
    """An installed runner plug-in cannot be used: it does not load, or what it gives is not a valid runner."""

    def __init__(self, name: str, distribution: str, value: str, problem: str):
        self.name, self.distribution, self.value, self.problem = name, distribution, value, problem
        super().__init__(
            f"runner plug-in {name!r} (entry point {name} = {value!r} in group {ENTRY_POINT_GROUP!r} of "
            f"distribution {distribution}) cannot be used: {problem}; fix or uninstall {distribution}"
        )


_loaded: dict[tuple[str, str, str], type[Runner]] = {}
_reported: set[str] = set()
_scanned: tuple[tuple[tuple[str, int | None], ...], dict[str, list[EntryPoint]], dict[int, str]] | None = None
_scanning = threading.Lock()


def _import_path() -> tuple[tuple[str, int | None], ...]:
    """Each ``sys.path`` folder with its modification time: what installing or removing a package changes."""
    stamped = []
    for entry in sys.path:
        try:
            stamped.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            stamped.append((entry, None))
    return tuple(stamped)


def _scan() -> tuple[dict[str, list[EntryPoint]], dict[int, str]]:
    """The group's entry points by runner name, and each one's distribution (name and version) by ``id``;
    scanned again only when :func:`_import_path` changed."""
    global _scanned
    path = _import_path()
    with _scanning:
        if _scanned is None or _scanned[0] != path:
            found: dict[str, list[EntryPoint]] = {}
            labels: dict[int, str] = {}
            for ep in entry_points(group=ENTRY_POINT_GROUP):
                found.setdefault(ep.name, []).append(ep)
                labels[id(ep)] = _label(ep)
            _scanned = (path, found, labels)
        return _scanned[1], _scanned[2]


def _entry_points() -> dict[str, list[EntryPoint]]:
    """Every installed entry point of the group by runner name (several when distributions clash)."""
    return _scan()[0]


def _distribution(ep: EntryPoint) -> str:
    """``"<name> <version>"`` of the distribution declaring ``ep``: read at the scan that found it, or now."""
    label = _scan()[1].get(id(ep))
    return _label(ep) if label is None else label  # None: found by an earlier scan (the path changed since)


def _label(ep: EntryPoint) -> str:
    return f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "<unknown distribution>"


def declaration_problems(cls: object, name: str | None = None) -> list[str]:
    """What is wrong with ``cls`` as a runner (empty when nothing); ``name``: the name it must declare."""
    if not (isinstance(cls, type) and issubclass(cls, Runner)):
        return [f"it gives {cls!r}, not a subclass of {Runner.__module__}.Runner"]
    missing = [attr for attr in ("name", "mechanisms", "target_kinds") if not hasattr(cls, attr)]
    if missing:
        return [f"runner {cls.__qualname__} must declare {attr!r}" for attr in missing]
    problems = []
    if name is not None and cls.name != name:
        problems.append(f"the class declares name {cls.name!r}; an entry point's name must be its runner's name")
    unknown = sorted(set(cls.mechanisms) - set(MECHANISMS))
    if not cls.mechanisms or unknown:
        problems.append(f"mechanisms must be a non-empty set of known mechanisms; unknown: {unknown}")
    unknown = sorted(set(cls.target_kinds) - set(TARGET_KINDS))
    if not cls.target_kinds or unknown:
        problems.append(f"runner {cls.name!r} declares unknown target kinds {unknown}; known: {list(TARGET_KINDS)}")
    if not isinstance(cls.synchronous, bool):
        problems.append(f"synchronous must be True or False, not {cls.synchronous!r}")
    gaps = cls.known_gaps
    reasons = gaps.items() if isinstance(gaps, Mapping) else [(None, None)]
    if not all(isinstance(test, str) and reason and isinstance(reason, str) for test, reason in reasons):
        problems.append(f"known_gaps must map conformance test names to non-empty reasons, not {gaps!r}")
    return problems


def _load(name: str, eps: list[EntryPoint]) -> type[Runner]:
    if len(eps) > 1:
        where = " and ".join(f"{_distribution(ep)} ({ep.value})" for ep in eps)
        raise RunnerPluginError(
            name, " and ".join(_distribution(ep) for ep in eps), eps[0].value,
            f"{where} both declare it; a runner name is unique among installed packages",
        )
    [ep] = eps
    key = (_distribution(ep), ep.name, ep.value)
    if key not in _loaded:
        try:
            cls = ep.load()
        except Exception as exc:  # a plug-in's own bug: name the plug-in, keep the cause chained
            raise RunnerPluginError(name, key[0], ep.value, f"loading it raised {type(exc).__name__}: {exc}") from exc
        problems = declaration_problems(cls, name)
        if problems:
            raise RunnerPluginError(name, key[0], ep.value, "; ".join(problems))
        _loaded[key] = cls
    return _loaded[key]


def runner_names() -> list[str]:
    """The name of every installed runner, imported or not: listing names imports no runner."""
    return sorted(_entry_points())


def runner_class(name: str) -> type[Runner]:
    """The runner class installed under ``name``, imported now if not yet.

    Raises :class:`NotFoundError` for a name no installed package declares and
    :class:`RunnerPluginError` for a plug-in that is broken (it does not load or declares badly).
    """
    eps = _entry_points()
    if name not in eps:
        none = f"no installed distribution declares entry points in group {ENTRY_POINT_GROUP!r}; reinstall assay"
        raise NotFoundError("runner", name, "" if eps else none, known=sorted(eps))
    return _load(name, eps[name])


def registered() -> dict[str, type[Runner]]:
    """Every installed runner that loads, by name (each one imported now).

    A broken plug-in must not take the others down: it is left out and logged as an error, once per
    process, naming its distribution and what is wrong; asking for it by name raises that error.
    """
    found: dict[str, type[Runner]] = {}
    for name, eps in sorted(_entry_points().items()):
        try:
            found[name] = _load(name, eps)
        except RunnerPluginError as exc:
            if str(exc) not in _reported:
                _reported.add(str(exc))
                log.error("%s (left out of the registered runners)", exc)
    return found


def default_runner_for(target_kind: str) -> str:
    """The one registered runner for a target kind, when exactly one accepts it."""
    preferred = {"config": "config_check", "call_set": "recorded"}.get(target_kind)
    if preferred in runner_names():
        cls = runner_class(preferred)
        if target_kind in cls.target_kinds and cls.synchronous:
            return preferred
    names = sorted(n for n, c in registered().items() if target_kind in c.target_kinds and c.synchronous)
    if len(names) == 1:
        return names[0]
    raise NotFoundError("runner", f"for target {target_kind!r}", "name one with --runner")
