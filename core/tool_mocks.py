"""World-backed tool mocks: a suite's declared answers to its agent's tool calls, drawn from each case's world.

A suite whose target is a compiled config may declare, per tool name, an ordered list of rules::

    tool_mocks:
      check_service_area:
        - when: {zip: {in: world.service_zips}}
          answer: {in_area: true}
        - when: {}
          answer: {in_area: false, nearest_partner: world.referral}

The first rule whose ``when`` holds answers the call with its ``answer``. Nothing else is ever made up:
a call no rule covers, or a rule naming a fact the case's world lacks, is a :class:`ToolMockError`
naming the tool and its arguments, and the runner makes that case run an ERROR.

A **world reference** is a string that is exactly ``world.`` followed by a dotted path into the case's
``world`` (``world.service_zips``, ``world.open_slots.0``, ``world.booking.day``; a number indexes a
list). Anywhere else a string is a literal. :func:`answer_call` is pure: the HTTP side lives in
:mod:`assay.adapters.tool_mocks`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, model_validator

from .bundle_base import Text, _Model
from .errors import ToolMockError

WORLD_REF = re.compile(r"^world((?:\.[^.\s]+)+)$")
"""A world reference: ``world.`` and a dotted path (a segment that is a number indexes a list)."""
_MISSING = object()


class Condition(_Model):
    """A test on one argument of the call: exactly one of ``equals``, ``in`` or ``not_in``. An operand is a
    literal or a world reference. Scalars compare by their JSON text, so ``"60614"`` equals ``60614``; an
    argument the call lacks satisfies no condition."""

    equals: Any = None
    """The argument equals this value."""
    in_: Any = Field(default=None, alias="in")
    """The argument is one of this list (or one of this object's keys)."""
    not_in: Any = None
    """The argument is in neither this list nor this object's keys."""

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValueError(f"a condition is an object naming its test, e.g. {{equals: {json.dumps(data)}}}, "
                             "{in: world.service_zips} or {not_in: [...]}")
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> "Condition":
        given = [name for name in ("equals", "in", "not_in") if name in self._given()]
        if len(given) != 1:
            found = ", ".join(given) or "none"
            raise ValueError(f"a condition names exactly one of 'equals', 'in' or 'not_in' (found {found}), "
                             "e.g. {zip: {in: world.service_zips}}")
        return self

    def _given(self) -> dict[str, Any]:
        return {("in" if name == "in_" else name): getattr(self, name) for name in self.model_fields_set}

    def operator(self) -> tuple[str, Any]:
        """The condition as ``(operator, operand)``."""
        [(name, operand)] = self._given().items()
        return name, operand


class MockRule(_Model):
    """One rule of a tool's mock: when it holds for a call, the call is answered with ``answer``."""

    when: dict[Text, Condition] = Field(default_factory=dict)
    """Per top-level argument name, a condition; every one must hold. Empty (``{}``): always holds."""
    answer: Any = Field(...)
    """The tool's result, any JSON; a string that is exactly a world reference is replaced by that fact."""


Rules = Annotated[list[MockRule], Field(min_length=1)]
"""A tool's rules, in order: at least one."""


class ToolMocks(_Model):
    """A suite target's ``tool_mocks``: per tool name, the rules tried in order."""

    tools: dict[Text, Rules]
    """Per tool name (as the compiled config names it), its rules; the first that holds answers."""

    def stored(self) -> dict[str, Any]:
        """The mapping as the catalog stores it (part of the suite's target, so a change is a new target)."""
        return {name: [{"when": {arg: dict([c.operator()]) for arg, c in rule.when.items()}, "answer": rule.answer}
                       for rule in rules] for name, rules in self.tools.items()}

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> "ToolMocks":
        return cls.model_validate({"tools": dict(stored)})


@dataclass(frozen=True)
class MockAnswer:
    """How the mock answered one call: the rule that held (its index in the tool's list) and its answer."""

    tool: str
    arguments: dict[str, Any]
    rule: int
    answer: Any


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _call(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool} with arguments {json.dumps(dict(arguments), sort_keys=True)}"


def world_fact(world: Mapping[str, Any], reference: str) -> Any:
    """The fact ``reference`` (``world.a.0.b``) names; ``_MISSING`` when the world lacks it."""
    m = WORLD_REF.match(reference)
    if m is None:
        raise ValueError(f"{reference!r} is not a world reference (world.<fact>[.<key or index>...])")
    value: Any = world
    for part in m.group(1)[1:].split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def references(value: Any) -> Iterator[str]:
    """Every world reference in a rule's operand or answer."""
    if isinstance(value, str) and WORLD_REF.match(value):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def rule_references(rule: MockRule) -> list[str]:
    """The world references of a rule, its conditions' operands first."""
    return [*(ref for c in rule.when.values() for ref in references(c.operator()[1])), *references(rule.answer)]


def _resolve(value: Any, world: Mapping[str, Any], tool: str, arguments: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and WORLD_REF.match(value):
        fact = world_fact(world, value)
        if fact is _MISSING:
            known = ", ".join(sorted(world)) or "none"
            raise ToolMockError(tool, dict(arguments), (
                f"the tool mock for {_call(tool, arguments)} names {value}, which this case's world lacks "
                f"(its facts: {known}); add the fact to the case's situation.world or change the rule"))
        return fact
    if isinstance(value, Mapping):
        return {k: _resolve(v, world, tool, arguments) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, world, tool, arguments) for v in value]
    return value


def _holds(condition: Condition, argument: Any, operand: Any) -> bool:
    if argument is _MISSING:
        return False
    op, _ = condition.operator()
    if op == "equals":
        return _text(argument) == _text(operand)
    if not isinstance(operand, list | Mapping):
        raise TypeError(f"'{op}' needs a list (or an object's keys), got {type(operand).__name__}")
    found = _text(argument) in {_text(item) for item in operand}
    return found if op == "in" else not found


def answer_call(mocks: ToolMocks, world: Mapping[str, Any], tool: str, arguments: Mapping[str, Any]) -> MockAnswer:
    """The answer to one tool call: the first rule of ``tool`` whose ``when`` holds, its world references
    replaced by the case's facts. :class:`ToolMockError` when no rule covers the call or a fact is missing."""
    rules = mocks.tools.get(tool)
    if rules is None:
        declared = ", ".join(sorted(mocks.tools)) or "none"
        raise ToolMockError(tool, dict(arguments), (
            f"no tool mock covers {_call(tool, arguments)}: the suite declares no rules for tool {tool!r} "
            f"(tools with rules: {declared}); add tool_mocks.{tool} to the suite's target"))
    for index, rule in enumerate(rules):
        held = True
        for name, condition in rule.when.items():
            operand = _resolve(condition.operator()[1], world, tool, arguments)
            try:
                held = _holds(condition, arguments.get(name, _MISSING), operand)
            except TypeError as exc:
                raise ToolMockError(tool, dict(arguments), (
                    f"the tool mock rule {index} of {tool!r} cannot test argument {name!r}: {exc}; "
                    "make the operand a list or a world reference to one")) from None
            if not held:
                break
        if held:
            return MockAnswer(tool, dict(arguments), index, _resolve(rule.answer, world, tool, arguments))
    raise ToolMockError(tool, dict(arguments), (
        f"no tool mock covers {_call(tool, arguments)}: none of its {len(rules)} rule(s) held; add a rule "
        f"for these arguments (or a last rule with `when: {{}}`) to tool_mocks.{tool}"))


def missing_facts(mocks: ToolMocks, world: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """``(tool, rule index, reference)`` for every world reference of ``mocks`` that ``world`` lacks."""
    return [(tool, index, ref) for tool, rules in mocks.tools.items() for index, rule in enumerate(rules)
            for ref in rule_references(rule) if world_fact(world, ref) is _MISSING]


def bundle_problems(bundle: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Load-time checks of every suite's ``tool_mocks`` in a validated bundle (its targets resolved): each tool
    is one of the compiled config's, and each world reference is a fact of every case the suite runs."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for ti, team in enumerate(bundle.teams):
        worlds = {case.key: case.situation.world for case in team.cases}
        for si, suite in enumerate(team.suites):
            if not suite.target.tool_mocks or suite._resolved is None:
                continue
            at = ("teams", ti, "suites", si, "target", "tool_mocks")
            mocks = ToolMocks(tools=suite.target.tool_mocks)
            config = suite.resolved_target.target.get("config") or {}
            names = [t.get("name") for t in config.get("tools") or [] if isinstance(t, Mapping)]
            for tool in mocks.tools:
                if tool not in names:
                    problems.append(((*at, tool), f"{tool!r} is not a tool of the suite's compiled config (its "
                                     f"tools: {', '.join(map(str, names)) or 'none'}); name a tool the agent has"))
            for key in suite.cases:
                for tool, index, ref in missing_facts(mocks, worlds.get(key, {})):
                    problems.append(((*at, tool, index), f"{ref} is not a fact of case {key!r}'s world, which this "
                                     f"suite runs; add it to the case's situation.world or change the rule"))
    return problems


def argument_free(mocks: ToolMocks) -> dict[str, MockRule]:
    """Per tool, its first rule when that rule always holds (``when: {}``): the tools a static mock can answer."""
    return {tool: rules[0] for tool, rules in mocks.tools.items() if rules and not rules[0].when}


def static_answer(rule: MockRule, world: Mapping[str, Any], tool: str) -> Any:
    """An argument-free rule's answer with its world references replaced (ToolMockError when a fact is missing)."""
    return _resolve(rule.answer, world, tool, {})


__all__ = ["Condition", "MockAnswer", "MockRule", "Rules", "ToolMocks", "WORLD_REF", "answer_call", "argument_free",
           "bundle_problems", "missing_facts", "references", "rule_references", "static_answer", "world_fact"]
