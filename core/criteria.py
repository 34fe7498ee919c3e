"""A consumer's criteria spec and its resolution against a suite's assertion keys.

A spec names assertion *keys*, never row ids. At run start it is resolved against the suite: a
required key, or a whole threshold group, that matches no assertion is an error that stops the run
loudly -- never an empty set that passes.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import CriteriaError


class ThresholdGroup(BaseModel):
    """A group of keys whose met-ratio must reach ``min`` (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: list[str] = Field(min_length=1)
    """Assertion keys counted together."""
    min: float = Field(ge=0.0, le=1.0)
    """The lowest passing met-ratio, 0..1, inclusive."""


class CriteriaSpec(BaseModel):
    """One consumer's opinion of one suite: what must hold for a pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    required: list[str] = Field(default_factory=list)
    """Keys whose every result must be met."""
    threshold: list[ThresholdGroup] = Field(default_factory=list)
    """Groups that must each clear their ratio."""
    ignore: list[str] = Field(default_factory=list)
    """Keys still evaluated and stored, that never move this consumer's verdict."""

    @model_validator(mode="after")
    def _not_required_and_ignored(self) -> "CriteriaSpec":
        both = sorted(set(self.required) & set(self.ignore))
        if both:
            raise ValueError(f"keys both required and ignored: {', '.join(both)}; keep each in one list")
        return self

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
