"""A consumer's criteria spec and its resolution against a suite's assertion keys.

A spec names assertion *keys*, never row ids. At run start it is resolved against the suite: a
required key, or a whole threshold group, that matches no assertion is an error that stops the run
loudly -- never an empty set that passes.

A spec may also allow a few *undetermined* counted results (``met`` null: the case run did not
execute, a vendor error) through ``allow_undetermined``; without it, any undetermined counted result
makes the verdict ``error`` (:mod:`assay.transforms.verdicts` holds the rule).

A spec may ask for a per-case pass rate over a case's replays through ``pass_rate``
(:mod:`assay.transforms.series` holds the decision rule).

A spec may say where a counted key applies through ``applies``: ``{tool.called: capable}`` counts that
key only on runners that can evaluate it. Its results from a runner that cannot (evaluator
:data:`UNSUPPORTED`) are still stored with their reason; the verdict leaves them out and says so, and a
required key that no counted result decides is ``error``, never ``pass``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .errors import CriteriaError

UNSUPPORTED = "assay:unsupported"
"""The evaluator of a result whose runner cannot evaluate its mechanism (or does not produce the vendor
evaluation it names): met false, with a reason naming the runner."""

Applicability = Literal["capable"]
"""Where a key counts: ``capable``, only on runners that can evaluate it."""


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


def _open_unit(name: str, value: float, about: str, low: float = 0.0, high: float = 1.0) -> float:
    if not low < value < high:
        raise ValueError(f"{name} must be greater than {low:g} and less than {high:g} ({about}); got {value!r}")
    return value


class Sequential(BaseModel):
    """Wald's sequential test over a case's replays: H0 the case passes at ``healthy``, H1 at ``regressed``.

    The first bound the walk crosses decides the case; a case that reaches neither is left to the Wilson
    bounds (:func:`assay.transforms.series.decide`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    healthy: float = 0.95
    """The pass rate of a healthy case (p0), 0 < regressed < healthy < 1."""
    regressed: float = 0.80
    """The pass rate a regression must be caught at (p1), 0 < regressed < healthy < 1."""
    alpha: float = 0.05
    """The chance of a false fail for a case passing at ``healthy``, 0 < alpha < 0.5."""
    beta: float = 0.10
    """The chance of missing a regression for a case passing at ``regressed``, 0 < beta < 0.5."""

    @field_validator("healthy", "regressed")
    @classmethod
    def _rates(cls, value: float, info: ValidationInfo) -> float:
        return _open_unit(info.field_name or "rate", value, "a pass rate")

    @field_validator("alpha", "beta")
    @classmethod
    def _errors(cls, value: float, info: ValidationInfo) -> float:
        return _open_unit(info.field_name or "error rate", value, "the chance of a wrong decision", high=0.5)

    @model_validator(mode="after")
    def _ordered(self) -> "Sequential":
        if not self.regressed < self.healthy:
            raise ValueError(f"sequential.regressed ({self.regressed:g}) must be less than sequential.healthy "
                             f"({self.healthy:g}): 0 < regressed < healthy < 1, e.g. {{healthy: 0.95, regressed: 0.8}}")
        return self


class PassRate(BaseModel):
    """The per-case pass rate a case must show over its replays (``assay run`` repeats each case)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: float
    """The per-case pass rate a case must show, 0 < min < 1."""
    confidence: float = 0.95
    """The one-sided confidence of the Wilson bounds, 0.5 < confidence < 1."""
    sequential: Sequential | None = Sequential()
    """Wald's sequential test, which decides a case in as few replays as it can; ``null`` turns it off."""
    rule: Literal["bounds", "exam"] = "bounds"
    """How a case's replays are decided. ``bounds``: the sequential test, else the Wilson bounds against
    ``min`` (a case must show its rate). ``exam``: a coding-agent exam is presumed healthy — replays that all
    held pass it; a failure escalates, and only the sequential test (which ``exam`` requires) decides; a
    series it leaves undecided at the budget is drift, never a fail (:mod:`assay.transforms.exam_series`)."""

    @model_validator(mode="after")
    def _exam_needs_the_test(self) -> "PassRate":
        if self.rule == "exam" and self.sequential is None:
            raise ValueError("rule 'exam' decides an escalated series by the sequential test alone; give "
                             "'sequential' (e.g. {healthy: 0.95, regressed: 0.8}) or use rule 'bounds'")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)  # the default rule is left out: specs written before rules existed keep their hash
        if self.rule == "bounds":
            out.pop("rule", None)
        return out

    @field_validator("min")
    @classmethod
    def _min(cls, value: float) -> float:
        return _open_unit("min", value, "the per-case pass rate, e.g. 0.9")

    @field_validator("confidence")
    @classmethod
    def _confidence(cls, value: float) -> float:
        return _open_unit("confidence", value, "one-sided, e.g. 0.95", low=0.5)


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
    pass_rate: PassRate | None = None
    """The per-case pass rate a case's replays must show, e.g. ``{min: 0.9}``; absent, each case run
    is judged on its own."""
    applies: dict[str, Applicability] = Field(default_factory=dict)
    """Where each named key counts, e.g. ``{tool.called: capable}``: only on runners that can evaluate it;
    its results elsewhere are left out of the verdict, which says so. Absent, a key counts on every runner."""

    @model_validator(mode="after")
    def _not_required_and_ignored(self) -> "CriteriaSpec":
        both = sorted(set(self.required) & set(self.ignore))
        if both:
            raise ValueError(f"keys both required and ignored: {', '.join(both)}; keep each in one list")
        counted = set(self.required) | {k for g in self.threshold for k in g.keys}
        stray = sorted(set(self.applies) - counted)
        if stray:
            raise ValueError(f"applies names key(s) {', '.join(stray)} that neither required nor threshold counts "
                             f"(counted: {', '.join(sorted(counted)) or 'none'}); name a counted key, "
                             "e.g. applies: {tool.called: capable}")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)  # no allowance: the dump (and every hash of it) is what it was before allowances
        for optional in ("allow_undetermined", "pass_rate"):
            if getattr(self, optional) is None:
                out.pop(optional, None)
        if not self.applies:
            out.pop("applies", None)
        return out

    def named_keys(self) -> set[str]:
        return set(self.required) | set(self.ignore) | {k for g in self.threshold for k in g.keys}

    def capable_only(self) -> list[str]:
        """The counted keys that count only on runners able to evaluate them, sorted."""
        ignored = set(self.ignore)
        return sorted(k for k, where in self.applies.items() if where == "capable" and k not in ignored)

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


def did_you_mean(key: str, keys: Iterable[str]) -> str:
    """`` (did you mean 'k'?)`` naming the assertion key a mistyped ``key`` most likely meant; empty when
    none is close enough to be a typo (a wrong guess misleads more than none)."""
    close = difflib.get_close_matches(key, sorted(set(keys)), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unmatched(spec: CriteriaSpec, keys: Iterable[str]) -> list[str]:
    """Problems resolving ``spec`` against the suite's assertion ``keys`` (empty when it resolves), each
    mistyped key with the nearest assertion key."""
    available = set(keys)
    problems = [f"required key {k!r}{did_you_mean(k, available)} matches no assertion of the suite"
                for k in spec.required if k not in available]
    for i, group in enumerate(spec.threshold):
        missing = [k for k in group.keys if k not in available]
        named = ", ".join(f"{k}{did_you_mean(k, available)}" for k in missing)
        if len(missing) == len(group.keys):
            problems.append(f"threshold group {i} ({named}) matches no assertion of the suite")
        elif missing:
            problems.append(f"threshold group {i}: key(s) {named} match no assertion of the suite")
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
