"""The bundle's models (schema ``assay.bundle/v1``): consumers, teams, cases, suites, assertions, criteria.

Every model forbids unknown fields and documents each field. Reading a file and the checks pydantic
cannot express live in :mod:`.bundle` and :mod:`.bundle_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .bundle_base import Identifier, Text, _Model
from .bundle_templates import TemplateDef, TemplateGroupDef
from .criteria import CriteriaSpec
from .ids import content_hash
from .mechanisms import MECHANISMS, validate_params
from .names import nearest
from .tool_mocks import Rules, ToolMocks

SCHEMA = "assay.bundle/v1"
KNOWN_SCHEMAS: tuple[str, ...] = (SCHEMA,)

VENDOR_SHAPES = frozenset({
    "assistantid", "squadid", "assistantoverrides", "variablevalues", "simulationspecification", "testconfigurations",
})  # fmt: skip
"""Field names of a vendor's request, refused anywhere in a definition, the situation's world included."""
VENDOR_KEYS = VENDOR_SHAPES | frozenset({
    "platform", "provider", "vendor", "model", "llm", "voice", "voiceid", "squad", "agentid", "phonenumber",
    "phonenumbers",
})  # fmt: skip
"""Keys that name how a test runs, compared lower-case without ``_``/``-`` (``squadId`` = ``squad_id``):
refused as keys of a case, a suite, a target and the situation itself. Inside the situation's ``world``
(its facts) ordinary words are facts (a panel's ``model``, the caller's ``phone_number``): only
:data:`VENDOR_SHAPES` and :data:`VENDOR_NAMES` are refused there."""
VENDOR_NAMES = frozenset({"vapi", "elevenlabs", "hamming"})
"""A key containing one of these words names a vendor, wherever it is."""

_OWN_CASES = "a suite names cases of its own team — fix the key or add the case"
_ADD_OR_REMOVE = "add an assertion with this key to the suite or one of its cases, or remove it from the criteria"
_IGNORED = "an ignored key never moves a verdict — keep it in one list"
_ONE_CALL_PER_LINE = "a call set holds one recorded call per line"

Location = tuple[str | int, ...]
"""A path inside the file, as pydantic reports it: ``("teams", 0, "cases", 2, "key")``."""


class ConsumerDef(_Model):
    """An application-level asker (a CI gate, a publish gate, a nightly sweep); belongs to no team."""

    key: Identifier
    """The consumer's key, used by criteria (``blueprint_ci``)."""
    description: str = ""
    """One line: what this consumer decides with its verdicts."""


class Situation(_Model):
    """Who calls, what they want, what they must be told, what is true in the world. Never how it runs."""

    caller: Text
    """Who calls, in a line: name, role, mood."""
    wants: Text
    """What the caller wants from the call."""
    must_be_told: list[Text] = Field(default_factory=list)
    """What the agent must tell the caller for the call to go well."""
    world: dict[str, Any] = Field(default_factory=dict)
    """What is true in the world the agent can find out (service area, bookings, prices): any JSON values."""
    turns: list[Text] = Field(default_factory=list)
    """Scripted caller turns, said in order by a platform chat runner; empty: our caller simulator speaks,
    from who calls, what they want and what they must be told."""


