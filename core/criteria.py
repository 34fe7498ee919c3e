"""A consumer's criteria spec and its resolution against a suite's assertion keys.

A spec names assertion *keys*, never row ids. At run start it is resolved against the suite: a
required key, or a whole threshold group, that matches no assertion is an error that stops the run
loudly -- never an empty set that passes.

A spec may also allow a few *undetermined* counted results (``met`` null: the case run did not
execute, a vendor error) through ``allow_undetermined``; without it, any undetermined counted result
makes the verdict ``error`` (:mod:`assay.transforms.verdicts` holds the rule).
"""

from __future__ import annotations

from collections.abc import Iterable

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from .errors import CriteriaError


class ThresholdGroup(BaseModel):
    """A group of keys whose met-ratio must reach ``min`` (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: list[str] = Field(min_length=1)
    """Assertion keys counted together."""
    min: float = Field(ge=0.0, le=1.0)
    """The lowest passing met-ratio, 0..1, inclusive."""


class UndeterminedAllowance(BaseModel):
    """How many undetermined counted results a verdict may leave out: exactly one of ``count`` or ``ratio``.

    Within the allowance they are excluded (not counted, in no ratio's denominator) and the verdict
    says so; over it, the verdict is ``error``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int | None = Field(default=None, ge=0, strict=True)
    """At most this many undetermined counted results per run (per case run in the breakdown)."""
    ratio: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    """At most this share, 0..1 inclusive, of the run's counted results (undetermined ones included)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> "UndeterminedAllowance":
        if (self.count is None) == (self.ratio is None):
            raise ValueError("allow_undetermined takes exactly one of count (an integer >= 0) or ratio (0..1), "
                             "e.g. {count: 3} or {ratio: 0.15}")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}  # only the form given

    def allowed(self) -> str:
        """The allowance as a person reads it: ``3`` or ``0.15 of the counted results``."""
        return str(self.count) if self.count is not None else f"{self.ratio:g} of the counted results"


class CriteriaSpec(BaseModel):
    """One consumer's opinion of one suite: what must hold for a pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required: list[str] = Field(default_factory=list)
    """Keys whose every result must be met."""
    threshold: list[ThresholdGroup] = Field(default_factory=list)
    """Groups that must each clear their ratio."""
    ignore: list[str] = Field(default_factory=list)
    """Keys still evaluated and stored, that never move this consumer's verdict."""
    allow_undetermined: UndeterminedAllowance | None = None
    """Undetermined counted results (``met`` null) a verdict may exclude, e.g. ``{count: 3}`` or
    ``{ratio: 0.15}``; absent, none: any undetermined counted result makes the verdict ``error``."""

    @model_validator(mode="after")
    def _not_required_and_ignored(self) -> "CriteriaSpec":
        both = sorted(set(self.required) & set(self.ignore))
        if both:
            raise ValueError(f"keys both required and ignored: {', '.join(both)}; keep each in one list")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)  # no allowance: the dump (and every hash of it) is what it was before allowances
        if self.allow_undetermined is None:
            out.pop("allow_undetermined", None)
        return out

    def named_keys(self) -> set[str]:
        return set(self.required) | set(self.ignore) | {k for g in self.threshold for k in g.keys}

    def counted_required(self) -> list[str]:
        """The required keys that count: each once, in order, an ignored key never (ignore wins)."""
        ignored = set(self.ignore)
        return list(dict.fromkeys(k for k in self.required if k not in ignored))

    def counted_groups(self) -> list[tuple[int, list[str], float]]:
        """(index in ``threshold``, counted keys, min) of each group that counts anything: its keys each
        once, in order, less the ignored ones; a group whose every key is ignored asks nothing."""
        ignored = set(self.ignore)
        groups = [(i, list(dict.fromkeys(k for k in g.keys if k not in ignored)), g.min) for i, g in enumerate(self.threshold)]
        return [(i, keys, low) for i, keys, low in groups if keys]


def unmatched(spec: CriteriaSpec, keys: Iterable[str]) -> list[str]:
    """Problems resolving ``spec`` against the suite's assertion ``keys`` (empty when it resolves)."""
    available = set(keys)
    problems = [f"required key {k!r} matches no assertion of the suite" for k in spec.required if k not in available]
    for i, group in enumerate(spec.threshold):
        missing = [k for k in group.keys if k not in available]
        if len(missing) == len(group.keys):
            problems.append(f"threshold group {i} ({', '.join(group.keys)}) matches no assertion of the suite")
        elif missing:
            problems.append(f"threshold group {i}: key(s) {', '.join(missing)} match no assertion of the suite")
    return problems


def resolve(consumer: str, spec: CriteriaSpec, keys: Iterable[str]) -> None:
    """Raise :class:`CriteriaError` when ``spec`` does not resolve against ``keys``."""
    keys = sorted(set(keys))
    problems = unmatched(spec, keys)
    if problems:
        raise CriteriaError(
            f"criteria for consumer {consumer!r} does not resolve: {'; '.join(problems)} "
            f"(the suite's assertion keys: {', '.join(keys) or 'none'}); fix the criteria or the suite and reload"
        )
