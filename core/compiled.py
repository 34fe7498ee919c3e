"""A compiled assistant config: what a compiler emits from a source prompt, and what Assay reads of it.

It arrives two ways. As a run target, ``{"config": {...}}``, read by the ``config_check`` runner, which
refuses a malformed one (:func:`config_problems`: every problem, each naming the field). And as a case
run's artefact (JSON text), read by the ``structural.*`` mechanisms, which are lenient
(:func:`read_artefact`): each part (prompt, variables, tools) is judged on its own, so a config without
a name still has a prompt to check, and one unusable part makes only the mechanisms that read it null.

Its shape, written once::

    {"name": "Acme main line",
     "prompt": "You are the receptionist for {{business_name}} ...",
     "variables": {"business_name": "Acme Plumbing & Heating"},
     "tools": [{"name": "check_service_area", "description": "...", ...}],
     "first_message": "Thanks for calling ..."}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
"""A ``{{ variable }}`` placeholder in a compiled prompt; group 1 is the variable's name."""


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


NonEmpty = Annotated[str, AfterValidator(_non_empty)]


class CompiledTool(BaseModel):
    """A tool attached to the config. Other keys (parameters, server, ...) are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    name: NonEmpty
    """The tool's name, unique within the config: what ``structural.tool_attached`` looks for."""
    description: str = ""
    """What the tool does, as the model is told."""


class CompiledConfig(BaseModel):
    """A compiled assistant config. Other keys a compiler emits (model, voice, server, ...) are kept."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    name: NonEmpty
    """The assistant's name, for people."""
    prompt: NonEmpty
    """The system prompt, with ``{{variable}}`` placeholders filled from ``variables`` at call time."""
    variables: dict[Any, Any] = Field(default_factory=dict)
    """Placeholder name -> value; a placeholder whose value is missing or empty is unresolved."""
    first_message: str | None = None
    """What the assistant says first, if it speaks first."""
    tools: list[CompiledTool] = Field(default_factory=list)
    """The tools attached to the assistant, names unique."""

    @field_validator("tools")
    @classmethod
    def _unique_names(cls, tools: list[CompiledTool]) -> list[CompiledTool]:
        for i, name in _repeated([tool.name for tool in tools]):
            text = f"tools[{i}].name: {_REPEATED.format(name=name)}"
            raise PydanticCustomError("repeated_tool", "{text}", {"text": text})
        return tools


# ------------------------------------------------------------------------------------ config_problems

_EXPECTED = {
    ("name",): "a non-empty string", ("prompt",): "a non-empty string",
    ("variables",): "an object of name -> value", ("first_message",): "a string", ("tools",): "a list of tools",
    ("tools", 0): "an object with a name", ("tools", 0, "name"): "a non-empty string",
    ("tools", 0, "description"): "a string",
}
"""What each field must be, as the problems say it (a tool's index shown as 0)."""
_REPEATED = "{name!r} is attached twice; tool names must be unique"
_ORDER = {key: k for k, key in enumerate(_EXPECTED)}


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _repeated(names: list[Any]) -> list[tuple[int, str]]:
    """(index, name) of each tool whose name an earlier tool already has (names that are not text ignored)."""
    seen: set[str] = set()
    out = []
    for i, name in enumerate(names):
        if isinstance(name, str) and name.strip():
            if name in seen:
                out.append((i, name))
            seen.add(name)
    return out


