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
     "first_message": "Thanks for calling ...",
     "model": {"provider": "openai", "model": "gpt-4o", "temperature": 0.3, "max_tokens": 250},
     "voice": {"provider": "11labs", "voice_id": "sarah", "model": "eleven_turbo_v2_5", "speed": 1.0},
     "transcriber": {"provider": "deepgram", "model": "nova-2", "language": "en"},
     "turn": {"wait_seconds": 0.6, "silence_timeout_seconds": 20},
     "max_duration_seconds": 600, "end_call_message": "Goodbye.", "end_call_phrases": ["goodbye"]}

The settings after ``tools`` say what the assistant runs on: every one is optional (a platform runner then
uses its vendor's default, recorded in the run's artefact), every one a platform runner translates for its
vendor, and one its vendor cannot take is refused by name (:func:`settings_given`, the runners' ``refused``),
never dropped or replaced. Their vendor-neutral shapes are written once below; ``docs/reference/
compiled-config.schema.json`` is generated from :class:`CompiledConfig` (``python -m assay.core.compiled
docs/reference/compiled-config.schema.json``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
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

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, use_attribute_docstrings=True)

    name: NonEmpty
    """The tool's name, unique within the config: what ``structural.tool_attached`` looks for."""
    description: str = ""
    """What the tool does, as the model is told."""


class _Settings(BaseModel):
    """A group of settings: unknown keys are refused (a misspelt setting must not be dropped unseen)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True)


Seconds = Annotated[float, Field(ge=0, strict=False)]


class ModelSettings(_Settings):
    """The LLM behind the assistant."""

    provider: NonEmpty | None = None
    """Who serves the model (``openai``, ``anthropic``, ...), as the vendor names it; a vendor that picks the
    provider from the model's name (ElevenLabs) is not sent it."""
    model: NonEmpty
    """The model's name as the vendor takes it (``gpt-4o``, ``gemini-2.0-flash``)."""
    temperature: Annotated[float, Field(ge=0, le=2, strict=False)] | None = None
    """Sampling temperature."""
    max_tokens: Annotated[int, Field(gt=0)] | None = None
    """The most tokens the model may produce per reply."""


class VoiceSettings(_Settings):
    """The voice the assistant speaks with."""

    provider: NonEmpty
    """The voice's provider as the vendor names it (VAPI: ``11labs``, ``azure``, ...)."""
    voice_id: NonEmpty
    """The provider's id of the voice."""
    model: NonEmpty | None = None
    """The speech model (``eleven_turbo_v2_5``)."""
    speed: Annotated[float, Field(gt=0, strict=False)] | None = None
    """Speaking rate, 1 = normal."""
    stability: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    """Voice stability, 0..1 (ElevenLabs voices)."""
    similarity_boost: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    """Similarity to the original voice, 0..1 (ElevenLabs voices)."""


class TranscriberSettings(_Settings):
    """What turns the caller's speech into text."""

    provider: NonEmpty
    """The transcriber's provider as the vendor names it (VAPI: ``deepgram``, ...; ElevenLabs: ``elevenlabs``)."""
    model: NonEmpty | None = None
    """The transcription model (``nova-2``)."""
    language: NonEmpty | None = None
    """The caller's language (``en``)."""


class TurnSettings(_Settings):
    """Turn-taking: when the assistant speaks and when silence ends the call."""

    wait_seconds: Seconds | None = None
    """The least time the assistant waits after the caller stops before it speaks (endpointing)."""
    silence_timeout_seconds: Seconds | None = None
    """How long the caller may stay silent before the call is ended."""


class CompiledConfig(BaseModel):
    """A compiled assistant config. Other keys a compiler emits (server, ...) are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, use_attribute_docstrings=True)

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
    model: ModelSettings | None = None
    """The LLM, its temperature and reply length; a run's ``--model`` may override it (recorded on the run)."""
    voice: VoiceSettings | None = None
    """The voice; a chat runner creates the assistant with it, though a chat has no audio."""
    transcriber: TranscriberSettings | None = None
    """The speech-to-text settings."""
    turn: TurnSettings | None = None
    """Endpointing and silence."""
    max_duration_seconds: Annotated[int, Field(gt=0)] | None = None
    """The longest a call may last."""
    end_call_message: NonEmpty | None = None
    """What the assistant says as it ends the call."""
    end_call_phrases: list[NonEmpty] | None = None
    """Phrases that, said by the assistant, end the call."""

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
    """Where a problem sorts: by field as declared, then by tool, then by the tool's field (settings last)."""
    last = len(_ORDER) + list(CompiledConfig.model_fields).index(loc[0]) if loc[0] in CompiledConfig.model_fields else 99
    index = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else -1
    return _ORDER.get(loc[:1], last), index, _ORDER.get(_generic(loc), 0)


def _problem(error: Any) -> str:
    where = "config" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"])
    if error["type"] == "missing" and len(error["loc"]) == 1:
        return f"{where}: missing; a non-empty string is required"
    got = None if error["type"] == "missing" else error["input"]
    expected = _EXPECTED.get(_generic(error["loc"]))
    if expected is None:  # a setting: pydantic's words say the bound or the allowed keys
        if error["type"] == "extra_forbidden":
            group = CompiledConfig.model_fields[error["loc"][0]].annotation
            known = ", ".join(next(a for a in getattr(group, "__args__", (group,)) if a is not type(None)).model_fields)
            return f"{where}: not a setting Assay knows; the settings here are {known}"
        return f"{where}: {error['msg'].lower()}, got {_kind(got) if error['type'] != 'missing' else 'nothing'}"
    return f"{where}: expected {expected}, got {_kind(got)}"


# ------------------------------------------------------------------------------------ settings

SETTINGS = ("model", "voice", "transcriber", "turn", "max_duration_seconds", "end_call_message", "end_call_phrases")
"""The config's fields that say what the assistant runs on, each translated by every platform runner."""


def settings_given(config: CompiledConfig) -> list[str]:
    """The settings the config gives, as dotted names (``model.temperature``, ``max_duration_seconds``)."""
    given = []
    for field in SETTINGS:
        value = getattr(config, field)
        if isinstance(value, BaseModel):
            given += [f"{field}.{k}" for k, v in value if v is not None]
        elif value is not None:
            given.append(field)
    return given


def refused_settings(config: CompiledConfig, takes: Collection[str], vendor: str) -> str | None:
    """Why ``vendor``, which takes only the settings ``takes`` (dotted names), cannot run the config, or None."""
    refused = [name for name in settings_given(config) if name not in takes]
    if not refused:
        return None
    return (f"{vendor} cannot take the compiled config's {', '.join(refused)}: its assistants have no such setting. "
            f"Remove {'it' if len(refused) == 1 else 'them'} from the config, or run the suite on a runner whose vendor "
            "takes it; Assay does not drop or replace a setting")


def with_model(config: CompiledConfig, model: str | None) -> CompiledConfig:
    """The config with its model replaced by ``model`` (``NAME`` or ``PROVIDER/NAME``), as a run's ``--model``
    asks; the config's other model settings stay. None: the config as it is."""
    if model is None:
        return config
    provider, _, name = model.partition("/") if "/" in model else ("", "", model)  # openrouter/anthropic/x: provider openrouter
    current = config.model.model_dump() if config.model is not None else {}
    current.update(model=name, **({"provider": provider} if provider else {}))
    return config.model_copy(update={"model": ModelSettings.model_validate(current)})


def schema_text() -> str:
    """The JSON Schema (draft 2020-12) of a compiled config, as committed in ``docs/reference``."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **CompiledConfig.model_json_schema(),
              "title": "Assay compiled assistant config"}
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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


__all__ = ["ArtefactParts", "CompiledConfig", "CompiledTool", "ModelSettings", "PLACEHOLDER", "SETTINGS", "TranscriberSettings",
           "TurnSettings", "VoiceSettings", "config_problems", "read_artefact", "refused_settings", "schema_text",
           "settings_given", "with_model"]


if __name__ == "__main__":
    import sys
    from pathlib import Path

    Path(sys.argv[1]).write_text(schema_text())
    print(sys.argv[1])
