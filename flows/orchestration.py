"""Prefect flows: thin wiring over the plain functions (:mod:`assay.flows.operations`, judging,
re-scoring, collecting). Every job the command line does is one of these flows.

Each flow run opens one workspace, which its tasks share (:mod:`.flow_context`). Only tasks that talk
to a store retry, and only on errors whose class says retrying can help (``AssayError.transient``) or
on a database that is momentarily unavailable. The runner's own execution is not retried: a report is
idempotent, but a vendor call is not ours to repeat blindly.

The flows: :func:`run_suite`, :func:`judge`, :func:`rejudge`, :func:`rescore_materialise` here;
:func:`reap`, :func:`collect`, :func:`compact`, :func:`vacuum` and :func:`migrate_lake` in
:mod:`.upkeep_flows`; :func:`projections` in :mod:`.projection_flows`; :func:`nightly_sweep` in
:mod:`.sweep_flows`; :func:`legacy_import` in :mod:`.legacy_flows`. All are importable from here;
:mod:`.deployments` declares them as deployments.
The command line calls them in its own process with :func:`attend` (or :func:`watched`).
"""

from __future__ import annotations

import importlib
import re
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from prefect import unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from assay.storage.catalog.runs import get_run

from . import notify
from . import operations as ops
from .flow_context import (WatchedTransport, assay_flow, assay_task, emit, flow_workspace, io_task, listen, listening,
                           outliving_server, progress_of, started, summed, to_server, workspace)
from .workspace import bind_temporary_server

bind_temporary_server()  # Prefect's temporary server dies with the command, even a SIGKILLed one

__all__ = ["attend", "collect", "compact", "judge", "legacy_import", "listen", "migrate_lake", "nightly_sweep",
           "projections", "reap", "rejudge", "rescore_materialise", "run_suite", "vacuum"]

ELSEWHERE = {"collect": ".upkeep_flows", "compact": ".upkeep_flows", "migrate_lake": ".upkeep_flows",
             "reap": ".upkeep_flows", "vacuum": ".upkeep_flows", "legacy_import": ".legacy_flows",
             "projections": ".projection_flows", "nightly_sweep": ".sweep_flows"}
"""The flows kept in modules of their own, by name: imported from here, but only when first asked for,
so a command that runs one flow does not declare the others (Prefect builds each flow's parameter schema
as it is declared, about 10 ms a flow)."""


def __getattr__(name: str) -> Any:
    if name in ELSEWHERE:
        return getattr(importlib.import_module(ELSEWHERE[name], __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


VERDICT_COLUMNS = ("run_id", "consumer", "criteria_version", "verdict", "reason", "counted", "excluded", "case_runs")
"""The columns of a published verdict table."""


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key from ``parts``: lower case, only a-z, 0-9 and dashes."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", "-".join(parts).lower())).strip("-")


def publish_verdicts(key: str, verdicts: list[dict[str, Any]], description: str) -> None:
    """Publish consumers' verdicts as a table artifact of the flow run (one row per run and consumer);
    with none, a note saying so under the same key."""
    if not verdicts:
        to_server(lambda: create_markdown_artifact(description, key=key, description=description))
        return
    rows = [{c: v.get(c) for c in VERDICT_COLUMNS} for v in verdicts]
    to_server(lambda: create_table_artifact(rows, key=key, description=description))


@io_task
def create_run_task(suite: str, runner: str | None, deadline_minutes: float | None, request_id: str,
                    repeat: int | None = None, budget: int | None = None) -> str:
    """Create the run once: a retry (the first attempt's commit may have landed) returns the same run."""
    deadline = timedelta(minutes=deadline_minutes) if deadline_minutes else None
    return ops.start_run(workspace(), suite, runner, deadline, request_id=request_id, repeat=repeat,
                         budget=budget).run_id


def _request_id() -> str:
    """One request id per flow run, fixed before the creating task so its retries share it."""
    from prefect.runtime import flow_run

    from assay.core.ids import new_id

    return f"run-suite:{flow_run.get_id() or new_id()}"


