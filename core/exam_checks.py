"""The checks an exam's assertions may use: each check's tier, the parameters it takes, its mechanism.

An assertion in ``assertions.toml`` names one check (``command_passes``, ``cap``, ``rubric``, …) and
gives its ``params``; the check decides the tier it belongs to, because tiers are evaluated cheapest
first (outcome → trajectory → profile → judged) and an assertion filed under the wrong tier would run
at the wrong cost. This module is the one home of that closed set. Each check is judged by one mechanism
(:func:`mechanism_for`), and takes that mechanism's parameters (:mod:`assay.core.mechanisms`), except
``rubric``, whose ``text`` is the ``rubric`` mechanism's ``rubric``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from .mechanisms import (Band, Cap, CommandPasses, ExamMeasure, FileChanged, FileContains, FilesWithin, Params, Profile,
                         ProfileMeasure, ToolCalled, Verify, validate_params)

__all__ = ["CHECK_PARAMS", "CHECK_TIERS", "CHECKS", "MECHANISM_TIERS", "Check", "Measure", "ProfileMeasure", "RubricText",
           "TIERS", "Tier", "check_params", "mechanism_for", "mechanism_of"]  # fmt: skip

Tier = Literal["outcome", "trajectory", "profile", "judged"]
TIERS: tuple[str, ...] = ("outcome", "trajectory", "profile", "judged")
"""The tiers, cheapest first: the order a replay's assertions are evaluated in."""

Check = Literal["command_passes", "verify", "file_changed", "file_contains", "files_within", "tool_used",
                "tool_not_used", "cap", "band", "profile", "rubric"]  # fmt: skip
Measure = ExamMeasure
"""What a replay used that a ``cap`` or a ``band`` bounds."""


class RubricText(Params):
    """The ``rubric`` check's parameters."""

    text: Annotated[str, Field(min_length=1)]
    """What a judge reads the work against."""


CHECK_TIERS: dict[str, str] = {
    "command_passes": "outcome", "verify": "outcome", "file_changed": "outcome", "file_contains": "outcome",
    "files_within": "trajectory", "tool_used": "trajectory", "tool_not_used": "trajectory", "cap": "trajectory",
    "band": "trajectory", "profile": "profile", "rubric": "judged",
}  # fmt: skip
"""The tier each check belongs to."""

CHECK_PARAMS: dict[str, type[Params]] = {
    "command_passes": CommandPasses, "verify": Verify, "file_changed": FileChanged, "file_contains": FileContains,
    "files_within": FilesWithin, "tool_used": ToolCalled, "tool_not_used": ToolCalled, "cap": Cap, "band": Band,
    "profile": Profile, "rubric": RubricText,
}  # fmt: skip
"""The parameter model of each check."""

CHECKS: tuple[str, ...] = tuple(CHECK_TIERS)

_MECHANISMS = {"tool_used": "tool.called", "tool_not_used": "tool.not_called", "rubric": "rubric"}
"""Checks judged by a mechanism outside the ``exam`` family; every other check ``c`` by ``exam.c``."""


def mechanism_of(check: str) -> str:
    """The mechanism that judges ``check``."""
    return _MECHANISMS.get(check, f"exam.{check}")


MECHANISM_TIERS: dict[str, str] = {mechanism_of(c): tier for c, tier in CHECK_TIERS.items()}
"""The tier of each mechanism an exam check is judged by (``tool.called`` is trajectory, ``rubric`` judged)."""


def check_params(check: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` validated for ``check`` and normalised; :class:`ValueError` lists each problem and the fix."""
    model = CHECK_PARAMS[check]
    try:
        return model.model_validate(params).model_dump(mode="json", exclude_none=True)
    except ValidationError as exc:
        fields = ", ".join(model.model_fields) or "none"
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


def mechanism_for(check: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The mechanism that judges ``check`` and its parameters, validated and with defaults dropped (as the
    catalog stores them): ``tool_used`` is ``tool.called``, ``tool_not_used`` ``tool.not_called``, ``rubric``
    {text} is ``rubric`` {rubric}, and every other check ``c`` is ``exam.c`` with the same parameters.

    Raises ``KeyError`` for an unknown check and :class:`ValueError` (as :func:`check_params`) for bad params."""
    if check not in CHECK_PARAMS:
        raise KeyError(check)
    checked = check_params(check, params)
    mechanism = mechanism_of(check)
    if check == "rubric":
        checked = {"rubric": checked["text"]}
    return mechanism, validate_params(mechanism, checked).model_dump(mode="json", exclude_defaults=True)
