"""Mechanism names and their validated parameters.

A mechanism is *how* an assertion is checked. Its name says which evidence it reads: ``structural.*``
reads the compiled artefact, ``transcript.*`` the turns, ``timing.*`` the turns' timings, ``tool.*`` the
tool calls, ``vendor.*`` the runner's own evaluations, ``exam.*`` a coding-agent replay's artefact (its
workspace probes and session summary), and ``rubric`` is judged by our judge from the transcript. A
runner declares the mechanisms its evidence supports; an assertion whose mechanism the run's runner does
not support fails with a reason (it is never skipped).

This module declares each mechanism (:data:`MECHANISMS`: name -> parameter model; the ``exam.*`` models
live in :mod:`.exam_params`, the base :class:`Params` in :mod:`.params`); its evaluator is one function
registered under the same name in ``assay.transforms.mechanisms`` (a test checks that every declaration
has one, and nothing else is registered).
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .exam_params import (Band, Cap, CommandPasses, ExamMeasure, FileChanged, FileContains, FilesWithin, Profile,
                          ProfileMeasure, Verify)
from .ids import IDENTIFIER_RULE, is_identifier
from .params import Params


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


REGEX_SYNTAX = (
    "patterns must compile in both Python's `re` and Rust's `regex` crate (the engine Polars judges "
    "with): plain literals, classes like [a-z] \\d \\w \\s, anchors ^ $ \\b, groups (...) (?:...) "
    "(?P<name>...), alternation and quantifiers * + ? {m,n} are fine; look-around (?= ?! ?<= ?<!), "
    "backreferences \\1, \\Z, \\p{...}, [[:alpha:]] and {,n} are not"
)
"""The regular-expression syntax ``transcript.regex`` accepts, for error messages."""


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used by ``transcript.regex`` (Python's ``re`` or Polars' engine rejects it), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. FutureWarning "possible nested set": ambiguous syntax
            re.compile(pattern)
    except (re.error, Warning) as exc:
        return f"Python's re rejects it ({exc})"
    import polars as pl  # lazy: only validating a regex needs it

    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.PolarsError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        said = next((line for line in lines if line.startswith("error:")), lines[0] if lines else type(exc).__name__)
        return f"Rust's regex engine rejects it ({said})"
    return None


class RegexMatch(TextMatch):
    """A turn matches a regular expression (searched anywhere in each turn, one turn at a time)."""

    @field_validator("text")
    @classmethod
    def _compiles(cls, value: str) -> str:
        problem = regex_problem(value)
        if problem:
            raise ValueError(f"the regular expression {value!r} cannot be used: {problem}; {REGEX_SYNTAX}")
        return value


class MaxTurns(Params):
    """The conversation took at most ``max`` turns."""

    max: int = Field(ge=0)


class MaxLatency(Params):
    """The whole case run took at most ``max_ms`` milliseconds.

    This is the whole call's duration (``duration_ms``), not how quickly the agent answers: that is
    ``transcript.response_latency``."""

    max_ms: float = Field(gt=0)
    """The longest the whole case run may take, in milliseconds."""


class ResponseLatency(Params):
    """The agent answered the caller quickly: for each agent turn right after a caller turn, the time
    from the caller's turn ending (its ``end_t``) to the agent's starting (its ``t``). Met when the
    slowest is at most ``max_ms`` and the 95th percentile (linear interpolation) at most ``p95_ms``;
    value = the 95th percentile in milliseconds. Without the turn timings it is undetermined, never met.
    ``timing.response_latency`` (:class:`TimingLatency`) is the same measure with a median bar too."""

    max_ms: float | None = Field(default=None, gt=0)
    """The slowest reply may take at most this many milliseconds."""
    p95_ms: float | None = Field(default=None, gt=0)
    """The 95th percentile of the replies may be at most this many milliseconds."""

    @model_validator(mode="after")
    def _a_bound(self) -> "ResponseLatency":
        if self.max_ms is None and self.p95_ms is None:
            raise ValueError("give max_ms, p95_ms or both (milliseconds from the caller's turn ending to the "
                             "agent's reply starting), e.g. {\"p95_ms\": 1500}")
        return self


class TimingLatency(Params):
    """``timing.response_latency``: for each agent turn right after a caller turn, the time from the caller's
    turn ending (its ``end_t``) to the agent's starting (its ``t``). Met when the slowest is at most
    ``max_ms``, the 95th percentile at most ``p95_ms`` and the median at most ``p50_ms`` (percentiles by
    linear interpolation); value = the 95th percentile in ms. Without the turn timings it is undetermined."""

    p50_ms: float | None = Field(default=None, gt=0)
    """The median reply may take at most this many milliseconds."""
    p95_ms: float | None = Field(default=None, gt=0)
    """The 95th percentile of the replies may be at most this many milliseconds (800 is a phone-line bar)."""
    max_ms: float | None = Field(default=None, gt=0)
    """The slowest reply may take at most this many milliseconds."""

    @model_validator(mode="after")
    def _a_bound(self) -> "TimingLatency":
        if self.p50_ms is None and self.p95_ms is None and self.max_ms is None:
            raise ValueError("give at least one of p50_ms, p95_ms, max_ms (milliseconds from the caller's turn "
                             "ending to the agent's reply starting), e.g. {\"p95_ms\": 800}")
        return self


class Interruptions(Params):
    """``timing.interruptions``: overlaps between a turn and the turn right before it, said by the other
    party. A **barge-in** is a caller turn starting before the agent turn before it ended; a **talk-over**
    is an agent turn starting before the caller turn before it ended. An overlap counts when the turn starts
    more than ``tolerance_ms`` before the previous one's ``end_t``. Met when both counts are within their
    caps; value = barge-ins + talk-overs."""

    max_barge_ins: int | None = Field(default=None, ge=0)
    """The caller may barge in at most this many times."""
    max_talk_overs: int | None = Field(default=None, ge=0)
    """The agent may talk over the caller at most this many times."""
    tolerance_ms: float = Field(default=0, ge=0)
    """Overlaps of at most this many milliseconds do not count (timestamp jitter)."""

    @model_validator(mode="after")
    def _a_cap(self) -> "Interruptions":
        if self.max_barge_ins is None and self.max_talk_overs is None:
            raise ValueError("give max_barge_ins, max_talk_overs or both (how many overlaps are allowed), "
                             "e.g. {\"max_talk_overs\": 0}")
        return self


class Silence(Params):
    """``timing.silence``: gaps between consecutive turns (a turn's ``end_t`` to the next turn's ``t``)
    longer than ``threshold_ms``. Met when there are at most ``max_count``; value = the longest gap in ms
    (null with fewer than two turns: nothing to measure, and met)."""

    threshold_ms: float = Field(gt=0)
    """A gap longer than this many milliseconds is a silence."""
    max_count: int = Field(default=0, ge=0)
    """How many silences are allowed."""


class TalkRatio(Params):
    """``timing.talk_ratio``: the agent's share of the speaking time, the sum of its turns' durations
    (``end_t - t``) over the sum of every turn's. Met within [``min``, ``max``]; value = the share."""

    min: float | None = Field(default=None, ge=0, le=1)
    """The agent's share must be at least this (0 to 1)."""
    max: float | None = Field(default=None, ge=0, le=1)
    """The agent's share must be at most this (0 to 1)."""

    @model_validator(mode="after")
    def _a_range(self) -> "TalkRatio":
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both (the agent's share of the speaking time, 0 to 1), "
                             "e.g. {\"max\": 0.6}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max}): give min <= max")
        return self


