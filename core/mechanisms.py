"""Mechanism names and their validated parameters.

A mechanism is *how* an assertion is checked. Its name says which evidence it reads: ``structural.*``
reads the compiled artefact, ``transcript.*`` the turns, ``tool.*`` the tool calls, ``vendor.*`` the
runner's own evaluations, and ``rubric`` is judged by our judge from the transcript. A runner declares
the mechanisms its evidence supports; an assertion whose mechanism the run's runner does not support
fails with a reason (it is never skipped).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class Params(BaseModel):
    """Base of every mechanism's parameters: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ClausePresent(Params):
    """A clause of the source prompt survived compilation into the config's prompt."""

    clause: str = Field(min_length=1)
    """Text that must appear in the compiled prompt."""
    case_insensitive: bool = False
    """Compare ignoring case."""


class VariablesResolve(Params):
    """Every ``{{variable}}`` in the compiled prompt has a value in the config."""


class ToolAttached(Params):
    """A tool with this name is attached to the compiled config."""

    tool: str = Field(min_length=1)
    """The tool's name."""


class TextMatch(Params):
    """Parameters shared by the transcript text mechanisms."""

    text: str = Field(min_length=1)
    """The text (or, for ``transcript.regex``, the pattern) to look for."""
    role: Literal["caller", "agent", "system"] | None = None
    """Only look at turns said by this role; every turn when omitted."""
    case_insensitive: bool = False
    """Compare ignoring case."""


class RegexMatch(TextMatch):
    """A turn matches a regular expression."""

    @field_validator("text")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the regular expression does not compile: {exc}") from None
        return value


class MaxTurns(Params):
    """The conversation took at most ``max`` turns."""

    max: int = Field(ge=0)


class MaxLatency(Params):
    """The whole case run took at most ``max_ms`` milliseconds."""

    max_ms: float = Field(gt=0)


class MaxCost(Params):
    """The case run cost at most ``max_usd`` US dollars."""

    max_usd: float = Field(ge=0)


class ToolCalled(Params):
    """A tool was called (``tool.called``) or not (``tool.not_called``)."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    """When given, only calls whose arguments include these key/value pairs count."""


class VendorEvaluation(Params):
    """Read the runner's own evaluation named ``name`` as met + value."""

    name: str = Field(min_length=1)
    """The vendor's name for its evaluation (guardrail, scorer, criterion)."""
    pass_score: float | None = None
    """For scored evaluations: a score at or above this is met. Required when the vendor scores."""


class Rubric(Params):
    """Judged by our judge model against the transcript."""

    rubric: str = Field(min_length=1)
    """What must be true, in words, for the judge."""


MECHANISMS: dict[str, type[Params]] = {
    "structural.clause_present": ClausePresent,
    "structural.variables_resolve": VariablesResolve,
    "structural.tool_attached": ToolAttached,
    "transcript.contains": TextMatch,
    "transcript.not_contains": TextMatch,
    "transcript.regex": RegexMatch,
    "transcript.max_turns": MaxTurns,
    "transcript.max_latency": MaxLatency,
    "transcript.max_cost": MaxCost,
    "tool.called": ToolCalled,
    "tool.not_called": ToolCalled,
    "vendor.evaluation": VendorEvaluation,
    "rubric": Rubric,
}
"""Every mechanism Assay knows, with the model its parameters must satisfy."""

FAMILY_EVIDENCE: dict[str, str] = {
    "structural": "artefact",
    "transcript": "transcript",
    "tool": "tool_calls",
    "vendor": "evaluations",
    "rubric": "transcript",
}
"""Which evidence field each mechanism family reads: a runner declaring a mechanism must fill it."""


def family(mechanism: str) -> str:
    return mechanism.split(".", 1)[0]


def mechanisms_of(*families: str) -> frozenset[str]:
    """Every known mechanism in the given families (``"transcript"``, ``"tool"``, ...)."""
    return frozenset(m for m in MECHANISMS if family(m) in families)


def validate_params(mechanism: str, params: dict[str, Any]) -> Params:
    """Validate ``params`` for ``mechanism``; raises ``KeyError`` or pydantic's ``ValidationError``."""
    if mechanism not in MECHANISMS:
        raise KeyError(mechanism)
    return MECHANISMS[mechanism].model_validate(params)


__all__ = ["MECHANISMS", "FAMILY_EVIDENCE", "Params", "ValidationError", "family", "mechanisms_of", "validate_params"]
