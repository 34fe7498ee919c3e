"""Memory of a suite's re-judge: the peak RSS of ``assay rejudge --suite ... --force`` over 1, 4 and 12 runs.

The suite replays a call set of 200,000 recorded calls (:func:`.scale.write_call_set`) with 4 transcript
and tool assertions, so 12 runs hold about 10 M assertion results. The runs are made through the product
(``ops.run_to_final``) once and kept under ``bench/.work/rejudge-memory``: a copy of the workspace is kept
as it stands after the 1st, the 4th and the 12th run (delete the folder to rebuild).

Each measurement copies one of those workspaces afresh and runs the command a user types, as a process,
on the default task runner (against the workspace's own Prefect server, started once). The value is
the high-water mark of its resident memory (the largest process of its tree, from the kernel's
accounting of the finished process, ``getrusage(RUSAGE_CHILDREN)`` in a wrapper process of its own); the
note adds the peak of the whole tree's sum, sampled. Memory must stay flat as runs are added (the 12-run
peak at most 1.2 times the 1-run peak) and under 4 GB.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from .common import WORK, Result
from .judging import ASSERTIONS
from .scale import _assay, _env, bundle, write_call_set

CALLS = 200_000
RUNS = (1, 4, 12)
SUITE = "scale/calls"
CHOSEN = ASSERTIONS[:4]
LIMIT_GB = 4.0
FLAT = 1.2
WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)
"""Runs the command and prints its tree's largest resident set (KiB), as the kernel counted it."""


def _folder(calls: int) -> Path:
    return WORK / "rejudge-memory" / f"{calls}"


def build(calls: int = CALLS, sizes: tuple[int, ...] = RUNS) -> Path:
    """The workspaces of ``sizes`` runs of a ``calls``-call suite (built when missing): ``<folder>/runs-N``."""
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import Workspace

    folder = _folder(calls)
    if (folder / "built.json").exists():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write_call_set(folder / "calls.jsonl", calls)
    (folder / "bundle.yaml").write_text(yaml.safe_dump(bundle(CHOSEN), sort_keys=False))
    started = time.perf_counter()
    home = folder / "ws"
    ws = Workspace(Settings(home=home), upgrade=True)
    try:
        ops.load(ws, str(folder / "bundle.yaml"))
        for n in range(1, max(sizes) + 1):
            run = ops.run_to_final(ws, SUITE)
            assert run.status == "completed", run
            if n in sizes:
                shutil.copytree(home, folder / f"runs-{n}", ignore=shutil.ignore_patterns("prefect"))
                print(f"  {n} run(s) of {calls:,} calls built ({time.perf_counter() - started:.0f}s)", flush=True)
    finally:
        ws.close()
    shutil.rmtree(home)
    (folder / "built.json").write_text(json.dumps({"calls": calls, "runs": list(sizes)}))
    return folder


def peak(env: dict[str, str], *args: str) -> tuple[int, int]:
    """Run ``assay ARGS`` in a wrapper process; (its largest process's peak RSS, the tree's sampled peak sum), bytes."""
    import psutil

    command = [sys.executable, "-c", WRAPPER, sys.executable, "-m", "assay.flows.cli", *args]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wrapper, summed = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            tree = [wrapper, *wrapper.children(recursive=True)][1:]  # the command and its children, not the wrapper
            summed = max(summed, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.1)
    out, err = proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    return int(out.strip().splitlines()[-1]) * 1024, summed


def measure(calls: int = CALLS, sizes: tuple[int, ...] = RUNS) -> Result:
    folder = build(calls, sizes)
    base = folder / f"runs-{sizes[0]}"
    server = _assay(_env(base), "server", "start")["server"]["api_url"]
    peaks: dict[int, tuple[int, int]] = {}
    try:
        for n in sizes:
            home = folder / "arm"
            if home.exists():
                shutil.rmtree(home)
            shutil.copytree(folder / f"runs-{n}", home)
            peaks[n] = peak(_env(home, PREFECT_API_URL=server), "rejudge", "--suite", SUITE, "--force")
            print(f"  {n} run(s): peak {peaks[n][0] / 2**30:.2f} GiB (tree sum {peaks[n][1] / 2**30:.2f} GiB)",
                  flush=True)
            shutil.rmtree(home)
    finally:
        _assay(_env(base), "server", "stop")
    gb = {n: round(p[0] / 2**30, 2) for n, p in peaks.items()}
    ratio = round(peaks[sizes[-1]][0] / peaks[sizes[0]][0], 2)
    met = ratio <= FLAT and max(gb.values()) < LIMIT_GB
    atoms = sizes[-1] * calls * len(CHOSEN)
    return Result(
        name="scale.rejudge_memory", value=gb[sizes[-1]], unit="GiB peak RSS at the largest suite", baseline=gb[sizes[0]],
        ratio=ratio, target=f"<= {FLAT}x from {sizes[0]} to {sizes[-1]} runs and < {LIMIT_GB} GiB", met=met,
        note=f"assay rejudge --suite --force over {', '.join(map(str, sizes))} run(s) of a {calls:,}-call suite with "
             f"{len(CHOSEN)} transcript/tool assertions ({atoms:,} results at {sizes[-1]}), default task runner, as a "
             f"process: peak RSS of its largest process {gb} GiB; sampled peak of the process tree's sum "
             f"{ {n: round(p[1] / 2**30, 2) for n, p in peaks.items()} } GiB; ratio {sizes[-1]}/{sizes[0]} runs: {ratio}",
    )


def run() -> list[Result]:
    return [measure()]