class MaxCost(Params):
    """The case run cost at most ``max_usd`` US dollars."""

    max_usd: float = Field(ge=0)


ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_EXACT_INT = 2**53
"""Argument values compare as JSON scalars; numbers as 64-bit floats, so larger integers are refused."""


class ToolCalled(Params):
    """A tool was called (``tool.called``) or not (``tool.not_called``)."""

    tool: str = Field(min_length=1)
    arguments: dict[str, StrictStr | StrictBool | StrictInt | StrictFloat] | None = None
    """When given, only calls whose JSON arguments have each of these top-level keys with an equal
    scalar value count: strings equal strings, booleans booleans, numbers numbers (as 64-bit floats,
    so 1 equals 1.0). Keys are identifier-like; values are strings, numbers or booleans."""

    @field_validator("arguments", mode="before")
    @classmethod
    def _scalar_arguments(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, dict):
            raise ValueError("arguments must be a mapping of argument name to value, e.g. {\"zip\": \"60614\"}")
        for key, item in value.items():
            if not isinstance(key, str) or not ARGUMENT_NAME.fullmatch(key):
                raise ValueError(
                    f"argument name {key!r} is not allowed: use letters, digits and '_', not starting with a digit"
                )
            if isinstance(item, bool | str):
                continue
            if isinstance(item, int):
                if abs(item) > MAX_EXACT_INT:
                    raise ValueError(f"argument {key!r}: integers are limited to +/-2**53, got {item}")
            elif isinstance(item, float):
                if not math.isfinite(item):
                    raise ValueError(f"argument {key!r}: numbers must be finite, got {item}")
            else:
                raise ValueError(
                    f"argument {key!r} must be a string, number or boolean, not {type(item).__name__}: "
                    "nested values and null cannot be matched"
                )
        return value


