"""``assay import-config VENDOR ID``: a live VAPI assistant or ElevenLabs agent as a compiled config file.

So that the thing under test is the team's own assistant: the command reads it through the vendor's
documented GET (``GET /assistant/{id}``, ``GET /v1/convai/agents/{agent_id}``), translates its prompt,
first message, tools and every setting Assay translates back (:func:`assay.adapters.vapi.config_from_assistant`,
:func:`assay.adapters.elevenlabs.config_from_agent`), redacts it (:func:`assay.core.redact.redact`) and writes
it as JSON, ready to be a suite's ``target.config``. What the vendor object holds that Assay does not translate
is listed in the file under ``imported.left_out`` and printed, never silently lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

VENDORS = ("vapi", "elevenlabs")
"""The vendors a config can be imported from."""


def register(app: typer.Typer) -> None:
    app.command("import-config")(import_config_command)


def _readers() -> dict[str, tuple[str, Callable[[Any, str], dict[str, Any]]]]:
    """Per vendor: what its object is called, and how to read one (settings, id) into a compiled config."""
    def vapi(settings: Any, object_id: str) -> dict[str, Any]:
        from assay.adapters.vapi import VapiApi, config_from_assistant

        with VapiApi.from_settings(settings) as api:
            return config_from_assistant(api.get_assistant(object_id))

    def elevenlabs(settings: Any, object_id: str) -> dict[str, Any]:
        from assay.adapters.elevenlabs import ElevenLabsApi, config_from_agent

        with ElevenLabsApi.from_settings(settings) as api:
            return config_from_agent(api.get_agent(object_id))

    return {"vapi": ("VAPI assistant", vapi), "elevenlabs": ("ElevenLabs agent", elevenlabs)}


def import_config(settings: Any, vendor: str, object_id: str) -> dict[str, Any]:
    """The compiled config of the vendor's live object, redacted and checked; a :class:`UsageError` for an
    unknown vendor, a :class:`ConfigError` when the object has nothing Assay can run (no prompt)."""
    from assay.core.compiled import config_problems
    from assay.core.errors import ConfigError, UsageError
    from assay.core.redact import redact

    readers = _readers()
    if vendor not in readers:
        raise UsageError(f"cannot import a config from {vendor!r}; the vendors are {', '.join(VENDORS)}")
    what, read = readers[vendor]
    config = redact(read(settings, object_id))
    problems = config_problems({"config": config})
    if problems:
        raise ConfigError(f"{what} {object_id} cannot be run as it is: " + "; ".join(problems)
                          + " (Assay translates the system prompt, first message, function tools and settings)")
    return config


def import_config_command(
    vendor: Annotated[str, typer.Argument(metavar="VENDOR", help="vapi or elevenlabs.")],
    object_id: Annotated[str, typer.Argument(metavar="ID", help="The assistant's id (VAPI) or the agent's id "
                                             "(ElevenLabs).")],
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE", help="Where to write the config (default: "
                                             "VENDOR-ID.json here).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")] = False,
) -> None:
    """Read a live VAPI assistant or ElevenLabs agent into a compiled config file (redacted), for a suite's
    target: the suite then runs on the team's own assistant, its model, voice and settings included."""
    from assay.core.compiled import CompiledConfig, settings_given
    from assay.core.errors import UsageError

    from . import cli
    from .workspace import load_settings

    path = out or Path(f"{vendor}-{object_id}.json")
    if path.exists() and not force:
        raise UsageError(f"{path} exists: give another --out, or --force to overwrite it")
    config = import_config(load_settings(), vendor, object_id)
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    body = {"path": str(path), "vendor": vendor, "id": object_id, "name": config["name"],
            "tools": [t["name"] for t in config["tools"]], "settings": settings_given(CompiledConfig.model_validate(config)),
            "left_out": config["imported"]["left_out"]}
    if not cli._emit("assay.import-config", body, as_json):
        typer.echo(f"wrote {path}: {body['name']!r}; tools {', '.join(body['tools']) or 'none'}; settings "
                   f"{', '.join(body['settings']) or 'none'}")
        if body["left_out"]:
            typer.echo(f"not translated (kept at the vendor only): {', '.join(body['left_out'])}")
