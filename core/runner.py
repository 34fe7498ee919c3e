"""The runner contract: claim -> report -> release; and the registry of installed runners.

A runner is a class registered by name that declares, as data, what it can do: the mechanisms its
evidence supports, the run targets it accepts, whether it is synchronous, and the conformance tests it
is known to fail (``known_gaps``). It never writes assertion results and never decides whether a test
passed; it produces :class:`~.evidence.Report` batches, and :func:`drive` hands them to a
:class:`Ledger` under a lease.

Synchronous runners implement :meth:`Runner.execute`. Asynchronous runners (a vendor that answers
hours later) implement :meth:`Runner.submit` and :meth:`Runner.collect`: a run is submitted under one
lease and collected under later ones by a scheduled flow.

Runners are plug-ins: a distribution declares each of its runners as an entry point in the group
``assay.runners`` (``<name> = "<module>:<class>"``), and Assay's built-ins register the same way in its
own pyproject.toml. Nothing is imported to list names (:func:`runner_names`); a class is imported
when it is first asked for (:func:`runner_class`) and checked then: a :class:`Runner` subclass whose
declared name is the entry point's name, with known mechanisms and target kinds. A broken plug-in
raises :class:`RunnerPluginError` (naming its distribution and entry point) when asked for by name, and
is left out of :func:`registered` with that error logged, so it never takes the other runners down.
"""

from __future__ import annotations

import logging
from abc import ABC
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Protocol

from .errors import AssayError, NotFoundError
from .evidence import Report
from .mechanisms import MECHANISMS

log = logging.getLogger(__name__)

TargetKind = Literal["config", "call_set"]
TARGET_KINDS: tuple[str, ...] = ("config", "call_set")


@dataclass(frozen=True)
class CaseSpec:
    """One case as a runner sees it: the situation, never a mechanism."""

    case_id: str
    case_key: str
    content: dict[str, Any]
    """The case's content (title, situation) as snapshotted for this run."""


@dataclass(frozen=True)
class RunJob:
    """Everything a runner needs to execute one run."""

    run_id: str
    team_id: str
    suite_key: str
    target_kind: str
    target: dict[str, Any]
    """The run target: ``{"config": {...}}`` (a compiled assistant config) or
    ``{"call_set": {"path": ..., "sha256": ...}}`` (a file of recorded calls)."""
    cases: tuple[CaseSpec, ...]
    deadline_at: datetime | None = None

    def case_by_key(self) -> dict[str, CaseSpec]:
        return {c.case_key: c for c in self.cases}


@dataclass(frozen=True)
class Lease:
    """Proof of holding a run: only the holder may report, renew or release."""

    run_id: str
    owner: str
    expires_at: datetime


ReceiptStatus = Literal["accepted", "duplicate", "rejected"]


@dataclass(frozen=True)
class Receipt:
    """What became of a report."""

    status: ReceiptStatus
    case_runs: int = 0
    evaluations: int = 0
    reason: str | None = None


class Ledger(Protocol):
    """The run ledger a runner reports into (implemented by the catalog in ``storage``)."""

    def claim(self, run_id: str, owner: str, ttl_seconds: float) -> Lease: ...

    def renew(self, lease: Lease, ttl_seconds: float) -> Lease: ...

    def report(self, lease: Lease, report: Report) -> Receipt: ...

    def release(self, lease: Lease, *, error: str | None = None) -> None: ...


Heartbeat = Callable[[], None]
"""Called by a runner while it works; renews the lease."""


