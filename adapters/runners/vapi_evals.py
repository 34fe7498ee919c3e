"""``vapi_evals``: VAPI's own scorers judge the assertions that have a home there.

Its run target is a compiled assistant config, made into one scratch assistant per run (as
``vapi_chat`` does). An assertion whose mechanism VAPI's judge plans can express — ``transcript.contains``
and ``transcript.regex`` on the agent's turns (``regex`` plans), ``rubric`` (an ``ai`` plan) — becomes a
``chat.mockConversation`` eval (:func:`assay.adapters.vapi.mock_conversation`) whose caller turns are
the case's scripted turns (or, without them, one opening line saying who calls and what they want).

**One eval per case and assertion**, not one per case with every checkpoint: VAPI reports an eval run's
result as one pass/fail ("pass only if all the judge messages pass"), so a run with several
checkpoints could not say which assertion failed. A case with no assertion VAPI can judge still gets
one eval whose checkpoints accept any reply, so every case run has a transcript.

All evals are started, then polled (``GET /eval/run/{id}``) until they end, renewing the lease every
round and giving up at the job's deadline (or ``max_wait``), a moment before it
(:data:`~assay.core.runner.REPORT_RESERVE`) so that what is still unknown is reported in time. Each translated assertion's
verdict is reported as the runner evaluation ``native_evaluation_name(key)`` (evaluator ``vapi:eval``,
verdict pass/fail; ``error`` when the eval run ended in error, ``unknown`` when it had not ended), which
judging maps onto that assertion. Assertions with no home are not declared in :attr:`mechanisms`, so
judging fails them with a reason naming this runner. Evals and the assistant are scratch objects,
deleted at release.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from assay.core.errors import DeadlineError, VendorError
from assay.core.evidence import CaseRun, Evaluation, Report, native_evaluation_name
from assay.core.redact import redact
from assay.core.runner import AssertionSpec, CaseSpec, Heartbeat, RunJob, new_suffix
from assay.core.settings import Settings

from ..http import RetryPolicy
from ..vapi import ANY_REPLY, VapiApi, assistant_body, eval_transcript, judge_plan, mock_conversation
from .platform_chat import MockSupport, scratch_object
from .vapi_chat import VapiChatRunner


def caller_turns(situation: dict[str, Any]) -> list[str]:
    """The scripted turns, else one opening line from who calls and what they want."""
    turns = [str(t) for t in situation.get("turns") or []]
    if turns:
        return turns
    who, wants = situation.get("caller"), situation.get("wants")
    return [" ".join(part for part in (f"Hi, this is {who}." if who else "Hi.", str(wants or "")) if part).strip()]


@dataclass
class _Eval:
    """One eval of one case: which assertion it judges (None: the conversation only) and its run."""

    assertion: AssertionSpec | None
    run_id: str | None = None
    run: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ended(self) -> bool:
        return self.run.get("status") == "ended"


class VapiEvalsRunner(VapiChatRunner):
    """Runs one VAPI eval per case and translatable assertion against a scratch assistant; reports VAPI's verdicts."""

    name: ClassVar[str] = "vapi_evals"
    repeats: ClassVar[bool] = False  # eval runs are keyed by case: one per case
    mechanisms: ClassVar[frozenset[str]] = frozenset({"transcript.contains", "transcript.regex", "rubric"})
    does: ClassVar[str] = "evaluates"
    tool_mocks: ClassVar[MockSupport] = "refused"  # an eval run's mock conversation has no run-long server

    def __init__(self, settings: Settings | None = None, *, condition: str | None = None, model: str | None = None,
                 judge_model: dict[str, str] | None = None, poll_interval: float = 2.0, max_wait: float = 1800.0,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        super().__init__(settings, condition=condition, model=model, retry=retry, sleep=sleep)
        self.judge_model = judge_model
        """The model of ``ai`` judge plans; VAPI's default for us when None."""
        self.poll_interval, self.max_wait, self.clock = poll_interval, max_wait, clock

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        config = self.compiled_config(job)
        if isinstance(config, Report):
            yield config
            return
        with ExitStack() as stack:
            api = stack.enter_context(self.api())
            api.client.until(job.waits_until)
            create = lambda name: api.create_assistant(assistant_body(config, name))  # noqa: E731
            assistant_id = stack.enter_context(scratch_object(heartbeat, "assistant", create, api.delete_assistant))
            evals = {c.case_id: self._start(api, stack, heartbeat, assistant_id, c, job.assertions) for c in job.cases}
            self._poll(api, [e for es in evals.values() for e in es], heartbeat, job)
            artefact = self.artefact(job, config)
            runs = [self._case_run(case, evals[case.case_id], artefact) for case in job.cases]
            for batch_no, start in enumerate(range(0, len(runs), self.batch_size)):
                yield Report.from_case_runs(f"{job.run_id}:{self.name}:{batch_no}", runs[start : start + self.batch_size])

    def _start(self, api: VapiApi, stack: ExitStack, heartbeat: Heartbeat, assistant_id: str, case: CaseSpec,
               assertions: Sequence[AssertionSpec]) -> list[_Eval]:
        """Create and start the case's evals; a vendor error is kept on the eval it stopped."""
        turns = caller_turns(case.situation)
        mine = [a for a in assertions if a.case_id in (None, case.case_id)]
        plans = [(a, plan) for a in mine if (plan := judge_plan(a, self.judge_model)) is not None]
        todo: list[tuple[AssertionSpec | None, dict[str, Any]]] = list(plans) or [(None, {"type": "regex", "content": ANY_REPLY})]
        out = []
        for assertion, plan in todo:
            ev = _Eval(assertion)
            label = f"{case.case_key}-{assertion.key if assertion else 'conversation'}-{new_suffix()}"  # unique per execution
            try:
                make = lambda name, plan=plan: api.create_eval(mock_conversation(name, turns, plan))  # noqa: E731
                eval_id = stack.enter_context(scratch_object(heartbeat, "eval", make, api.delete_eval, label=label))
                ev.run_id = api.run_eval(eval_id, assistant_id)
            except (VendorError, DeadlineError) as exc:  # the deadline too: what was started is still reported
                ev.error = str(exc)
            heartbeat()
            out.append(ev)
        return out

    def _poll(self, api: VapiApi, evals: list[_Eval], heartbeat: Heartbeat, job: RunJob) -> None:
        """Poll every started eval run until all have ended, or the deadline (or ``max_wait``) has passed."""
        started = self.clock()
        until = job.waits_until  # the deadline less the time kept to report what is still unknown
        while True:
            for ev in evals:
                if ev.run_id and not ev.ended and ev.error is None:
                    try:
                        ev.run = api.eval_run(ev.run_id)
                    except VendorError as exc:
                        ev.error = str(exc)
                    except DeadlineError:  # the poll itself reached the deadline: what is not known stays unknown
                        return
            heartbeat()
            waiting = [ev for ev in evals if ev.run_id and not ev.ended and ev.error is None]
            now = self.clock()
            left = (until - now).total_seconds() if until is not None else None
            if not waiting or (left is not None and left <= 0) or (now - started).total_seconds() >= self.max_wait:
                return
            self.sleep(self.poll_interval if left is None else min(self.poll_interval, left))

    def _case_run(self, case: CaseSpec, evals: list[_Eval], artefact: dict[str, Any] | None = None) -> CaseRun:
        """The case's evidence: the first ended eval's conversation, VAPI's verdict per assertion, the config run."""
        results = [ev for ev in evals if ev.ended and ev.run.get("endedReason") == "mockConversation.done"
                   and ev.run.get("results")]
        evaluations = [self._evaluation(ev) for ev in evals if ev.assertion is not None]
        cost = sum(float(ev.run.get("cost") or 0.0) for ev in evals) if any(ev.run.get("cost") is not None for ev in evals) else None
        payload = redact({"eval_runs": [_summary(ev) for ev in evals]})
        ref = next((ev.run_id for ev in evals if ev.run_id), None)
        if not results:
            why = "; ".join(sorted({_why_not(ev) for ev in evals}))
            return CaseRun(case_id=case.case_id, status="error", error=f"no VAPI eval of this case completed: {why}",
                           evaluations=evaluations, provider_ref=ref, provider_payload=payload, cost_usd=cost,
                           artefact=artefact)
        transcript, calls = eval_transcript(results[0].run["results"][0])
        return CaseRun(case_id=case.case_id, transcript=transcript, tool_calls=calls, provider_ref=ref,
                       provider_payload=payload, cost_usd=cost, evaluations=evaluations, artefact=artefact)

    @staticmethod
    def _evaluation(ev: _Eval) -> Evaluation:
        assert ev.assertion is not None
        result = (ev.run.get("results") or [{}])[0] if ev.ended else {}
        if ev.ended and ev.run.get("endedReason") == "mockConversation.done" and result.get("status") in ("pass", "fail"):
            verdict, rationale = result["status"], f"VAPI eval run {ev.run_id} judged it {result['status']}"
        elif ev.error is not None or ev.ended:
            verdict, rationale = "error", _why_not(ev)
        else:
            verdict, rationale = "unknown", _why_not(ev)
        return Evaluation.from_vendor(name=native_evaluation_name(ev.assertion.key), evaluator="vapi:eval",
                                      verdict=verdict, rationale=rationale, raw=redact(_summary(ev)))


def _why_not(ev: _Eval) -> str:
    """Why an eval gave no verdict, in VAPI's words where it gave any."""
    if ev.error is not None:
        return ev.error
    if not ev.ended:
        return f"VAPI eval run {ev.run_id} had not ended by the run's deadline (status {ev.run.get('status', 'queued')})"
    reason = ev.run.get("endedReason")
    result = (ev.run.get("results") or [{}])[0]
    status = result.get("status") if isinstance(result, dict) else None
    if reason == "mockConversation.done" and status not in (None, "pass", "fail"):
        return f"VAPI eval run {ev.run_id} ended with result status {status!r}, which VAPI does not document (pass, fail)"
    message = ev.run.get("endedMessage") or "no results"
    return f"VAPI eval run {ev.run_id} ended {reason}: {message}"


def _summary(ev: _Eval) -> dict[str, Any]:
    """What is kept of an eval run as evidence (its conversation lives in the transcript)."""
    result = (ev.run.get("results") or [{}])[0]
    return {"assertion": ev.assertion.key if ev.assertion else None, "eval_run_id": ev.run_id,
            "status": ev.run.get("status"), "endedReason": ev.run.get("endedReason"),
            "endedMessage": ev.run.get("endedMessage"), "result": result.get("status"), "cost": ev.run.get("cost"),
            "error": ev.error}


__all__ = ["VapiEvalsRunner", "caller_turns"]
