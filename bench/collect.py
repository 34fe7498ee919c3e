"""Collecting asynchronous runs: 2,000 outstanding Hamming runs on the fake, finishing at random times.

The product path throughout: runs are created with ``start_run``, submitted with ``submit_run`` (what
``execute_run`` does for an asynchronous runner) and collected with ``collect_outstanding`` over an
embedded (SQLite) workspace. The fake Hamming serves from its own
process, so the CPU measured here is Assay's alone. Measured:

- a poll pass over 2,000 runs the vendor is still working on (claim, poll, hand back): wall time and
  CPU per poll, at the configured concurrency, against the same pass at concurrency 1 (the baseline);
- the peak of concurrent requests to the vendor (``VendorClient.peak_in_flight``), which must stay
  within the bound;
- draining: passes back to back until every run is collected, judged and finalised.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .common import Result, workdir

RUNS = 2_000
CONCURRENCY = 16
LATENCY = 0.02
"""Seconds the fake takes to answer each request (a fast vendor API; real ones are slower)."""
FINISH_BETWEEN = (100.0, 130.0)
"""Seconds after its submission each run finishes: after the two poll passes, within a few passes."""


def _serve(urls: Any, stop: Any) -> None:
    from assay.fakes.hamming import FakeHamming

    with FakeHamming(key="bench-key") as fake:
        fake.faults.scripts = {"finish_between": list(FINISH_BETWEEN)}
        fake.faults.latency = LATENCY
        urls.put(fake.url)
        stop.wait()


def _bundle() -> dict[str, Any]:
    cases = [{"key": k, "title": k, "situation": {"caller": f"{k.title()}, a caller", "wants": "help"}} for k in ("one", "two")]
    return {
        "schema": "assay.bundle/v1", "consumers": [{"key": "ci"}],
        "teams": [{"id": "bench-team", "name": "Bench", "cases": cases, "suites": [{
            "key": "voice", "name": "voice", "target": {"config": "config.json"}, "cases": ["one", "two"],
            "assertions": [
                {"key": "greets", "mechanism": "vendor.evaluation", "params": {"vendor_id": "as-greeting", "name": "Greets the caller"},
                 "role": "hamming"},
                {"key": "helps", "mechanism": "transcript.contains", "params": {"text": "look into", "role": "agent"}},
            ],
            "criteria": {"ci": {"required": ["greets", "helps"]}},
        }]}],
    }


def run() -> list[Result]:
    work = workdir("collect")
    ctx = mp.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(urls, stop), daemon=True)
    server.start()
    try:
        return _measure(work, urls.get(timeout=120))
    finally:
        stop.set()
        server.join(30)


def _measure(work, url: str) -> list[Result]:
    from assay.adapters.runners.hamming import HammingRunner
    from assay.core.settings import Settings
    from assay.flows import operations as ops
    from assay.flows.collect import collect_outstanding, submit_run
    from assay.flows.workspace import Workspace
    from assay.storage.catalog.runs import job_for_run

    env = {"ASSAY_HAMMING_BASE_URL": url, "ASSAY_HAMMING_API_KEY": "bench-key", "ASSAY_HAMMING_AGENT_ID": "fake-agent",
           "ASSAY_HAMMING_PHONE_NUMBERS": '["+15555550100"]', "ASSAY_HAMMING_TEST_CASE_ID": "tc-template"}
    os.environ.update(env)
    (work / "config.json").write_text(json.dumps({"name": "voice", "prompt": "Deployed."}))
    (work / "bundle.json").write_text(json.dumps(_bundle()))
    ws = Workspace(Settings(home=work / "home", collect_concurrency=CONCURRENCY), upgrade=True)
    ops.load(ws, str(work / "bundle.json"))

    submitter = HammingRunner()

    def submit(_: int) -> None:  # what execute_run does for an asynchronous runner, with one shared client
        run_id = ops.start_run(ws, "bench-team/voice", "hamming").run_id
        assert submit_run(ws, job_for_run(ws.engine, run_id), submitter, owner="bench").error is None

    began = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(submit, range(RUNS)))
    submit_s = time.perf_counter() - began
    submitter.close()

    def poll_pass(concurrency: int) -> tuple[float, float, int, Any]:
        runner = HammingRunner()
        wall, cpu = time.perf_counter(), time.process_time()
        result = collect_outstanding(ws, concurrency, runners={"hamming": runner})
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak = runner.client.peak_in_flight
        runner.close()
        return wall, cpu, peak, result

    wall, cpu, peak, first = poll_pass(CONCURRENCY)
    base_wall, base_cpu, _, base = poll_pass(1)
    polls = len(first.waiting) + len(first.collected)
    base_polls = len(base.waiting) + len(base.collected)

    drain_began, passes, peaks = time.perf_counter(), 0, [peak]
    finalised = len(first.finalised) + len(base.finalised)
    while finalised < RUNS and time.perf_counter() - drain_began < 600:
        _, _, p, result = poll_pass(CONCURRENCY)
        peaks.append(p)
        passes += 1
        finalised += len(result.finalised)
        if not result.finalised:
            time.sleep(1.0)  # a benchmark pacing its passes, as a schedule would
    drain_s = time.perf_counter() - drain_began
    ws.close()

    rate, base_rate = polls / wall, base_polls / base_wall
    cpu_ms = 1000 * cpu / polls
    note = (f"{RUNS} runs of 2 cases submitted in {submit_s:.0f}s (submit_run, 8 threads); poll pass: {polls} polls "
            f"(claim, GET status, hand back) in {wall:.1f}s at concurrency {CONCURRENCY}; baseline the same pass "
            f"at concurrency 1 ({base_polls} polls in {base_wall:.1f}s); fake Hamming in its own process, "
            f"answering in {1000 * LATENCY:.0f} ms")
    return [
        Result("collect.poll_rate", round(rate), "polls/s", round(base_rate), round(rate / base_rate, 1),
               ">= 100 polls/s over 2,000 waiting runs", rate >= 100, note),
        Result("collect.cpu_per_poll", round(cpu_ms, 2), "ms", round(1000 * base_cpu / base_polls, 2), None,
               "<= 10 ms of Assay's CPU per poll", cpu_ms <= 10, "process CPU of the poll pass / polls"),
        Result("collect.peak_in_flight", max(peaks), "requests", None, None,
               f"<= the bound ({CONCURRENCY})", max(peaks) <= CONCURRENCY,
               f"VendorClient.peak_in_flight over {passes + 2} passes at concurrency {CONCURRENCY}"),
        Result("collect.drain_seconds", round(drain_s, 1), "s", None, None,
               "every run collected, judged and finalised", finalised == RUNS,
               f"{finalised}/{RUNS} finalised in {passes} passes after the poll passes; runs finish "
               f"{FINISH_BETWEEN[0]:.0f}-{FINISH_BETWEEN[1]:.0f}s after submission"),
    ]


if __name__ == "__main__":
    for r in run():
        print(r)