class VendorEvaluation(Params):
    """Read the runner's own evaluation named ``name`` as met + value."""

    name: str = Field(min_length=1)
    """The vendor's name for its evaluation (guardrail, scorer, criterion)."""
    vendor_id: str | None = Field(default=None, min_length=1)
    """The vendor's own id for the evaluation, where the vendor keys it by id and its name may change
    (Hamming's assertion id). An assertion sent into a vendor's slot (``role``) needs it: the runner sends
    the id and checks the name the vendor reports against ``name``, so a rename is reported, not joined."""
    pass_score: float | None = None
    """For scored evaluations: a score at or above this, on the vendor's own scale (70 on Hamming's
    0-100), is met. Required to map a score without a verdict onto met."""
    same_behaviour_as: list[str] = []
    """Keys of our own assertions that measure the same behaviour: the ``evaluator_pairs`` projection sets
    this evaluation against their results, case run by case run (judge-versus-vendor agreement)."""

    @field_validator("same_behaviour_as")
    @classmethod
    def _keys(cls, keys: list[str]) -> list[str]:
        bad = [k for k in keys if not is_identifier(k)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an assertion key ({IDENTIFIER_RULE})")
        return keys


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
    "transcript.not_regex": RegexMatch,
    "transcript.max_turns": MaxTurns,
    "transcript.max_latency": MaxLatency,
    "transcript.response_latency": ResponseLatency,
    "transcript.max_cost": MaxCost,
    "timing.response_latency": TimingLatency,
    "timing.interruptions": Interruptions,
    "timing.silence": Silence,
    "timing.talk_ratio": TalkRatio,
    "tool.called": ToolCalled,
    "tool.not_called": ToolCalled,
    "vendor.evaluation": VendorEvaluation,
    "exam.command_passes": CommandPasses,
    "exam.verify": Verify,
    "exam.file_changed": FileChanged,
    "exam.file_contains": FileContains,
    "exam.files_within": FilesWithin,
    "exam.cap": Cap,
    "exam.band": Band,
    "exam.profile": Profile,
    "rubric": Rubric,
}
"""Every mechanism Assay knows, with the model its parameters must satisfy."""

FAMILY_EVIDENCE: dict[str, str] = {
    "structural": "artefact",
    "transcript": "transcript",
    "timing": "transcript",
    "tool": "tool_calls",
    "vendor": "evaluations",
    "exam": "artefact",
    "rubric": "transcript",
}
"""Which evidence field each mechanism family reads: a runner declaring a mechanism must fill it."""


def family(mechanism: str) -> str:
    """The family a mechanism belongs to: its name's first part (``"tool.called"`` -> ``"tool"``)."""
    return mechanism.split(".", 1)[0]


def mechanisms_of(*families: str) -> frozenset[str]:
    """Every known mechanism in the given families (``"transcript"``, ``"tool"``, ...)."""
    return frozenset(m for m in MECHANISMS if family(m) in families)


def validate_params(mechanism: str, params: dict[str, Any]) -> Params:
    """Validate ``params`` for ``mechanism``; raises ``KeyError`` or pydantic's ``ValidationError``."""
    if mechanism not in MECHANISMS:
        raise KeyError(mechanism)
    return MECHANISMS[mechanism].model_validate(params)


__all__ = [
    "FAMILY_EVIDENCE", "MECHANISMS", "REGEX_SYNTAX", "Band", "Cap", "ClausePresent", "CommandPasses", "ExamMeasure",
    "FileChanged", "FileContains", "FilesWithin", "Interruptions", "MaxCost", "MaxLatency", "MaxTurns", "Params",
    "Profile", "ProfileMeasure", "RegexMatch", "ResponseLatency", "Rubric", "Silence", "TalkRatio", "TextMatch",
    "TimingLatency", "ToolAttached", "ToolCalled", "ValidationError", "VariablesResolve", "VendorEvaluation", "Verify",
    "family", "mechanisms_of", "regex_problem", "validate_params",
]
