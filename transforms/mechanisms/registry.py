"""The mechanism registry: each mechanism's evaluator, registered once, by a decorator on the function.

A mechanism is declared in :mod:`assay.core.mechanisms` (its name and parameter model: the vocabulary
bundles are validated with) and evaluated here, by one function in its family's module::

    @mechanism("transcript.max_turns", version=1)
    def max_turns(evidence: Evidence, rows: pl.Series, p: MaxTurns, judge: str | None) -> pl.DataFrame:
        ...

The decorator binds the name, the declared parameter model (the function's ``p`` annotation must be
exactly that model) and the **evaluator version**: every evaluator starts at 1, and bumping it says
"this evaluator was fixed: re-judge what it judged". An evaluator receives the batch's
:class:`~.evidence.Evidence`, the rows (case runs) to judge, the validated parameters and the
configured judge model (or None), and returns one row per given row: ``met`` (Boolean), ``value``
(Float64), ``reason`` (String, null when met) and ``evaluator`` (String), in the rows' order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from assay.core.mechanisms import MECHANISMS, Params, family

if TYPE_CHECKING:
    import polars as pl

    from .evidence import Evidence

Evaluator = Callable[["Evidence", "pl.Series", Any, "str | None"], "pl.DataFrame"]
"""(evidence, case-run rows, validated params, judge model) -> met, value, reason, evaluator per row."""
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Mechanism:
    """A registered mechanism: what the engine needs to judge its assertions."""

    name: str
    """The declared name, e.g. ``"tool.called"``."""
    params: type[Params]
    """Its parameter model, from :data:`assay.core.mechanisms.MECHANISMS`."""
    evaluate: Evaluator
    """The vectorised evaluator."""
    version: int
    """The evaluator's version: bumped when a fix changes what it would say about old evidence."""

    @property
    def family(self) -> str:
        """The evidence family (``structural``, ``transcript``, ...): the name's first part."""
        return family(self.name)


_REGISTRY: dict[str, Mechanism] = {}


def mechanism(name: str, *, version: int) -> Callable[[F], F]:
    """Register the decorated function as the evaluator of the declared mechanism ``name``.

    Raises ``ValueError`` when ``name`` is not declared in core, is already registered, or ``version``
    is not a positive integer; ``TypeError`` when the function's ``p`` is not annotated with the
    declared parameter model.
    """
    if name not in MECHANISMS:
        raise ValueError(f"mechanism {name!r} is not declared in assay.core.mechanisms.MECHANISMS; "
                         f"declare it and its parameter model there first (declared: {', '.join(MECHANISMS)})")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"mechanism {name!r}: version must be a positive integer, got {version!r}")
    model = MECHANISMS[name]

    def register(evaluate: F) -> F:
        annotation = get_type_hints(evaluate).get("p")
        if annotation is not model:
            raise TypeError(f"the evaluator {evaluate.__qualname__} of mechanism {name!r} must annotate its "
                            f"parameter p as {model.__name__} (declared in core), not {annotation!r}")
        if name in _REGISTRY:
            raise ValueError(f"mechanism {name!r} is already registered by "
                             f"{_REGISTRY[name].evaluate.__module__}.{_REGISTRY[name].evaluate.__qualname__}")
        _REGISTRY[name] = Mechanism(name, model, evaluate, version)
        return evaluate

    return register


def registered() -> dict[str, Mechanism]:
    """Every registered mechanism by name, in the order core declares them."""
    return {name: _REGISTRY[name] for name in MECHANISMS if name in _REGISTRY}


def evaluator_versions() -> dict[str, int]:
    """Each registered mechanism's evaluator version."""
    return {name: m.version for name, m in registered().items()}


__all__ = ["Evaluator", "Mechanism", "evaluator_versions", "mechanism", "registered"]
