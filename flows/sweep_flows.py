"""The nightly sweep: re-run the suites that carry a tag, then re-judge their earlier runs.

One flow, :func:`nightly_sweep`, wiring flows that exist already: each tagged suite runs as a
``run-suite`` subflow on each runner it declares (:func:`.operations.runners_for`; a suite that declares
none runs on its target's default runner only when that runner evaluates all its assertions, else it is
refused, naming the fix, and no run starts), and each suite's earlier finalised runs (chosen as ``assay rejudge --suite``
chooses them, before tonight's run) go to a ``rejudge`` subflow that evaluates only the assertion
versions their outcomes have not met yet (``new_versions_only``), so a night with no new assertions
writes no outcome. A suite whose run fails is recorded as failed, one refused as refused, and the others go on. Importable
from :mod:`assay.flows.orchestration` by its name; a deployment schedules it.
"""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from assay.storage.catalog.listing import suites_tagged

from .flow_context import assay_flow, flow_workspace, to_server
from .notify import post_sweep
from .selection import select_runs

ARTIFACT = "nightly-sweep"
"""The key of the artifact each sweep publishes: a row per suite, or a note that no suite carries the tag."""

REJUDGE_COUNTS = ("runs", "case_runs", "outcomes", "evaluated", "carried")
"""What a sweep reports of each suite's re-judge (the ``rejudge`` flow's counts)."""


def failure(state: Any) -> str | None:
    """Why a subflow's final state is not completed (its exception, or its state's message); None if it is."""
    if state.is_completed():
        return None
    raised = state.result(raise_on_failure=False)
    return f"{type(raised).__name__}: {raised}" if isinstance(raised, BaseException) else state.message or state.name


def suite_entry(suite: str, state: Any, runner: str | None = None) -> dict[str, Any]:
    """What one suite's ``run-suite`` subflow on ``runner`` came to: its run, status and verdicts; or why it
    failed."""
    if (why := failure(state)) is not None:
        return {"suite": suite, "runner": runner, "run_id": None, "status": "failed", "reason": why, "verdicts": []}
    result = state.result()
    run = result["run"]
    verdicts = [{"consumer": v["consumer"], "verdict": v["verdict"], "reason": v["reason"]} for v in result["verdicts"]]
    return {"suite": suite, "runner": run["runner"], "run_id": run["run_id"], "status": run["status"],
            "reason": run.get("status_reason"), "verdicts": verdicts}


def refused_entry(suite: str, error: Exception) -> dict[str, Any]:
    """A suite the sweep would not start: no runner it may run on (:func:`.operations.runners_for`), and why."""
    return {"suite": suite, "runner": None, "run_id": None, "status": "refused", "reason": str(error), "verdicts": []}


def rejudge_counts(state: Any | None) -> dict[str, Any]:
    """The figures a sweep keeps of a ``rejudge`` subflow (zeros when there was nothing to re-judge), and
    why it failed (``error``), if it did."""
    why = None if state is None else failure(state)
    counts = state.result() if state is not None and why is None else {}
    return {**{key: counts.get(key) or 0 for key in REJUDGE_COUNTS}, "error": why}


def table_rows(suites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The artifact's rows: one per suite and runner, verdicts as ``consumer: verdict``; a suite's re-judge
    on its first row (``-`` on the others)."""
    return [
        {"suite": s["suite"], "runner": s["runner"] or "-", "run_id": s["run_id"] or "-", "status": s["status"],
         "verdicts": ", ".join(f"{v['consumer']}: {v['verdict']}" for v in s["verdicts"]) or s["reason"] or "-",
         "rejudged_runs": s["rejudged"]["runs"] if s["rejudged"] else "-",
         "new_outcomes": "-" if not s["rejudged"] else s["rejudged"]["outcomes"] if s["rejudged"]["error"] is None
         else s["rejudged"]["error"]}
        for s in suites
    ]  # fmt: skip


@assay_flow(name="nightly-sweep")
def nightly_sweep(tag: str = "nightly") -> dict[str, Any]:
    """Run every suite tagged ``tag`` on each of its runners (a ``run-suite`` subflow each; one failing or
    refused does not stop the others), then re-judge each suite's earlier finalised runs for the assertion
    versions they have not met (a ``rejudge`` subflow each). Returns per suite and runner its run, status and
    verdicts, and on a suite's first entry its re-judge counts (``rejudged``; None on the others); publishes
    them as the table artifact ``nightly-sweep``. No suite tagged: nothing runs, and says so."""
    from assay.core.errors import AssayError

    from . import operations as ops
    from .orchestration import rejudge, run_suite  # here: orchestration re-exports this flow
    from .task_runners import wide

    rejudge = wide(rejudge)  # mapped over the configured task runner (Dask, when the settings name one)

    with flow_workspace() as ws:
        tagged = suites_tagged(ws.engine, tag)
        if not tagged:
            note = f"no suite is tagged {tag!r}: nothing to run (tag suites with `tags: [{tag}]` in a bundle)"
            to_server(lambda: create_markdown_artifact(note, key=ARTIFACT,
                                                       description=f"nightly sweep of {tag!r}: nothing to run"))
            return {"tag": tag, "suites": [], "note": note}
        earlier = {suite: select_runs(ws, suite=suite) for suite in tagged}  # before tonight's runs exist
        suites: list[dict[str, Any]] = []
        for suite in tagged:
            try:
                runners = ops.runners_for(ws, suite, scheduled=True)
            except AssayError as refused:
                suites.append(refused_entry(suite, refused))
                continue
            suites += [suite_entry(suite, run_suite(suite, runner, return_state=True), runner) for runner in runners]
        for entry in suites:
            first = next(s for s in suites if s["suite"] == entry["suite"])
            if entry is not first:
                entry["rejudged"] = None  # a suite's earlier runs are re-judged once, on its first entry
                continue
            runs = earlier[entry["suite"]]
            state = rejudge(runs, new_versions_only=True, return_state=True) if runs else None
            entry["rejudged"] = rejudge_counts(state)
        ran = sum(s["status"] not in ("failed", "refused") for s in suites)
        to_server(lambda: create_table_artifact(
            table_rows(suites), key=ARTIFACT, description=f"nightly sweep of {tag!r}: {ran} of {len(suites)} run(s) started"))
        post_sweep(ws.settings, tag, suites)  # what failed, to the notification webhook (when one is set)
        return {"tag": tag, "suites": suites, "note": None}


__all__ = ["ARTIFACT", "nightly_sweep"]
