"""Lease operations on the embedded SQLite catalog: claim + renew + release cycles per second.

Each operation is its own committed transaction, as a runner would issue it.
"""

from __future__ import annotations

import json

from .common import Result, median_seconds, workdir

CYCLES = 2_000


def run() -> list[Result]:
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.workspace import Workspace

    work = workdir("leases")
    (work / "config.json").write_text(json.dumps({"name": "c", "prompt": "p", "variables": {}, "tools": []}))
    bundle = {
        "schema": "assay.bundle/v1",
        "teams": [{
            "id": "bench-team", "name": "Bench",
            "cases": [{"key": "one", "title": "one", "situation": {"caller": "a caller", "wants": "help"}}],
            "suites": [{"key": "s", "name": "s", "target": {"config": "config.json"}, "cases": ["one"]}],
        }],
    }
    (work / "bundle.json").write_text(json.dumps(bundle))
    ws = Workspace(Settings(home=work / "home"), upgrade=True)
    ops.load(ws, str(work / "bundle.json"))
    run_id = ops.start_run(ws, "bench-team/s").run_id
    ledger = ws.ledger

    def cycles() -> None:
        for _ in range(CYCLES):
            lease = ledger.claim(run_id, "bench", 60)
            lease = ledger.renew(lease, 60)
            ledger.release(lease)

    seconds = median_seconds(cycles, repeats=3)
    rate = CYCLES / seconds
    return [
        Result(
            name="leases.sqlite_cycles", value=round(rate), unit="cycles/s", baseline=None, ratio=None,
            target=">= 1000 claim+renew+release cycles/s", met=rate >= 1_000,
            note=f"{CYCLES} cycles, 3 committed transactions each, SQLite WAL, median of 3 runs of {seconds:.2f}s",
        )
    ]
