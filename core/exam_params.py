"""The parameters of the ``exam.*`` mechanisms: checks on a coding-agent replay's artefact.

A replay's case run carries, in ``artefact``, what its workspace showed after the agent stopped (the
outcome probes the runner ran, the files changed) and a summary of its session (turns, cost, wall time, the
tools it used). These models are registered in :data:`assay.core.mechanisms.MECHANISMS`, and an exam's
checks (:mod:`assay.core.exam_checks`) take the same parameters.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .params import Params

ExamMeasure = Literal["turns", "cost_usd", "wall_seconds"]
"""What a replay used that ``exam.cap`` and ``exam.band`` bound, read from its artefact's session summary."""
ProfileMeasure = Literal["reads_before_first_write", "tool_mix"]
"""What ``exam.profile`` records for diagnosis (never a verdict on its own)."""
_Text = Annotated[str, Field(min_length=1)]
_Finite = Field(allow_inf_nan=False)


class CommandPasses(Params):
    """``exam.command_passes``: the replay's probe of ``command`` exited 0; value = its exit code."""

    command: _Text
    """A shell command, run from the workspace root, that must exit 0."""


class Verify(Params):
    """``exam.verify``: the exam's ``verify.sh`` exited 0 (1: the work does not hold; else the check failed)."""


class FileChanged(Params):
    """``exam.file_changed``: the work created or changed ``path``."""

    path: _Text
    """A path, relative to the workspace root, that the work must create or change."""


class FileContains(Params):
    """``exam.file_contains``: after the work, the file at ``path`` contains ``text``."""

    path: _Text
    """A path, relative to the workspace root."""
    text: _Text
    """Text the file must contain after the work."""


class FilesWithin(Params):
    """``exam.files_within``: every file the work changed matches one glob; value = how many do not."""

    allow: tuple[_Text, ...] = Field(min_length=1)
    """Glob patterns (``src/pricing.py``, ``src/billing/**``): ``**`` spans directories, ``*`` stays in one."""


class Cap(Params):
    """``exam.cap``: the replay used at most ``max`` of the measure; value = what it used."""

    measure: ExamMeasure
    max: Annotated[int | float, Field(gt=0), _Finite]
    """The most a replay may use of the measure."""


class Band(Params):
    """``exam.band``: the measure lies within ``center`` ± ``k`` × ``spread``; undetermined until calibrated."""

    measure: ExamMeasure
    k: Annotated[float, Field(gt=0), _Finite]
    """The spread multiplier."""
    center: Annotated[float | None, _Finite] = None
    """The baseline's centre, set by calibration from the exam's own baseline replays."""
    spread: Annotated[float | None, Field(ge=0), _Finite] = None
    """The baseline's spread, set by calibration with ``center``."""

    @model_validator(mode="after")
    def _calibrated_together(self) -> "Band":
        if (self.center is None) != (self.spread is None):
            raise ValueError("give center and spread together (calibration sets both), or neither")
        return self


class Profile(Params):
    """``exam.profile``: records the measure for diagnosis; always met."""

    measure: ProfileMeasure


__all__ = ["Band", "Cap", "CommandPasses", "ExamMeasure", "FileChanged", "FileContains", "FilesWithin", "Profile",
           "ProfileMeasure", "Verify"]
