"""`assay run` of a small suite as a user types it: with the workspace's Prefect server up, and (the
baseline) with a temporary server started by the command itself.

The suite is the demo's config suite (four cases, no vendor); each run is a fresh ``assay`` process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .common import Result, median_seconds, workdir

SUITE = "acme-plumbing/main-line"
RUNS, BASELINE_RUNS = 5, 3
TARGET_SECONDS = 3.0


def run() -> list[Result]:
    from assay.flows.demo import DEMO

    home = workdir("cli") / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_API_URL"))}
    env.update(ASSAY_HOME=str(home), PREFECT_HOME=str(home / "prefect"))

    def assay(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "assay.flows.cli", *args], env=env, check=True, capture_output=True)

    home.mkdir()
    assay("init")
    assay("load", str(Path(DEMO) / "bundle.yaml"))
    baseline = median_seconds(lambda: assay("run", SUITE), BASELINE_RUNS)
    assay("server", "start")
    try:
        value = median_seconds(lambda: assay("run", SUITE), RUNS)
    finally:
        assay("server", "stop")
    return [Result(
        name="cli.run_small", value=round(value, 2), unit="s", baseline=round(baseline, 2),
        ratio=round(baseline / value, 1), target=f"<= {TARGET_SECONDS:g} s with the workspace's server up",
        met=value <= TARGET_SECONDS,
        note=f"`assay run {SUITE}` (4 cases) as a subprocess: median of {RUNS} with `assay server start` up; "
             f"baseline: median of {BASELINE_RUNS} starting a temporary Prefect server each",
    )]
