"""``vapi_chat``: the platform chat runner on VAPI. Our caller talks to a scratch VAPI assistant by text.

Its run target is a compiled assistant config (``{"config": {...}}``, :class:`~assay.core.compiled.CompiledConfig`).
Per run, one scratch assistant is made from it (:func:`assay.adapters.vapi.assistant_body`, every setting
translated; one VAPI cannot take makes every case an ERROR naming it, and creates nothing), provisioned
through the run context so the catalog knows its name before VAPI does and it is deleted at release,
also when the run fails, and by the reaper when the process died. Per case, a multi-turn chat: the
caller (scripted turns, else our caller simulator) speaks, each turn is one ``POST /chat`` chained to the
last by ``previousChatId`` (:func:`~.platform_chat.converse` records the timings).

Evidence per case run: the transcript with timings, the tool calls with their results, the cost VAPI
reported, ``provider_ref`` = the last chat's id, the chats (redacted) as ``provider_payload``, and the
config as the artefact. VAPI's chat judges nothing: our mechanisms (transcript, tool, rubric) do.

When the suite declares ``tool_mocks``, the run starts a :class:`~assay.adapters.tool_mocks.MockServer`,
every tool of the scratch assistant is pointed at it, and each conversation is held open on it with its
case's world: the mock's log joins the evidence (:func:`with_mock_log`).

Errors: a vendor error that survives the client's retries, or a permanent one, makes that case run an
ERROR with VAPI's message (never a FAIL); a refused key fails the whole run naming ``ASSAY_VAPI_API_KEY``;
a malformed config makes every case run an ERROR naming the field, and creates nothing.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any, ClassVar

from assay.core.compiled import CompiledConfig
from assay.core.errors import ConfigError, VendorError
from assay.core.evidence import CaseRun, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.redact import redact
from assay.core.runner import CaseSpec, Heartbeat, RunJob, ScratchObject, new_suffix
from assay.core.settings import Settings

from ..caller import DEFAULT_MAX_TURNS, Caller, caller_client, caller_for
from ..http import RetryPolicy
from ..tool_mocks import MockLog, MockServer
from ..vapi import VapiApi, assistant_body, refused, vendor_name
from .platform_chat import (
    AgentReply,
    CaseCutShort,
    MockSupport,
    PlatformRunner,
    case_reports,
    converse,
    scratch_object,
)

class VapiChatRunner(PlatformRunner):
    """Chats with a scratch VAPI assistant built from the compiled config; one conversation per case."""

    name: ClassVar[str] = "vapi_chat"
    # A text chat: a reply's t is when it arrived and its end_t the same moment (no audio, no durations), so
    # of the timing.* mechanisms only the response latency (a chat request's round trip) can be measured.
    mechanisms: ClassVar[frozenset[str]] = mechanisms_of("transcript", "tool", "rubric") | {"timing.response_latency"}
    synchronous: ClassVar[bool] = True
    does: ClassVar[str] = "chats with"
    tool_mocks: ClassVar[MockSupport] = "served"

    def __init__(self, settings: Settings | None = None, *, condition: str | None = None, model: str | None = None,
                 max_turns: int = DEFAULT_MAX_TURNS, retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        super().__init__(settings, condition=condition, model=model, retry=retry, sleep=sleep)
        self.max_turns = max_turns

    def refused(self, config: CompiledConfig) -> str | None:
        return refused(config)

    def api(self) -> VapiApi:
        return VapiApi.from_settings(self.settings, retry=self.retry, sleep=self.sleep)

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        config = self.compiled_config(job)
        if isinstance(config, Report):
            yield config
            return
        settings = self.settings
        mocks = self.mock_rules(job)
        with ExitStack() as stack:
            callers = self._callers(job.cases, settings, stack)  # a missing caller model fails before anything is created
            server = stack.enter_context(MockServer.from_settings(mocks, settings)) if mocks is not None else None
            api = stack.enter_context(self.api())
            api.client.until(job.waits_until)
            url = server.url if server is not None else None
            create = lambda name: api.create_assistant(assistant_body(config, name, tool_server=url))  # noqa: E731
            assistant_id = stack.enter_context(scratch_object(heartbeat, "assistant", create, api.delete_assistant))
            artefact = self.artefact(job, config)
            yield from case_reports(job, self.name, self.batch_size, lambda case: self._case_run(
                api, assistant_id, case, callers[case.case_id], heartbeat, artefact, server, run_id=job.run_id), heartbeat)

    def _callers(self, cases: Sequence[CaseSpec], settings: Settings, stack: ExitStack) -> dict[str, Caller]:
        client = None
        if any(not c.situation.get("turns") for c in cases):
            client = caller_client(settings)
            if client is not None:
                stack.callback(client.close)
        return {c.case_id: caller_for(c.situation, settings, client=client, case=c.case_key, max_turns=self.max_turns)
                for c in cases}

    @staticmethod
    def _case_run(api: VapiApi, assistant_id: str, case: CaseSpec, caller: Caller, heartbeat: Heartbeat,
                  artefact: dict[str, Any], server: MockServer | None = None, *, run_id: str = "") -> CaseRun:
        previous: str | None = None
        conversation = f"{run_id}:{case.case_id}:{case.source_ref}:{new_suffix()}"
        turns = itertools.count()

        def send(text: str) -> AgentReply:
            nonlocal previous
            # each chat is named for this run, case, conversation and turn: one whose answer is lost is found, not re-made
            answer = api.chat(assistant_id, text, previous, marker=vendor_name(f"{conversation}:{next(turns)}"))
            previous = answer.ref
            return answer

        if server is None:
            conversation = converse(caller, send, heartbeat=heartbeat)
            run = conversation.case_run(case.case_id, source_ref=case.source_ref, artefact=artefact)
        else:
            with server.conversation(case.situation.get("world") or {}) as log:
                conversation = converse(caller, send, heartbeat=heartbeat)
            run = with_mock_log(conversation.case_run(case.case_id, source_ref=case.source_ref, artefact=artefact), log)
        if conversation.timed_out is not None:  # the run's deadline: this case's evidence is kept, the run stops
            raise CaseCutShort(run, conversation.timed_out)
        return run

    def teardown(self, objects: Sequence[ScratchObject]) -> dict[str, str | None]:
        """Delete scratch assistants by id, or by name when the id was never recorded; gone counts as deleted."""
        try:
            api = self.api()
        except ConfigError as exc:
            return {o.scratch_id: str(exc) for o in objects}
        with api:
            return {o.scratch_id: delete_scratch(api, o) for o in objects}


def with_mock_log(case_run: CaseRun, log: MockLog) -> CaseRun:
    """The case run with the tool mock's log as evidence, under ``provider_payload["tool_mocks"]``: each call's
    tool, arguments and the rule that answered with its answer, or the error. The answers also reach the
    tool calls' ``result`` (VAPI hands them to the agent). The log lives in the payload rather than in new
    tool-call fields so the lake's case-run schema stays as it is. A call no rule covered makes the case run
    an ERROR naming the tool and its arguments."""
    payload = {**(case_run.provider_payload or {}), "tool_mocks": redact(log.entries)}
    update: dict[str, Any] = {"provider_payload": payload}
    if log.errors:
        update.update(status="error", error="; ".join([*([case_run.error] if case_run.error else []), *log.errors]))
    return case_run.model_copy(update=update)


def delete_scratch(api: VapiApi, obj: ScratchObject) -> str | None:
    """Delete one scratch assistant or eval at VAPI: None when deleted or already gone, else why not."""
    by_kind = {"assistant": (api.delete_assistant, api.find_assistants), "eval": (api.delete_eval, api.find_evals)}
    if obj.kind not in by_kind:
        return f"VAPI scratch objects are assistants and evals, not {obj.kind!r}"
    delete, find = by_kind[obj.kind]
    try:
        for vendor_id in [obj.vendor_id] if obj.vendor_id else find(obj.name):
            delete(vendor_id)
    except (VendorError, ConfigError) as exc:
        return str(exc)
    return None


__all__ = ["VapiChatRunner", "delete_scratch", "with_mock_log"]