def config_problems(target: Any) -> list[str]:
    """Everything wrong with a ``config`` run target, each naming the field; empty when it is well-formed."""
    if not isinstance(target, dict) or "config" not in target:
        return ["target: expected {\"config\": {...compiled assistant config...}}"]
    config = target["config"]
    if not isinstance(config, dict):
        return [f"config: expected an object with name, prompt, variables and tools, got {_kind(config)}"]
    try:
        CompiledConfig.model_validate(config)
        return []
    except ValidationError as exc:
        # repeated names: all of them are listed below; keys that are not text (from YAML) are let through
        errors = [e for e in exc.errors() if e["type"] not in ("repeated_tool", "invalid_key")]
    problems = [(_place(e["loc"]), _problem(e)) for e in errors]
    tools = config.get("tools")
    if isinstance(tools, list):
        names = [tool.get("name") if isinstance(tool, dict) else None for tool in tools]
        problems += [(_place(("tools", i, "name")), f"config.tools[{i}].name: {_REPEATED.format(name=name)}")
                     for i, name in _repeated(names)]
    return [text for _, text in sorted(problems, key=lambda problem: problem[0])]


def _generic(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(0 if isinstance(part, int) else part for part in loc)


def _place(loc: tuple[Any, ...]) -> tuple[int, int, int]:
    """Where a problem sorts: by field as declared, then by tool, then by the tool's field."""
    return _ORDER[loc[:1]], (loc[1] if len(loc) > 1 else -1), _ORDER[_generic(loc)]


def _problem(error: Any) -> str:
    where = "config" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    if error["type"] == "missing" and len(error["loc"]) == 1:
        return f"{where}: missing; a non-empty string is required"
    got = None if error["type"] == "missing" else error["input"]
    return f"{where}: expected {_EXPECTED[_generic(error['loc'])]}, got {_kind(got)}"


# ------------------------------------------------------------------------------------ read_artefact

NO_ARTEFACT = "the case run has no compiled artefact"
NOT_AN_OBJECT = "the compiled artefact is not a JSON object"
NO_PROMPT = "the compiled artefact has no prompt"
VARIABLES_NOT_AN_OBJECT = "the compiled artefact's variables are not an object"
TOOLS_NOT_A_LIST = "the compiled artefact's tools are not a list"


@dataclass(frozen=True)
class ArtefactParts:
    """What the structural mechanisms read from one artefact; a ``*_problem`` says why that part is unusable."""

    prompt: str | None = None
    """The compiled prompt (any string, even empty); None with ``prompt_problem``."""
    prompt_problem: str | None = None
    unresolved: tuple[str, ...] | None = None
    """Placeholders in the prompt whose variable is missing, null or empty, first occurrence first."""
    variables_problem: str | None = None
    """Why unresolved variables cannot be told (no prompt, or variables that are not an object)."""
    tools: tuple[str, ...] | None = None
    """The names of the attached tools (tools that are not objects with a text name are passed over)."""
    tools_problem: str | None = None


def read_artefact(text: str | None) -> ArtefactParts:
    """Read a case run's artefact (JSON text or None) part by part, leniently: see the module docstring.

    ``variables: null`` and ``tools: null`` count as none; NaN and Infinity are not JSON.
    """
    try:
        config = None if text is None else json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        config = None
    if not isinstance(config, dict):
        problem = NO_ARTEFACT if text is None else NOT_AN_OBJECT
        return ArtefactParts(prompt_problem=problem, variables_problem=problem, tools_problem=problem)
    tools = [] if config.get("tools") is None else config["tools"]
    if isinstance(tools, list):
        parts = {"tools": tuple(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str))}
    else:
        parts = {"tools_problem": TOOLS_NOT_A_LIST}
    prompt = config.get("prompt")
    variables = {} if config.get("variables") is None else config["variables"]
    if not isinstance(prompt, str):
        return ArtefactParts(prompt_problem=NO_PROMPT, variables_problem=NO_PROMPT, **parts)
    if not isinstance(variables, dict):
        return ArtefactParts(prompt=prompt, variables_problem=VARIABLES_NOT_AN_OBJECT, **parts)
    names = dict.fromkeys(PLACEHOLDER.findall(prompt))
    return ArtefactParts(prompt=prompt, unresolved=tuple(n for n in names if _is_empty(variables.get(n))), **parts)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and len(value) == 0)


__all__ = ["ArtefactParts", "CompiledConfig", "CompiledTool", "PLACEHOLDER", "config_problems", "read_artefact"]
