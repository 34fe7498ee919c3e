"""The verdict where operators look: a flow run's tags and final state, and a webhook on a failure.

A ``run-suite`` flow run carries its run's id as a tag (``run:RUN_ID``), each consumer's verdict
(``consumer:ci_gate:fail``), the worst of them (``verdict:fail``; ``verdict:pending`` while an asynchronous
vendor has the run) and, when consumers gate it, the gate's (``gate:fail``). A failed gate ends the flow
run in a Failed state named :data:`GATE_FAILED`, whose message gives each failing consumer and its reason:
the Prefect UI shows it red, and an automation matches its event, ``prefect.flow-run.Gate failed``. (The
tags are for reading flow runs back, by the UI's filters or the API's: the server attaches to a state's
event the tags it cached when the flow run started, so an automation should match the state.)

With ``ASSAY_NOTIFY_WEBHOOK_URL`` set, a failed gate and a nightly sweep with a failure are each posted
there as one JSON document (:func:`notification`). Posting never decides anything: a receiver that is
down or slow is logged and the flow goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from assay.core.errors import AssayError
from assay.core.exit_codes import most_severe, verdict_code

log = logging.getLogger(__name__)

GATE_FAILED = "Gate failed"
"""The name of the Failed state a ``run-suite`` flow run ends in when a consumer it gates does not pass."""

NOTIFICATION = "assay.notification"
"""The schema id of a posted notification; :data:`NOTIFICATION_REVISION` its revision."""
NOTIFICATION_REVISION = 1

TIMEOUT_SECONDS = 10.0
"""How long a post may take before it is given up (and logged)."""

_WORST_FIRST = ("error", "fail", "pass")
"""Verdicts from the most to the least severe (no verdict at all counts as ``error``)."""


class GateFailed(AssayError):
    """A gated consumer's verdict is not ``pass``: the flow run's outcome, not a fault of the tool.

    Holds what the flow would have returned (``result``), so a caller that waits on the flow run (the
    command line) reads the verdicts as from a passing one; its exit code is the gate's."""

    def __init__(self, result: dict[str, Any], failures: list[dict[str, Any]]):
        self.result = result
        self.failures = failures
        self.exit_code = most_severe(verdict_code(f["verdict"]) for f in failures)
        super().__init__(reason(failures))


def worst(verdicts: Sequence[str | None]) -> str:
    """The most severe of ``verdicts`` (``pass`` when there are none; no verdict counts as ``error``)."""
    return min((v if v in _WORST_FIRST else "error" for v in verdicts), key=_WORST_FIRST.index, default="pass")


def gate_failures(verdicts: Sequence[dict[str, Any]], gates: Sequence[str]) -> list[dict[str, Any]]:
    """The gated consumers whose verdict is not ``pass`` (each: consumer, verdict, reason)."""
    return [{"consumer": v["consumer"], "verdict": v["verdict"] or "error", "reason": v.get("reason")}
            for v in verdicts if v["consumer"] in gates and v["verdict"] != "pass"]


def verdict_tags(verdicts: Sequence[dict[str, Any]] | None, gates: Sequence[str]) -> list[str]:
    """The tags a run's verdicts give its flow run: ``verdict:WORST``, ``gate:WORST`` of the gated consumers
    (when some are), and ``consumer:NAME:VERDICT`` for each consumer. ``None``: the run ended with no verdict
    possible (``error``)."""
    if verdicts is None:
        return ["verdict:error", *(["gate:error"] if gates else [])]
    tags = [f"verdict:{worst([v['verdict'] for v in verdicts])}"]
    if gates:
        tags.append(f"gate:{worst([v['verdict'] for v in verdicts if v['consumer'] in gates])}")
    return tags + [f"consumer:{v['consumer']}:{v['verdict'] or 'error'}" for v in verdicts]


def reason(failures: Sequence[dict[str, Any]]) -> str:
    """One line naming each failing consumer, its verdict and why (a state's message, a notification's text)."""
    return "; ".join(f"{f['consumer'] or 'the run'}: {f['verdict']}" + (f" ({f['reason']})" if f.get("reason") else "")
                     for f in failures)


def tag_flow_run(tags: Sequence[str]) -> None:
    """Add ``tags`` to the flow run this runs in (nothing outside one), keeping the tags it has."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    if (flow_run_id := flow_run.get_id()) is None:
        return
    with get_client(sync_client=True) as client:
        have = client.read_flow_run(flow_run_id).tags
        client.update_flow_run(flow_run_id, tags=list(dict.fromkeys([*have, *tags])))


def notification(kind: str, failures: Sequence[dict[str, Any]], **about: Any) -> dict[str, Any]:
    """The document posted: ``kind`` (``gate`` or ``nightly``), what it is about (``run_id``, ``suite``,
    ``tag``, ``flow_run_id``), each failure (run, suite, consumer, verdict, reason) and a one-line ``text``
    (what chat webhooks display)."""
    where = about.get("suite") or f"nightly sweep of {about.get('tag')!r}"
    text = f"assay {kind} failed: {where}: " + "; ".join(
        (f"{f['suite']} " if kind == "nightly" else "") + reason([f]) for f in failures)
    return {"schema": NOTIFICATION, "revision": NOTIFICATION_REVISION, "kind": kind, **about,
            "failures": list(failures), "text": text}


def sweep_failures(suites: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What failed in a nightly sweep (its ``suites`` entries): each suite whose run failed (no consumer), and
    each consumer whose verdict is not ``pass``."""
    failures = []
    for s in suites:
        where = {"suite": s["suite"], "runner": s.get("runner"), "run_id": s["run_id"]}
        if s["status"] in ("failed", "refused"):
            failures.append({**where, "consumer": None, "verdict": "error", "reason": f"{s['status']}: {s['reason']}"})
        failures += [{**where, **f} for f in gate_failures(s["verdicts"], [v["consumer"] for v in s["verdicts"]])]
    return failures


def webhook_url(settings: Any) -> str | None:
    """The notification webhook of ``settings`` (``ASSAY_NOTIFY_WEBHOOK_URL``), if one is set."""
    return settings.notify_webhook_url.get_secret_value() if settings.notify_webhook_url else None


def post_sweep(settings: Any, tag: str, suites: Sequence[dict[str, Any]]) -> None:
    """Post the ``nightly`` notification of a sweep over ``tag`` (its ``suites`` entries) when something failed."""
    from prefect.runtime import flow_run

    if failures := sweep_failures(suites):
        post(webhook_url(settings), notification("nightly", failures, tag=tag, flow_run_id=flow_run.get_id()))


def post(url: str | None, body: dict[str, Any], timeout: float = TIMEOUT_SECONDS) -> bool:
    """POST ``body`` as JSON to ``url`` (nothing when it is unset); True when the receiver accepted it
    (2xx). A failure is logged as a warning, never raised: a notification must not change a verdict."""
    if not url:
        return False
    import httpx

    try:
        response = httpx.post(url, json=body, timeout=timeout)
        response.raise_for_status()
    except (httpx.HTTPError, httpx.InvalidURL) as exc:  # its message may hold the URL, a secret: name the failure
        why = f"it answered {exc.response.status_code}" if isinstance(exc, httpx.HTTPStatusError) else type(exc).__name__
        log.warning("could not post the %s notification to ASSAY_NOTIFY_WEBHOOK_URL: %s", body.get("kind"), why)
        return False
    return True


__all__ = ["GATE_FAILED", "NOTIFICATION", "GateFailed", "gate_failures", "notification", "post", "post_sweep",
           "reason", "sweep_failures", "tag_flow_run", "webhook_url", "verdict_tags", "worst"]