class AssertionDef(_Model):
    """One behaviour to check: a key (the behaviour), a mechanism and its parameters."""

    key: Identifier
    """The behaviour's key; criteria name it. Rewording keeps the key and writes a new version."""
    mechanism: str
    """How it is checked: one of :data:`~.mechanisms.MECHANISMS`."""
    params: dict[str, Any] = Field(default_factory=dict, validate_default=True)
    """The mechanism's parameters, validated against its parameter model."""
    role: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    """Optional vendor-slot hint: which designated slot of a vendor this assertion goes into."""
    description: str = ""
    """What the behaviour means, in words."""

    @field_validator("mechanism")
    @classmethod
    def _known_mechanism(cls, value: str) -> str:
        if value not in MECHANISMS:
            close = nearest(value, MECHANISMS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown mechanism {value!r}; {hint}valid mechanisms: {', '.join(MECHANISMS)}")
        return value

    @field_validator("params")
    @classmethod
    def _params_fit(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        mechanism = info.data.get("mechanism")
        if mechanism is None:  # the mechanism itself is wrong and already reported
            return params
        try:
            validate_params(mechanism, params)
        except ValidationError as exc:
            problems = [(tuple(e["loc"]), _param_message(mechanism, e)) for e in exc.errors(include_url=False)]
            raise PydanticCustomError(
                "bad_params", "invalid parameters for {mechanism}", {"mechanism": mechanism, "problems": problems}
            ) from None
        return params

    def stored(self) -> dict[str, Any]:
        """What the catalog stores and hashes: defaults dropped, so spelling out a default is no change."""
        params = validate_params(self.mechanism, self.params).model_dump(mode="json", exclude_defaults=True)
        return {"mechanism": self.mechanism, "params": params, "role": self.role, "description": self.description}

    @property
    def content_hash(self) -> str:
        return content_hash(self.stored())


def _param_message(mechanism: str, err: Any) -> str:
    name = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        known = ", ".join(MECHANISMS[mechanism].model_fields) or "none"
        return f"unknown parameter {name!r} for {mechanism}; its parameters: {known}"
    if err["type"] == "missing":
        return f"{mechanism} needs parameter {name!r}"
    what = err["msg"].removeprefix("Value error, ")
    got = "" if err["type"] == "value_error" else f" (got {_short(err['input'])})"
    return f"parameter {name!r} of {mechanism}: {what}{got}"


class CaseDef(_Model):
    """A situation, owned by a team; the same situation runs under any runner."""

    key: Identifier
    """The case's key, unique within its team."""
    title: Text
    """One line naming the situation."""
    source_recipe: Identifier | None = None
    """The template (recipe) this case came from, if any."""
    situation: Situation
    """Who calls, what they want, what they must be told, what is true in the world."""
    assertions: list[AssertionDef] = Field(default_factory=list)
    """Behaviours checked on this case only."""

    def content(self) -> dict[str, Any]:
        """The case content the catalog stores, hashes, and every case run snapshots."""
        # ``turns`` is left out when empty, so cases written before it existed keep their content hash.
        situation = self.situation.model_dump(mode="json", exclude=None if self.situation.turns else {"turns"})
        return {"title": self.title, "situation": situation}


class TargetDef(_Model):
    """What a suite runs against: exactly one of a compiled config, a call set or an exam (paths relative to the
    bundle)."""

    config: Text | None = None
    """A JSON file holding a compiled assistant config; stored inline in the catalog."""
    call_set: Text | None = None
    """A JSONL file of recorded calls, one per line; stored as its absolute path and sha256."""
    exam: Text | None = None
    """A coding-agent exam directory (``.assay/exams/<slug>``, every assertion reviewed); stored as its
    repository, its directory there, its harness and the sha256 of its files."""
    tool_mocks: dict[Text, Rules] | None = None
    """With a config only: per tool name, rules that answer the agent's calls from each case's world
    (:mod:`~.tool_mocks`); the first rule whose ``when`` holds answers. Stored with the target."""

    @model_validator(mode="after")
    def _exactly_one(self) -> "TargetDef":
        named = [k for k in ("config", "call_set", "exam") if getattr(self, k) is not None]
        if len(named) != 1:
            found = " and ".join(named) or "neither"
            raise ValueError(
                f"a target names exactly one of 'config' (a compiled config JSON file), 'call_set' "
                f"(a JSONL file of recorded calls) or 'exam' (an exam directory); found {found}"
            )
        if self.tool_mocks is not None and self.config is None:
            raise ValueError("'tool_mocks' answer the tool calls of an agent run from a compiled config; a call set's "
                             "calls were answered when they were recorded, and an exam's agent calls real tools — "
                             "remove tool_mocks or target a config")
        return self

    def stored_mocks(self) -> dict[str, Any]:
        """``{"tool_mocks": {...}}`` as the catalog stores it with the target; empty when none are declared,
        so a target without mocks keeps its hash."""
        if self.tool_mocks is None:
            return {}
        return {"tool_mocks": ToolMocks(tools=self.tool_mocks).stored()}

    @property
    def kind(self) -> Literal["config", "call_set", "exam"]:
        return "config" if self.config is not None else "call_set" if self.call_set is not None else "exam"

    @property
    def named(self) -> str:
        """The path the target names, relative to the bundle's folder."""
        return self.config or self.call_set or self.exam or ""


@dataclass(frozen=True)
class ResolvedTarget:
    """A suite's target as the catalog stores it."""

    kind: Literal["config", "call_set", "exam"]
    target: dict[str, Any]
    """``{"config": {...}}``, ``{"call_set": {"path": ..., "sha256": ...}}`` or
    ``{"exam": {"repo": ..., "dir": ..., "harness": ..., "sha256": ...}}``."""

    @property
    def hash(self) -> str:
        return content_hash(self.target)


class RepeatPlan(_Model):
    """How often a suite's runs replay each case, and how far escalation may go for undecided cases."""

    count: int = Field(default=10, ge=1, le=1000)
    """Replays of each case per run (each replay is a case run); ``assay run --repeat`` overrides it."""
    budget: int | None = Field(default=60, ge=1, le=1000)
    """The most replays escalation may give a case the evidence has not decided under a consumer's
    ``pass_rate``, at least ``count``; equal to ``count`` (or null): no escalation. ``assay run --budget``
    overrides it. The defaults, 10 replays and a budget of 60, are those ``make bench`` measures."""

    @model_validator(mode="after")
    def _budget_covers_count(self) -> "RepeatPlan":
        if self.budget is not None and self.budget < self.count:
            raise ValueError(f"budget ({self.budget}) must be at least count ({self.count}): it is the most replays "
                             "a case may reach, the first count included")
        return self


class SuiteDef(_Model):
    """An assistant's (or call set's) selection of the team's cases: the run target."""

    key: Identifier
    """The suite's key, unique within its team (``assay run TEAM/SUITE``)."""
    name: Text
    """A human name for the suite."""
    target: TargetDef
    """The compiled config, call set or exam the suite runs against."""
    cases: list[Identifier] = Field(min_length=1)
    """Keys of the team's cases, in run order."""
    assertions: list[AssertionDef] = Field(default_factory=list)
    """Behaviours checked on every case of the suite."""
    criteria: dict[Identifier, CriteriaSpec] = Field(default_factory=dict)
    """Per consumer key: the assertion keys it requires, its threshold groups, the keys it ignores."""
    tags: list[Identifier] = Field(default_factory=list)
    """Labels that pick the suite out for scheduled work (``nightly``: the nightly sweep re-runs it), each
    once. Editing them changes nothing under test: no re-run, re-judge or re-score."""
    runners: list[Identifier] = Field(default_factory=list)
    """The runners that play the suite, each once and in order (``[vapi_chat, elevenlabs_chat]``): ``assay run``
    without ``--runner``, the nightly sweep and the deployments start one run per runner. Empty: ``assay run``
    uses the default runner of the target, and scheduled work refuses the suite unless that runner evaluates
    every mechanism its assertions use. Editing them changes nothing under test: no re-run, re-judge or re-score."""
    repeat: RepeatPlan | None = None
    """Replay each case ``count`` times per run, and let escalation add replays to undecided cases up to
    ``budget`` (``{count: 10, budget: 60}``). A call-set suite cannot repeat: a recorded call happened once; an
    exam suite replays its exam afresh each time."""

    _resolved: ResolvedTarget | None = PrivateAttr(default=None)

    @field_validator("tags", "runners")
    @classmethod
    def _each_once(cls, names: list[str], info: ValidationInfo) -> list[str]:
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            what = info.field_name.removesuffix("s")
            raise ValueError(f"duplicate {what}(s) {', '.join(map(repr, twice))}; list each {what} once")
        return names

    @model_validator(mode="after")
    def _recordings_play_once(self) -> "SuiteDef":
        if self.repeat is not None and self.repeat.count > 1 and self.target.call_set is not None:
            raise ValueError("a call-set suite cannot repeat its cases: a recorded call happened once; drop 'repeat' "
                             "or target a compiled config")
        return self

    @property
    def resolved_target(self) -> ResolvedTarget:
        if self._resolved is None:
            raise RuntimeError(f"suite {self.key!r}: its target was not resolved; read bundles with read_bundle()")
        return self._resolved


class TeamDef(_Model):
    """A team: owns its cases and suites."""

    id: Identifier
    """The team's id (part of lake paths and of ``TEAM/SUITE`` names)."""
    name: Text
    """The team's display name."""
    cases: list[CaseDef] = Field(default_factory=list)
    """The team's situations."""
    suites: list[SuiteDef] = Field(default_factory=list)
    """The team's suites."""


class Bundle(_Model):
    """A whole bundle file."""

    schema_id: Literal["assay.bundle/v1"] = Field(alias="schema")
    """The format and its version: ``assay.bundle/v1``."""
    consumers: list[ConsumerDef] = Field(default_factory=list)
    """Consumers declared (or re-described) by this bundle."""
    teams: list[TeamDef] = Field(default_factory=list)
    """The teams this bundle defines."""
    templates: list[TemplateDef] = Field(default_factory=list)
    """Shareable recipes of a case: a team applies one with its own facts (``assay template apply``)."""
    template_groups: list[TemplateGroupDef] = Field(default_factory=list)
    """Starter packs: the templates a new team starts from."""

    _file: str = PrivateAttr(default="<bundle>")

    @property
    def file(self) -> str:
        """The file this bundle was read from, as named by the caller (for messages)."""
        return self._file


def criteria_spec(spec: CriteriaSpec) -> dict[str, Any]:
    """A spec as stored: key lists sorted, so reordering a list is not a new version. A spec with no
    ``allow_undetermined`` (or ``pass_rate``, or ``applies``) is stored without the field, as before either existed."""
    stored: dict[str, Any] = {
        "required": sorted(spec.required),
        "threshold": [{"keys": sorted(g.keys), "min": g.min} for g in spec.threshold],
        "ignore": sorted(spec.ignore),
    }
    if spec.allow_undetermined is not None:
        stored["allow_undetermined"] = spec.allow_undetermined.model_dump()
    if spec.pass_rate is not None:
        stored["pass_rate"] = spec.pass_rate.model_dump()
    if spec.applies:  # where keys count: a new version of the criteria, a re-score
        stored["applies"] = dict(sorted(spec.applies.items()))
    return stored


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

__all__ = [
    "SCHEMA", "KNOWN_SCHEMAS", "VENDOR_KEYS", "VENDOR_NAMES", "VENDOR_SHAPES",
    "AssertionDef", "Bundle", "CaseDef", "ConsumerDef", "RepeatPlan", "ResolvedTarget", "Situation", "SuiteDef", "TargetDef",
    "TeamDef", "criteria_spec", 
]  # fmt: skip