class Runner(ABC):
    """Base of every runner. Subclasses set the class attributes and implement execute (or submit/collect)."""

    name: ClassVar[str]
    """The registry name (``config_check``, ``recorded``, ``vapi_chat``, ...)."""
    mechanisms: ClassVar[frozenset[str]]
    """Mechanisms whose evidence this runner's reports carry."""
    synchronous: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]]
    """Run targets this runner can execute (``config``, ``call_set``)."""
    known_gaps: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Conformance-kit tests this runner is known to fail: test name -> why. The kit runs each as a
    strict expected failure with that reason, so fixing the gap shows up as a failure to update this."""

    batch_size: int = 10_000
    """Case runs per report: large enough to write few files, small enough to renew often."""

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        """Synchronous runners: execute the job, yielding report batches."""
        raise NotImplementedError(f"runner {self.name!r} is asynchronous: use submit/collect")

    def submit(self, job: RunJob) -> str:
        """Asynchronous runners: start the job remotely; return the provider's reference."""
        raise NotImplementedError(f"runner {self.name!r} is synchronous: use execute")

    def collect(self, job: RunJob, provider_ref: str) -> Iterator[Report] | None:
        """Asynchronous runners: reports if the provider has finished, None if not yet."""
        raise NotImplementedError(f"runner {self.name!r} is synchronous: use execute")

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        """A small valid run target (kind, target) for these cases, written under ``workdir``.

        The conformance kit runs every registered runner against its own example target.
        """
        raise NotImplementedError(f"runner {cls.name!r} provides no example target for the conformance kit")


# --- the registry: runners are plug-ins in the ``assay.runners`` entry-point group -----------------

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


def _entry_points() -> dict[str, list[EntryPoint]]:
    """Every installed entry point of the group by runner name (several when distributions clash)."""
    found: dict[str, list[EntryPoint]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, []).append(ep)
    return found


def _distribution(ep: EntryPoint) -> str:
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
        none = f"none (no installed distribution declares entry points in group {ENTRY_POINT_GROUP!r}; reinstall assay)"
        raise NotFoundError("runner", name, f"known runners: {', '.join(sorted(eps)) or none}")
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


def register(cls: type[Runner]) -> type[Runner]:
    """Transitional class decorator: checks a runner's declarations and registers nothing.

    Runners are registered by entry point (group ``assay.runners``); this stays only until the
    built-in modules drop their ``@register`` lines, and then goes.
    """
    problems = declaration_problems(cls)
    if problems:
        raise TypeError("; ".join(problems))
    return cls


@dataclass
class DriveResult:
    """What a drive did, for the caller to print or log."""

    run_id: str
    reports: int = 0
    case_runs: int = 0
    evaluations: int = 0
    duplicates: int = 0
    error: str | None = None


def drive(
    runner: Runner,
    ledger: Ledger,
    job: RunJob,
    *,
    owner: str,
    ttl_seconds: float,
    on_report: Callable[[Receipt], None] | None = None,
) -> DriveResult:
    """Claim the run, execute it, report every batch, release. The one life cycle every sync runner follows.

    A runner failure that is ours to name (an :class:`AssayError`) releases the run with that error; any
    other exception releases it with the error too and is re-raised, so nothing hangs on a lease.
    """
    if not runner.synchronous:
        raise TypeError(f"runner {runner.name!r} is asynchronous; drive() runs synchronous runners")
    result = DriveResult(run_id=job.run_id)
    lease = ledger.claim(job.run_id, owner, ttl_seconds)

    def heartbeat() -> None:
        nonlocal lease
        lease = ledger.renew(lease, ttl_seconds)

    try:
        for report in runner.execute(job, heartbeat):
            heartbeat()
            receipt = ledger.report(lease, report)
            result.reports += 1
            result.case_runs += receipt.case_runs
            result.evaluations += receipt.evaluations
            result.duplicates += receipt.status == "duplicate"
            if on_report:
                on_report(receipt)
    except AssayError as exc:
        result.error = str(exc)
        log.error("run %s: runner %s failed: %s", job.run_id, runner.name, exc)
        ledger.release(lease, error=result.error)
        return result
    except BaseException as exc:
        ledger.release(lease, error=f"{type(exc).__name__}: {exc}")
        raise
    ledger.release(lease)
    return result


__all__ = [
    "ENTRY_POINT_GROUP", "TARGET_KINDS", "CaseSpec", "DriveResult", "Heartbeat", "Lease", "Ledger", "Receipt",
    "ReceiptStatus", "RunJob", "Runner", "RunnerPluginError", "TargetKind", "declaration_problems",
    "default_runner_for", "drive", "register", "registered", "runner_class", "runner_names",
]
