"""``assay fake-vendors``: the fake VAPI, ElevenLabs, Hamming and OpenAI-compatible servers, by hand.

They are the same servers the tests start. What they do on your cases is yours to say: ``--script FILE``
(a fake-vendor script, :mod:`assay.flows.fake_script`, checked against the bundle it names) scripts the
agent's replies and tool calls, the vendors' evaluations, Hamming's transcripts and our judge's verdicts
per case; ``--bundle FILE`` alone answers each case from its own situation; ``--demo`` plays the demo's
story (the agent checks the ZIP code and offers a referral; the judge and ElevenLabs disagree about it).
The command prints the ``ASSAY_*`` variables that point Assay at them (or writes them to ``--env-file``
for ``source``) and serves until interrupted. ``POST <url>/_fake/faults`` steers each one further
(latency, 429s, 5xx bursts, ...).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer


CONTROL = ("faults", "inventory", "requests")
"""Each fake's steering endpoints, under ``URL/_fake/``."""


def register(app: typer.Typer) -> None:
    app.command("fake-vendors")(fake_vendors)


def fake_vendors(
    port_base: Annotated[int, typer.Option(help="First port; the four fakes take this and the next three (0: free ports).")] = 0,
    env_file: Annotated[Path | None, typer.Option(help="Also write the export lines to this file.")] = None,
    seconds: Annotated[float | None, typer.Option(help="Stop after this many seconds (default: until Ctrl-C).")] = None,
    script: Annotated[Path | None, typer.Option(help="A fake-vendor script (YAML): replies, evaluations, transcripts "
                                                     "and judge verdicts per case of the bundle it names.")] = None,
    bundle: Annotated[Path | None, typer.Option(help="Answer each case of this bundle from its own situation.")] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Play the demo's story (flows/demo/bundle.yaml).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document (the fakes "
                                                         "and the variables), then serve.")] = False,
) -> None:
    """Serve fake VAPI, ElevenLabs, Hamming and OpenAI-compatible APIs on loopback, for trying Assay offline."""
    from assay.fakes.serve import running, settings_env

    from . import cli

    plan = steering_plan(script, bundle, demo)  # a bad script stops here, before anything is served
    with running(port_base=port_base) as fakes:
        if demo:
            from .demo_vendors import steer

            steer(fakes)
        elif plan is not None:
            from .fake_script import steer

            steer(fakes, plan)
        env = settings_env(fakes)
        lines = [f"export {k}='{v}'" for k, v in env.items()]
        if env_file is not None:
            env_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        served = [{"vendor": vendor, "url": fake.url, "control": [f"{fake.url}/_fake/{what}" for what in CONTROL]}
                  for vendor, fake in fakes.items()]
        body = {"vendors": served, "env": env, "env_file": str(env_file) if env_file is not None else None}
        if not cli._emit("assay.fake-vendors", body, as_json):
            for s in served:
                typer.echo(f"# {s['vendor']}: {s['url']}  (control: {s['url']}/_fake/faults, /_fake/inventory, "
                           "/_fake/requests)")
            typer.echo("\n".join(lines))
        try:
            threading.Event().wait(seconds)
        except KeyboardInterrupt:
            pass


def steering_plan(script: Path | None, bundle: Path | None, demo: bool) -> dict | None:
    """Each fake's scripts for ``--script`` or ``--bundle``; None for ``--demo`` or neither."""
    from assay.core.errors import UsageError

    if (script is not None) + (bundle is not None) + demo > 1:
        raise UsageError("give one of --script (it names its bundle), --bundle or --demo")
    if script is not None:
        from .fake_script import load_script, steering

        loaded, team = load_script(script)
        return steering([team], loaded)
    if bundle is not None:
        from assay.core.bundle import read_bundle
        from .fake_script import steering

        return steering(read_bundle(bundle).teams)
    return None
