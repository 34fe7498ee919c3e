"""``elevenlabs_chat``: the platform chat runner on ElevenLabs Agents. The same case that runs on VAPI runs here.

Its run target is a compiled assistant config (``{"config": {...}}``, :class:`~assay.core.compiled.CompiledConfig`).
Per run, one scratch agent is made from it (:func:`assay.adapters.elevenlabs.agent_body`, every setting
translated; one ElevenLabs cannot take makes every case an ERROR naming it, and creates nothing), provisioned
through the run context so the catalog knows its name before ElevenLabs does; it is deleted at release,
also when the run fails, and by the reaper when the process died. Per case, one simulated conversation:
unlike VAPI, ElevenLabs plays the caller itself, prompted from the situation (scripted turns when the
case has them), so no caller model of ours is needed.

Evidence per case run: the transcript with ElevenLabs' turn times (``t``; ``end_t`` unknown, see
:mod:`assay.adapters.elevenlabs`), the tool calls with their results, the response (redacted) as
``provider_payload``, the agent's id as ``provider_ref``, the config as the artefact, and ElevenLabs'
own analysis as runner evaluations (``call_successful`` and each criterion, on its verdicts and
scales). The simulate endpoint reports no cost, so ``cost_usd`` stays unknown.

Errors: a vendor error that survives the client's retries, or a permanent one (a malformed answer
included), makes that case run an ERROR with ElevenLabs' message, never a FAIL; if the agent cannot be
created, every case run is an ERROR with that message. A missing or refused key fails the whole run
naming ``ASSAY_ELEVENLABS_API_KEY`` (never the key); a malformed config makes every case run an ERROR
naming the field, and creates nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any, ClassVar

from assay.core.compiled import CompiledConfig
from assay.core.errors import ConfigError, ToolMockError, VendorError
from assay.core.evidence import CaseRun, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.redact import redact
from assay.core.runner import CaseSpec, Heartbeat, RunJob, ScratchObject
from assay.core.settings import Settings
from assay.core.tool_mocks import ToolMocks

from ..elevenlabs import (
    DEFAULT_LLM, ElevenLabsApi, agent_body, analysis_evaluations, read_conversation, refused, simulation_body,
)  # fmt: skip
from ..http import RetryPolicy
from .platform_chat import MockSupport, PlatformRunner, case_reports, scratch_object

class ElevenLabsChatRunner(PlatformRunner):
    """Simulates a conversation with a scratch ElevenLabs agent built from the compiled config; one per case."""

    name: ClassVar[str] = "elevenlabs_chat"
    # ElevenLabs reports when a turn began, in whole seconds, never when it ended: there is no response
    # latency to measure, so an assertion on it fails as unsupported here instead of staying undetermined.
    # No timing.* mechanism either: without end_t (nor the per-turn `interrupted` flag, which read_conversation
    # does not keep) there are no gaps, overlaps or durations to measure.
    mechanisms: ClassVar[frozenset[str]] = (
        mechanisms_of("transcript", "tool", "vendor", "rubric") - {"transcript.response_latency"}
    )
    synchronous: ClassVar[bool] = True
    does: ClassVar[str] = "simulates"
    tool_mocks: ClassVar[MockSupport] = "static"  # ElevenLabs' tool_mock_config: one answer per tool

    def __init__(self, settings: Settings | None = None, *, condition: str | None = None, model: str | None = None,
                 llm: str = DEFAULT_LLM, turns_limit: int = 30, scoring_mode: str = "binary",
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep):
        super().__init__(settings, condition=condition, model=model, retry=retry, sleep=sleep)
        self.llm = llm
        """The LLM behind the simulated user, and behind the agent when the config names no model."""
        self.turns_limit = turns_limit
        """At most this many new turns per simulated conversation (``new_turns_limit``)."""
        self.scoring_mode = scoring_mode
        """``binary`` or ``numeric_uniform``: how ElevenLabs scores the criteria we send."""

    def api(self) -> ElevenLabsApi:
        return ElevenLabsApi.from_settings(self.settings, retry=self.retry, sleep=self.sleep)

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        config = self.compiled_config(job)
        if isinstance(config, Report):
            yield config
            return
        with ExitStack() as stack:
            api = stack.enter_context(self.api())
            api.client.until(job.waits_until)
            create = lambda name: api.create_agent(agent_body(config, name, self.llm))  # noqa: E731
            try:
                agent_id = stack.enter_context(scratch_object(heartbeat, "agent", create, api.delete_agent))
            except VendorError as exc:
                yield self.errors(job, job.cases, f"the scratch agent could not be created: {exc}")
                return
            artefact, mocks = self.artefact(job, config), self.mock_rules(job)
            yield from case_reports(job, self.name, self.batch_size,
                                    lambda case: self._case_run(api, agent_id, case, config, artefact, mocks), heartbeat)

    def refused(self, config: CompiledConfig) -> str | None:
        return refused(config)

    def _case_run(self, api: ElevenLabsApi, agent_id: str, case: CaseSpec, config: CompiledConfig,
                  artefact: dict[str, Any], mocks: ToolMocks | None = None) -> CaseRun:
        started_at, began = datetime.now(UTC), time.perf_counter()
        common: dict[str, Any] = {"case_id": case.case_id, "source_ref": case.source_ref, "artefact": artefact, "provider_ref": agent_id,
                                  "started_at": started_at}
        try:
            body = simulation_body(case.situation, config, llm=self.llm, turns_limit=self.turns_limit,
                                   scoring_mode=self.scoring_mode, mocks=mocks)
        except ToolMockError as exc:
            return CaseRun(status="error", error=str(exc), **common)
        try:
            response = api.simulate(agent_id, body)
            transcript, tool_calls = read_conversation(response)
            evaluations = analysis_evaluations(response)
        except VendorError as exc:  # ConfigError (a refused key) is not the case's problem: it propagates
            return CaseRun(status="error", error=str(exc), duration_ms=(time.perf_counter() - began) * 1000, **common)
        return CaseRun(transcript=transcript, tool_calls=tool_calls, evaluations=evaluations,
                       provider_payload=redact(response), duration_ms=(time.perf_counter() - began) * 1000, **common)

    def teardown(self, objects: Sequence[ScratchObject]) -> dict[str, str | None]:
        """Delete scratch agents by id, or by name when the id was never recorded; gone counts as deleted."""
        try:
            api = self.api()
        except ConfigError as exc:
            return {o.scratch_id: str(exc) for o in objects}
        with api:
            return {o.scratch_id: _delete(api, o) for o in objects}


def _delete(api: ElevenLabsApi, obj: ScratchObject) -> str | None:
    """Delete one scratch agent: None when deleted or already gone, else why not."""
    if obj.kind != "agent":
        return f"ElevenLabs scratch objects are agents, not {obj.kind!r}"
    try:
        for agent_id in [obj.vendor_id] if obj.vendor_id else api.find_agents(obj.name):
            api.delete_agent(agent_id)
    except (VendorError, ConfigError) as exc:
        return str(exc)
    return None


__all__ = ["ElevenLabsChatRunner"]
