"""The run-suite flow's overhead: 1,000 case runs through ``orchestration.run_suite`` against the plain functions.

A generated suite: one team, 1,000 cases, a call set of 1,000 recorded calls (one per case, about 2 KB
of transcript each; the ``recorded`` runner), four deterministic assertions and a criteria for one
consumer. Both arms run in this process against one embedded workspace (SQLite, local lake):

- A (baseline): :func:`assay.flows.operations.run_to_final` on a workspace opened once: create,
  execute, judge, finalise as plain calls;
- B: the ``run_suite`` flow, reporting to the workspace's own Prefect server (``assay server start`` in
  the bench's ``ASSAY_HOME``, stopped at the end): the flow and task runs, their states and the
  verdicts artifact go to that server, and the flow opens its own workspace;
- E: a flow that does nothing (no task, no artifact), called the same way: what any flow run costs
  against this server. ``(A + E) / A`` is the ratio a flow of A's work would show with nothing but
  Prefect's fixed cost, so ``flows.fixed_cost`` says how much of the 1.2x target is left for the rest.

Then ``flows.back_to_back``: ten flows of four tasks that do nothing, each started as the one before
ends (as the nightly sweep runs its suites), their median wall time and how many of their requests
reached the client refused with 503 ("database is locked": the server's SQLite database was busy
recording the previous flow's task runs). Prefect's client retries a refusal 2 s later; the
workspace's server retries it itself first (:mod:`assay.flows.server_app`).

Each arm runs once untimed (imports, the flow's first registration), then 25 times, the arms
alternating (A, E, B, then B with Prefect's heartbeat thread); the value is median B / median A. The
process collects garbage as the ``assay`` program does (:data:`assay.flows.cli.COLLECT_EVERY`), both arms
alike: at Python's own thresholds the collector took about 40 ms of each plain lap and 65 ms of each
flow lap, most of it passes over the objects Prefect, Polars and SQLAlchemy created when imported.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .common import Result, workdir
from .ingest import write_call_set

CASES = 1_000
REPEATS = 25
BACK_TO_BACK = 10
TARGET = 1.2
TEAM, SUITE, CONSUMER = "bench-flows", "calls", "ci"
ASSERTIONS = [
    {"key": "mentions_area", "mechanism": "transcript.contains", "params": {"text": "service area", "role": "agent"}},
    {"key": "checks_area", "mechanism": "tool.called", "params": {"tool": "check_service_area"}},
    {"key": "stays_short", "mechanism": "transcript.max_turns", "params": {"max": 12}},
    {"key": "guardrail", "mechanism": "vendor.evaluation", "params": {"name": "handles_out_of_area"}},
]


def _bundle(work: Path) -> Path:
    """The generated bundle and its call set, written under ``work``."""
    cases = [f"case-{i:04d}" for i in range(CASES)]
    write_call_set(work / "calls.jsonl", CASES, cases=cases)
    bundle = {
        "schema": "assay.bundle/v1",
        "consumers": [{"key": CONSUMER, "description": "The bench's gate."}],
        "teams": [{
            "id": TEAM, "name": "Bench flows",
            "cases": [{"key": k, "title": k, "situation": {"caller": "a caller", "wants": "help"}} for k in cases],
            "suites": [{
                "key": SUITE, "name": SUITE, "target": {"call_set": "calls.jsonl"}, "cases": cases,
                "assertions": ASSERTIONS,
                "criteria": {CONSUMER: {"required": ["checks_area", "stays_short"],
                                        "threshold": [{"keys": ["mentions_area", "guardrail"], "min": 0.5}]}},
            }],
        }],
    }
    path = work / "bundle.json"
    path.write_text(json.dumps(bundle))
    return path


def run() -> list[Result]:
    work = workdir("flows")
    home = work / "home"
    bundle = _bundle(work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PREFECT_"))}
    env["ASSAY_HOME"] = str(home)

    def assay(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "assay.flows.cli", *args], env=env, check=True, capture_output=True)

    home.mkdir()
    assay("init")
    assay("load", str(bundle))
    assay("server", "start")
    from assay.flows.cli import COLLECT_EVERY

    saved, collector = dict(os.environ), gc.get_threshold()
    gc.set_threshold(*COLLECT_EVERY)  # both arms in a process collecting garbage as the `assay` program does
    try:
        return _measure(home)
    finally:
        gc.set_threshold(*collector)
        os.environ.clear()
        os.environ.update(saved)
        assay("server", "stop")


def _measure(home: Path) -> list[Result]:
    from assay.core.settings import Settings
    from assay.flows.server import api_url_if_up
    from assay.flows.workspace import open_workspace, use_prefect_home

    for key in [k for k in os.environ if k.startswith(("ASSAY_", "PREFECT_API_URL"))]:
        del os.environ[key]
    os.environ["ASSAY_HOME"] = str(home)  # the flow opens its workspace from the environment
    settings = Settings()
    api_url = api_url_if_up(settings)
    assert api_url, f"the workspace's Prefect server in {home} is not answering"
    use_prefect_home(settings)  # before Prefect is imported: its home, telemetry off, PREFECT_API_URL

    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):  # even if Prefect was imported earlier
        from assay.flows import operations as ops
        from assay.flows.flow_context import assay_flow
        from assay.flows.orchestration import attend, run_suite

        suite = f"{TEAM}/{SUITE}"

        def plain() -> dict[str, Any]:  # one workspace per job, as a flow run opens one: not Prefect's cost
            ws = open_workspace(settings)
            try:
                return ops.run_to_final(ws, suite).to_dict()
            finally:
                ws.close()

        def flow() -> dict[str, Any]:  # as `assay run` calls it
            return attend(run_suite, suite)["run"]

        def heartbeat() -> dict[str, Any]:  # as a worker's flow-run process runs it: Prefect's heartbeat on
            return run_suite(suite)["run"]

        @assay_flow(name="bench-empty")
        def nothing() -> dict[str, Any]:
            return {"status": "completed", "case_runs": CASES}  # what _check expects of every arm

        def empty() -> dict[str, Any]:  # the fixed cost of a flow run: its requests and engine, no work
            return attend(nothing)

        times: dict[str, list[float]] = {"plain": [], "flow": [], "heartbeat": [], "empty": []}
        arms: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            ("plain", plain), ("empty", empty), ("flow", flow), ("heartbeat", heartbeat)]
        for _, arm in arms:  # warm-up, untimed
            _check(arm())
        for _ in range(REPEATS):
            for name, arm in arms:
                began = time.perf_counter()
                done = arm()
                times[name].append(time.perf_counter() - began)
                _check(done)
        laps_back_to_back, refused = back_to_back()
    a, b, h, e = (statistics.median(times[arm]) for arm in ("plain", "flow", "heartbeat", "empty"))
    c = statistics.median(laps_back_to_back)
    laps = "; ".join(f"{name} " + ", ".join(f"{t:.2f}" for t in laps) for name, laps in times.items())
    what = (f"one process, one suite of {CASES:,} cases and {CASES:,} recorded calls x {len(ASSERTIONS)} deterministic "
            f"assertions, embedded workspace, the workspace's Prefect server up; medians of {REPEATS}, arms "
            f"alternating, each warmed up once untimed: plain A {a:.2f}s")
    return [
        Result(name="flows.overhead", value=round(b / a, 2), unit="x", baseline=round(a, 3), ratio=None,
               target=f"<= {TARGET:g}x the plain functions", met=b / a <= TARGET,
               note=f"run-suite flow as a command calls it (orchestration.attend: no heartbeat thread) vs "
                    f"operations.run_to_final, {what}, flow B {b:.2f}s (B - A = {b - a:.2f}s); seconds: {laps}"),
        Result(name="flows.overhead_heartbeat", value=round(h / a, 2), unit="x", baseline=round(a, 3), ratio=None,
               target=f"<= {TARGET:g}x the plain functions", met=h / a <= TARGET,
               note=f"the same flow with Prefect's heartbeat thread, as a worker's flow-run process runs it: "
                    f"{what}, flow {h:.2f}s (the thread sleeps in whole seconds and is joined at the end)"),
        Result(name="flows.fixed_cost", value=round(e, 3), unit="s", baseline=round(a, 3), ratio=round((a + e) / a, 2),
               target=f"reported: an empty flow run; (A + it) / A is the ratio with nothing but Prefect's fixed "
                      f"cost, so flows.overhead's {TARGET:g}x leaves the rest of a flow only the difference",
               met=(a + e) / a <= TARGET,
               note=f"a flow with no task and no artifact, called as `assay run` calls run-suite (attend), against "
                    f"the same server, in the same alternation: {e * 1000:.0f} ms (its five requests: create the "
                    f"flow and the flow run, set Running, read it back, set Completed); {what}"),
        Result(name="flows.back_to_back", value=round(c, 3), unit="s", baseline=round(e, 3), ratio=round(c / e, 2),
               target="no request refused: flow runs of four tasks started back to back on the workspace's server "
                      "(SQLite), against an empty flow run (E); each 503 that reaches Prefect's client costs 2 s",
               met=refused == 0,
               note=f"{BACK_TO_BACK} flows of four tasks that return at once, each called (attend) as the one before "
                    f"ends: median {c:.2f}s, {refused} request(s) refused with 503 to the client; seconds: "
                    + ", ".join(f"{t:.2f}" for t in laps_back_to_back)),
    ]


def back_to_back(flows: int = BACK_TO_BACK) -> tuple[list[float], int]:
    """``flows`` flows of four no-op tasks against the Prefect API in force, each started as the one
    before ends: their wall times, and how many requests reached Prefect's client refused with a
    retryable 503 (the client logs each one before it waits). A flow that fails raises.

    Also the harness of ``tests/flows/test_server.py``'s back-to-back test."""
    import logging

    from prefect import task

    from assay.flows.flow_context import assay_flow
    from assay.flows.orchestration import attend

    @task
    def step(i: int) -> int:
        return i

    @assay_flow(name="bench-four-tasks")
    def four() -> None:
        for i in range(4):
            step(i)

    class Refusals(logging.Handler):
        count = 0

        def emit(self, record: logging.LogRecord) -> None:
            self.count += "retryable status code 503" in record.getMessage()

    client_log, refusals = logging.getLogger("prefect.client"), Refusals(logging.DEBUG)
    level = client_log.level
    client_log.addHandler(refusals)
    client_log.setLevel(logging.DEBUG)
    try:
        attend(four)  # warm-up: the flow's first registration
        refusals.count = 0
        times = []
        for _ in range(flows):
            began = time.perf_counter()
            attend(four)
            times.append(time.perf_counter() - began)
    finally:
        client_log.removeHandler(refusals)
        client_log.setLevel(level)
    return times, refusals.count


def _check(run: dict[str, Any]) -> None:
    assert run["status"] == "completed" and run["case_runs"] == CASES, run


if __name__ == "__main__":
    for r in run():
        print(r)
