"""Our judge through the product path: ``judge_runs`` over a workspace of recorded calls with rubric assertions.

- ``judge.concurrency``: the same rubric pairs judged at ``judge_concurrency`` 16 and at 1 (serial),
  against the fake OpenAI-compatible server answering after 50 ms. Each timing is a forced judging
  pass of the run under a judge model name of its own, so every rubric pair misses the cache and is
  sent; deterministic assertions are evaluated too, as in any pass. Target: >= 10x the serial rate.
- ``judge.cache``: a run of 5,000 recorded calls x 2 rubric assertions (10,000 pairs) judged once, then
  re-judged with ``force`` (every pair fresh, so every rubric pair goes to the judge cache): the
  re-judge must send 0 requests; its wall time is reported (median of 3).
"""

from __future__ import annotations

import json

from .common import Result, median_seconds, workdir
from .ingest import CASES, write_call_set

KEY = "bench-judge-key"
RUBRICS = [
    ("answers_question", "The agent answers what the caller actually asked, with specifics, without deflecting."),
    ("stays_in_role", "The agent speaks only as the business's receptionist and never claims to be anyone else."),
]


def _workspace(name: str, calls: int, url: str, model: str, concurrency: int):
    """A workspace with one suite of ``calls`` recorded calls and two rubric assertions, and its ingested run."""
    from assay.flows import operations as ops

    work = workdir(name)
    write_call_set(work / "calls.jsonl", calls)
    bundle = {
        "schema": "assay.bundle/v1",
        "teams": [{
            "id": "bench-team", "name": "Bench",
            "cases": [{"key": k, "title": k, "situation": {"caller": "a caller", "wants": "help"}} for k in CASES],
            "suites": [{
                "key": "calls", "name": "calls", "target": {"call_set": "calls.jsonl"}, "cases": CASES,
                "assertions": [{"key": k, "mechanism": "rubric", "params": {"rubric": r}} for k, r in RUBRICS]
                + [{"key": "mentions_area", "mechanism": "transcript.contains", "params": {"text": "area"}}],
            }],
        }],
    }
    (work / "bundle.json").write_text(json.dumps(bundle))
    ws = _with_judge(work / "home", url, model, concurrency)
    ops.load(ws, str(work / "bundle.json"))
    run_id = ops.start_run(ws, "bench-team/calls").run_id
    result = ops.execute_run(ws, run_id)
    assert result.case_runs == calls and result.error is None, result
    return work / "home", run_id


def _with_judge(home, url: str, model: str, concurrency: int):
    from assay.core.settings import Settings
    from assay.flows.workspace import Workspace

    return Workspace(Settings(home=home, judge_base_url=url, judge_model=model, judge_api_key=KEY,
                              judge_concurrency=concurrency), upgrade=True)


def _timed_pass(home, url: str, model: str, concurrency: int, run_id: str) -> tuple[float, dict]:
    import time

    from assay.flows.judging import judge_runs

    ws = _with_judge(home, url, model, concurrency)
    start = time.perf_counter()
    judged = judge_runs(ws, [run_id], trigger="rejudge", force=True)
    seconds = time.perf_counter() - start
    ws.close()
    return seconds, judged


def concurrency(pairs: int = 400, latency: float = 0.05) -> Result:
    from assay.fakes.openai import FakeOpenAI

    with FakeOpenAI(key=KEY) as fake:
        url = fake.url + "/v1"
        home, run_id = _workspace("judge-concurrency", pairs // len(RUBRICS), url, "warm-up", 16)
        fake.faults.latency = latency
        serial, s = _timed_pass(home, url, "bench-judge-serial", 1, run_id)
        parallel, p = _timed_pass(home, url, "bench-judge-c16", 16, run_id)
    assert s["judge_asked"] == p["judge_asked"] == pairs and s["judge_cached"] == p["judge_cached"] == 0, (s, p)
    ratio = serial / parallel
    return Result(
        name="judge.concurrency", value=round(pairs / parallel, 1), unit="rubric pairs/s", baseline=round(pairs / serial, 1),
        ratio=round(ratio, 1), target=">= 10x serial at judge_concurrency 16", met=ratio >= 10,
        note=f"{pairs} rubric pairs (distinct transcripts), fake judge answering after {latency * 1000:.0f} ms; "
             f"forced judge_runs pass: {parallel:.2f}s at 16 ({p['judge_calls']} requests) vs {serial:.2f}s serial "
             f"({s['judge_calls']} requests)",
    )


def cache(calls: int = 5_000) -> Result:
    from assay.fakes.openai import FakeOpenAI
    from assay.flows.judging import judge_runs

    with FakeOpenAI(key=KEY) as fake:
        url = fake.url + "/v1"
        home, run_id = _workspace("judge-cache", calls, url, "bench-judge", 16)
        first, judged = _timed_pass(home, url, "bench-judge", 16, run_id)
        pairs = judged["judge_asked"]
        before = len(fake.requests)
        again: list[dict] = []

        def rejudge() -> None:
            ws = _with_judge(home, url, "bench-judge", 16)
            again.append(judge_runs(ws, [run_id], trigger="rejudge", force=True))
            ws.close()

        seconds = median_seconds(rejudge, repeats=3)
        sent = len(fake.requests) - before
    cached = {j["judge_cached"] for j in again}
    return Result(
        name="judge.cache", value=round(seconds, 2), unit="s", baseline=round(first, 2), ratio=None,
        target="a re-judge of 10,000 unchanged rubric pairs sends 0 requests", met=sent == 0 and cached == {pairs},
        note=f"{pairs} rubric pairs + {calls} transcript assertions, forced judge_runs pass, median of 3: "
             f"{sent} requests sent, {cached.pop() if len(cached) == 1 else cached} served from the judge cache; "
             f"the first pass (baseline) sent {judged['judge_calls']} requests in {first:.1f}s",
    )


def run() -> list[Result]:
    return [concurrency(), cache()]
