"""The body of ``assay.import-config``: a live assistant read into a compiled config file."""

from __future__ import annotations

from typing import Literal

from .document_runs import Body


class ImportConfigDoc(Body):
    """``assay import-config VENDOR ID``: where the compiled config was written and what it carries."""

    path: str
    """The compiled config file written."""
    vendor: Literal["vapi", "elevenlabs"]
    """The vendor the assistant was read from."""
    id: str
    """The vendor's id of the assistant (VAPI) or agent (ElevenLabs)."""
    name: str
    """The assistant's name, as the config's ``name``."""
    tools: list[str]
    """The names of the tools translated."""
    settings: list[str]
    """The settings translated, as dotted names (``model.temperature``)."""
    left_out: list[str]
    """What the assistant holds that Assay does not translate (kept at the vendor only)."""


__all__ = ["ImportConfigDoc"]
