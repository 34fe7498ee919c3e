"""``assay fake-vendors``: the fake VAPI, ElevenLabs, Hamming and OpenAI-compatible servers, by hand.

They are the same servers the tests start, scripted as in ``assay demo`` (the agent checks the ZIP code
and offers a referral; the judge and ElevenLabs disagree about it). The command prints the ``ASSAY_*``
variables that point Assay at them (or writes them to ``--env-file`` for ``source``) and serves until
interrupted. ``POST <url>/_fake/faults`` steers each one further (latency, 429s, 5xx bursts, ...).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("fake-vendors")(fake_vendors)


def fake_vendors(
    port_base: Annotated[int, typer.Option(help="First port; the four fakes take this and the next three (0: free ports).")] = 0,
    env_file: Annotated[Path | None, typer.Option(help="Also write the export lines to this file.")] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds (default: until Ctrl-C).")] = None,
) -> None:
    """Serve fake VAPI, ElevenLabs, Hamming and OpenAI-compatible APIs on loopback, for trying Assay offline."""
    from assay.fakes.serve import running, settings_env

    from .demo_vendors import steer

    with running(port_base=port_base) as fakes:
        steer(fakes)
        lines = [f"export {k}='{v}'" for k, v in settings_env(fakes).items()]
        for vendor, fake in fakes.items():
            typer.echo(f"# {vendor}: {fake.url}  (control: {fake.url}/_fake/faults, /_fake/inventory)")
        typer.echo("\n".join(lines))
        if env_file is not None:
            env_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            threading.Event().wait(seconds)
        except KeyboardInterrupt:
            pass
