"""The checks an exam's assertions may use: each check's tier and the parameters it takes.

An assertion in ``assertions.toml`` names one check (``command_passes``, ``cap``, ``rubric``, …) and
gives its ``params``; the check decides the tier it belongs to, because tiers are evaluated cheapest
first (outcome → trajectory → profile → judged) and an assertion filed under the wrong tier would run
at the wrong cost. This module is the one home of that closed set.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["CHECK_PARAMS", "CHECK_TIERS", "CHECKS", "Check", "Measure", "ProfileMeasure", "TIERS", "Tier",
           "check_params"]  # fmt: skip

Tier = Literal["outcome", "trajectory", "profile", "judged"]
TIERS: tuple[str, ...] = ("outcome", "trajectory", "profile", "judged")
"""The tiers, cheapest first: the order a replay's assertions are evaluated in."""

Check = Literal["command_passes", "file_changed", "file_contains", "files_within", "tool_used", "tool_not_used",
                "cap", "band", "profile", "rubric"]  # fmt: skip
Measure = Literal["turns", "cost_usd", "wall_seconds"]
"""What a replay used that a ``cap`` or a ``band`` bounds."""
ProfileMeasure = Literal["reads_before_first_write", "tool_mix"]
"""What a ``profile`` assertion records for diagnosis (never a verdict on its own)."""

_Text = Annotated[str, Field(min_length=1)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class CommandPasses(_Params):
    command: _Text
    """A shell command, run from the workspace root, that must exit 0."""


class FileChanged(_Params):
    path: _Text
    """A path, relative to the workspace root, that the work must create or change."""


class FileContains(_Params):
    path: _Text
    """A path, relative to the workspace root."""
    text: _Text
    """Text the file must contain after the work."""


class FilesWithin(_Params):
    allow: tuple[_Text, ...] = Field(min_length=1)
    """Glob patterns (``src/pricing.py``, ``src/billing/**``); every file the work changes must match one."""


class ToolParams(_Params):
    tool: _Text
    """The tool's name as the harness calls it."""


class Cap(_Params):
    measure: Measure
    max: Annotated[int | float, Field(gt=0)]
    """The most a replay may use of the measure."""


class Band(_Params):
    measure: Measure
    k: Annotated[float, Field(gt=0)]
    """The spread multiplier: the band is the baseline's centre ± k × its spread, calibrated later from the exam's
    own baseline series."""


class Profile(_Params):
    measure: ProfileMeasure


class Rubric(_Params):
    text: _Text
    """What a judge reads the work against."""


CHECK_TIERS: dict[str, str] = {
    "command_passes": "outcome", "file_changed": "outcome", "file_contains": "outcome",
    "files_within": "trajectory", "tool_used": "trajectory", "tool_not_used": "trajectory", "cap": "trajectory",
    "band": "trajectory", "profile": "profile", "rubric": "judged",
}  # fmt: skip
"""The tier each check belongs to."""

CHECK_PARAMS: dict[str, type[_Params]] = {
    "command_passes": CommandPasses, "file_changed": FileChanged, "file_contains": FileContains,
    "files_within": FilesWithin, "tool_used": ToolParams, "tool_not_used": ToolParams, "cap": Cap, "band": Band,
    "profile": Profile, "rubric": Rubric,
}  # fmt: skip
"""The parameter model of each check."""

CHECKS: tuple[str, ...] = tuple(CHECK_TIERS)


def check_params(check: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` validated for ``check`` and normalised; :class:`ValueError` lists each problem and the fix."""
    model = CHECK_PARAMS[check]
    try:
        return model.model_validate(params).model_dump(mode="json", exclude_none=True)
    except ValidationError as exc:
        fields = ", ".join(model.model_fields)
        problems = []
        for err in exc.errors(include_url=False):
            name = ".".join(str(p) for p in err["loc"]) or "params"
            if err["type"] == "extra_forbidden":
                problems.append(f"{name!r} is not a parameter of {check}; its parameters are: {fields}")
            elif err["type"] == "missing":
                problems.append(f"{name!r} is missing; {check} takes: {fields}")
            else:
                problems.append(f"{name!r}: {err['msg']} (got {err['input']!r})")
        raise ValueError("; ".join(problems)) from None