@assay_task
def execute_task(run_id: str, runner_options: dict[str, Any] | None) -> dict[str, Any]:
    ws = workspace()
    result = ops.execute_run(ws, run_id, runner_options, on_report=emit)
    return {"reports": result.reports, "case_runs": result.case_runs, "evaluations": result.evaluations,
            "duplicates": result.duplicates, "error": result.error,
            "awaiting_vendor": get_run(ws.engine, run_id).awaiting_vendor}


@assay_task
def judge_task(run_id: str, trigger: str = "run", force: bool = False) -> dict[str, Any]:
    """Judge one run, then read each consumer's verdict."""
    return ops.judge_run(workspace(), run_id, trigger, force=force, progress=progress_of(run_id))


@io_task
def finalise_task(run_id: str, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    return ops.finalise_run(workspace(), run_id, verdicts).to_dict()


@assay_flow(name="run-suite", log_prints=False)
def run_suite(
    suite: str,
    runner: str | None = None,
    deadline_minutes: float | None = None,
    runner_options: dict[str, Any] | None = None,
    repeat: int | None = None,
    budget: int | None = None,
    gate: list[str] | None = None,
) -> Any:
    """Create the run (criteria resolved and stamped), claim, drive the runner, report, release; judge;
    finalise; publish the verdicts as the artifact ``verdicts-TEAM-SUITE`` and as the flow run's tags
    (:mod:`.notify`). ``repeat`` replays each case that many times and ``budget`` lets escalation add replays
    to undecided cases up to it (default: the suite's plan). ``gate`` names consumers whose verdicts gate the
    flow run: when one does not pass (or the run ends without verdicts), it ends in the Failed state
    ``Gate failed`` (calling the flow raises :class:`.notify.GateFailed`, holding the result) and the
    notification webhook is posted.

    Asked for without ``runner`` (the ``run-suite/assay`` deployment's default), a suite that declares several
    runners runs on each, a ``run-suite`` subflow per runner (:func:`each_runner`)."""
    with flow_workspace() as ws:
        if runner is None and len(runners := ops.runners_for(ws, suite)) > 1:
            return each_runner(suite, runners, deadline_minutes, runner_options, repeat, budget, gate)
        if gate:  # a consumer with no criteria on the suite would never fail its gate: refused before a run exists
            from .gates import check_suite_gates

            check_suite_gates(ws, suite, gate)
        run_id = create_run_task(suite, runner, deadline_minutes, _request_id(), repeat, budget)
        row = get_run(ws.engine, run_id)
        if listening():
            started(row.case_count * row.repeat)
        key, name = artifact_key("verdicts", row.team_id, row.suite_key), f"{row.team_id}/{row.suite_key}"
        executed = execute_task(run_id, runner_options)
        # released with the error (already final; the evidence stays), or submitted to an asynchronous
        # runner's vendor (the collect flow judges and finalises it)
        if executed["error"] is not None or executed["awaiting_vendor"]:
            publish_verdicts(key, [], f"{name}: run {run_id} has no verdicts yet ({executed['error'] or 'at the vendor'})")
            result = {"run": get_run(ws.engine, run_id).to_dict(), "executed": executed, "verdicts": []}
            if executed["awaiting_vendor"]:  # the collect flow gives the verdicts
                to_server(lambda: notify.tag_flow_run([f"run:{run_id}", "verdict:pending"]))
                return result
            return gated(result, None, gate or [], name, ws.settings)  # ended without verdicts
        judged = judge_task(run_id)
        run = finalise_task(run_id, judged["verdicts"])
        publish_verdicts(key, judged["verdicts"], f"{name}: each consumer's verdict on run {run_id}")
        result = {"run": run, "executed": executed, "judged": judged["judged"], "verdicts": judged["verdicts"]}
        return gated(result, judged["verdicts"], gate or [], name, ws.settings)


def each_runner(suite: str, runners: list[str], deadline_minutes: float | None, runner_options: dict[str, Any] | None,
                repeat: int | None, budget: int | None, gate: list[str] | None) -> Any:
    """``suite`` run on each of ``runners`` in turn (one failing does not stop the others): per runner, its run,
    status and verdicts, as the nightly sweep lists them. The flow run fails when one of them did (``Gate
    failed`` when a gate did), naming each."""
    from prefect.states import Failed

    from .sweep_flows import suite_entry

    states = [run_suite(suite, name, deadline_minutes, runner_options, repeat, budget, gate, return_state=True)
              for name in runners]
    runs = [suite_entry(suite, state, name) for state, name in zip(states, runners)]
    failed = [(state, entry) for state, entry in zip(states, runs) if entry["status"] == "failed"]
    if not failed:
        return {"suite": suite, "runs": runs}
    name = notify.GATE_FAILED if any(state.name == notify.GATE_FAILED for state, _ in failed) else "Failed"
    return Failed(name=name, message="; ".join(f"on {entry['runner']}: {entry['reason']}" for _, entry in failed),
                  data={"suite": suite, "runs": runs})


def gated(result: dict[str, Any], verdicts: list[dict[str, Any]] | None, gates: list[str], suite: str,
          settings: Any) -> Any:
    """Tag the flow run with ``verdicts`` (None: the run ended without any); when a consumer of ``gates`` does
    not pass, post the notification and return the ``Gate failed`` state (its data the
    :class:`.notify.GateFailed` holding ``result``), else ``result``."""
    from prefect.runtime import flow_run
    from prefect.states import Failed

    run, run_id = result["run"], result["run"]["run_id"]
    to_server(lambda: notify.tag_flow_run([f"run:{run_id}", *notify.verdict_tags(verdicts, gates)]))
    if verdicts is None:  # each gated consumer's verdict is none
        why = f"no verdict possible: the run ended {run['status']}: {run.get('status_reason') or result['executed']['error']}"
        verdicts = [{"consumer": c, "verdict": None, "reason": why} for c in gates]
    failures = notify.gate_failures(verdicts, gates)
    if not failures:
        return result
    notify.post(notify.webhook_url(settings), notify.notification(
        "gate", [{"run_id": run_id, "suite": suite, **f} for f in failures], run_id=run_id, suite=suite,
        flow_run_id=flow_run.get_id()))
    return Failed(name=notify.GATE_FAILED, message=notify.reason(failures), data=notify.GateFailed(result, failures))


@assay_task
def judge_runs_task(run_ids: list[str], keys: list[str] | None = None, new_versions_only: bool = False,
                    force: bool = False) -> dict[str, Any]:
    """Re-judge runs' stored evidence (a wide re-judge maps it, one task per run)."""
    from assay.core.failpoints import failpoint

    from .judging import judge_runs

    judged = judge_runs(workspace(), run_ids, trigger="rejudge", keys=keys, new_versions_only=new_versions_only,
                        force=force, progress=progress_of(",".join(run_ids)))
    failpoint("rejudge.run_committed")
    return judged


@assay_flow(name="judge")
def judge(run_id: str, force: bool = False) -> dict[str, Any]:
    """Judge one run's stored evidence again (a new outcome per case run), then read each consumer's
    verdict (its stamped verdicts never change); publish them as the artifact ``judged-RUN``."""
    with flow_workspace():
        judged = judge_task(run_id, "judge", force)
        publish_verdicts(artifact_key("judged", run_id), judged["verdicts"], f"run {run_id} judged again: verdicts now")
        return judged


@assay_flow(name="rejudge", task_runner=ThreadPoolTaskRunner(max_workers=1))
def rejudge(
    run_ids: list[str], keys: list[str] | None = None, new_versions_only: bool = False, force: bool = False
) -> dict[str, Any]:
    """New outcomes over stored evidence for the chosen runs, one task per run, their counts added up;
    calls the judge, never a runner. Publishes what each run's pass judged as the table artifact ``rejudge``.

    Each task holds one run's evidence and atoms, so the runs in flight bound the memory, whatever the
    suite's size: in this process one at a time (Polars and DuckDB already use every core for it); on
    Dask (:func:`.task_runners.wide`) one per worker thread, each worker a process of its own."""
    from .judging import judgeable

    with flow_workspace() as ws:
        run_ids = judgeable(ws, run_ids)  # imported history is left as it is
        groups = [[run_id] for run_id in run_ids] or [[]]  # nothing chosen: one empty pass, its counts all nought
        parts = judge_runs_task.map(groups, keys=unmapped(keys), new_versions_only=unmapped(new_versions_only),
                                    force=unmapped(force)).result()
        rows = [{"run_id": ",".join(group), **part} for group, part in zip(groups, parts, strict=True)]
        to_server(lambda: create_table_artifact(rows, key="rejudge",
                                                description=f"re-judged {len(run_ids)} run(s): what each pass wrote"))
        return summed(parts)


@assay_flow(name="rescore-materialise")
def rescore_materialise(suite: str, consumer: str, version: int | None = None,
                        spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """Apply a criteria to the suite's history and append the verdicts to the lake's ``verdicts`` table.
    (A re-score that writes nothing is a query, and no flow.)"""
    with flow_workspace():
        return rescore_task(suite, consumer, version, spec)


@assay_task
def rescore_task(suite: str, consumer: str, version: int | None, spec: dict[str, Any] | None) -> dict[str, Any]:
    """Re-score and append the verdicts. Not retried: the command reports a failure and its user decides;
    appending again is safe (one row per run, consumer and spec: :func:`assay.storage.judgments.write_verdicts`)."""
    from assay.core.criteria import CriteriaSpec

    from .rescoring import rescore

    candidate = CriteriaSpec.model_validate(spec) if spec is not None else None
    tell = progress_of(suite)
    return rescore(workspace(), suite, consumer, version=version, spec=candidate, materialise=True,
                   progress=None if tell is None else (lambda done, total: tell(done, total, "runs")))


def attend(job: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the flow ``job`` in this process as a command does: waiting on it, so without Prefect's
    heartbeat thread.

    A heartbeat tells a server that a flow run nobody watches still lives; a command's flow run has its
    user watching, and a killed command's run is ended by the catalog's lease and ``assay reap``. The
    thread would also hold the command up to a second at the end of every flow run (it sleeps in whole
    seconds before it sees the flow is over). Deployments' flow runs, in a worker, keep their heartbeats.
    """
    from prefect.context import SettingsContext, get_settings_context

    current = get_settings_context()
    # a copy of the settings in force with one field changed: no re-reading of the environment and
    # profiles (prefect.settings.temporary_settings does that, at a tenth of a second)
    flows = current.settings.flows.model_copy(update={"heartbeat_frequency": None})
    with SettingsContext(profile=current.profile, settings=current.settings.model_copy(update={"flows": flows})):
        with _plain_http_client():
            try:
                return outliving_server(job, *args, **kwargs)  # the server may go away meanwhile
            except notify.GateFailed as failed:  # the flow run's outcome: the command reads the verdicts, as
                return failed.result          # from a passing run, and exits by them


@contextmanager
def _plain_http_client() -> Iterator[None]:
    """Within it, the Prefect client of a flow run (its engine, its tasks, its artifacts) is one built
    without loading a certificate bundle, when the API is plain ``http://`` (the workspace's own server,
    on loopback). Elsewhere, or inside a client Prefect already holds, it changes nothing.

    Prefect's client builds a TLS context for every client it makes, loading its CA bundle whatever the
    URL's scheme: 25-35 ms per flow run on 2 cores, a quarter of an empty flow run's cost against the
    workspace's server (``flows.fixed_cost``). Over ``http://`` no TLS is ever spoken; the context
    given here trusts no certificate, so should TLS ever be asked of it, it fails closed. Its transport
    (:class:`.flow_context.WatchedTransport`) fails at once, without Prefect's minute of retries, once a
    server on loopback has gone away.
    """
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.context import SyncClientContext
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY, PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url or not url.startswith("http://") or SyncClientContext.get() is not None:
        yield
        return
    no_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies against no certificate at all: 0.2 ms to make
    client = SyncPrefectClient(url, auth_string=PREFECT_API_AUTH_STRING.value(), api_key=PREFECT_API_KEY.value(),
                               httpx_settings={"verify": no_tls, "transport": WatchedTransport(verify=no_tls)})
    # the context Prefect's engine and ``get_client(sync_client=True)`` look for, holding this client; built
    # without its constructor, which would make Prefect's own client first
    with SyncClientContext.model_construct(client=client):
        yield


def watched(console: Any, description: str, unit: str, quiet: bool, job: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the flow ``job`` as :func:`attend` does, with a live count of its progress (the command line's bar)."""
    from .progress import live_count

    with live_count(console, description, unit=unit, quiet=quiet) as count:
        listen(None, progress=count.update)
        try:
            return attend(job, *args, **kwargs)
        finally:
            listen(None)
