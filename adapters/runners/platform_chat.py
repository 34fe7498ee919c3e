"""The conversation loop of a platform chat runner: our caller speaks, the platform's agent answers.

A platform with a synchronous text chat (VAPI's ``POST /chat``) has no caller of its own, so the runner
alternates: the caller (:mod:`assay.adapters.caller`) says a line, ``send`` delivers it and returns the
agent's reply, until the caller hangs up or its turn cap is reached. :func:`converse` records:

- **timings**, in seconds from the start of the conversation: a caller turn's ``t`` is when it was sent
  and, text being sent whole, its ``end_t`` too; an agent turn's ``t`` is when the response *arrived*
  (a synchronous API shows nothing earlier) and its ``end_t`` the same moment. So the response
  latency the mechanisms compute (agent ``t`` minus the preceding caller ``end_t``) is the round trip
  of one chat request, the vendor's model time included;
- the agent's tool calls (with their results), stamped with the reply's ``t``;
- cost (the sum of what the vendor reported; None if it reported nothing), the vendor's references
  and payloads;
- a vendor error (classified and retried by the client) stops the conversation: it is kept as the
  case run's error with the partial transcript, so the case is an ERROR, never a FAIL. So does the
  run's deadline (``Conversation.timed_out``), after which the runner stops (:class:`CaseCutShort`). A
  :class:`ConfigError` (a refused key, no caller model) is not a case's problem and propagates.

:func:`scratch_object` provisions a vendor object for one run: recorded in the catalog and torn down at
release when the run has a scratch book, else created and deleted around the block.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from assay.core.compiled import CompiledConfig, config_problems, with_model
from assay.core.errors import DeadlineError, RunnerError, UsageError, VendorError
from assay.core.evidence import CaseRun, Report, ToolCall, Turn
from assay.core.redact import redact
from assay.core.runner import CaseSpec, RunContext, Runner, RunJob, new_suffix
from assay.core.settings import Settings
from assay.core.tool_mocks import ToolMocks, argument_free

from ..http import RetryPolicy

from ..caller import Caller


@dataclass(frozen=True)
class AgentReply:
    """The agent's side of one exchange: what it said, the tools it called, what it cost."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    cost: float | None = None
    ref: str | None = None
    """The vendor's id of this exchange (a chat id)."""
    payload: dict[str, Any] = field(default_factory=dict)
    """The vendor's response as received (redacted before it is reported)."""


@dataclass
class Conversation:
    """What one conversation produced, complete or cut short by a vendor error."""

    started_at: datetime
    transcript: list[Turn] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    cost: float | None = None
    refs: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    duration_ms: float = 0.0
    error: str | None = None
    timed_out: DeadlineError | None = None
    """Set when the run's deadline cut the conversation short (``error`` then says so)."""

    def case_run(self, case_id: str, *, source_ref: str = "", artefact: dict[str, Any] | None = None) -> CaseRun:
        """The case run's evidence (status ``error`` with the vendor's message when cut short)."""
        payload = {"exchanges": [_trim(p) for p in self.payloads[:-1]], "last": self.payloads[-1]} if self.payloads else None
        return CaseRun(
            case_id=case_id, source_ref=source_ref, status="error" if self.error else "executed", error=self.error,
            transcript=self.transcript, tool_calls=self.tool_calls, artefact=artefact,
            provider_ref=self.refs[-1] if self.refs else None,
            provider_payload=redact(payload) if payload is not None else None,
            cost_usd=self.cost, duration_ms=self.duration_ms, started_at=self.started_at,
        )


def _trim(payload: dict[str, Any]) -> dict[str, Any]:
    """An earlier exchange's payload without the context it repeats (the last payload keeps all of it)."""
    return {k: v for k, v in payload.items() if k != "messages"}


def converse(caller: Caller, send: Callable[[str], AgentReply], *, heartbeat: Callable[[], None] = lambda: None,
             clock: Callable[[], float] = time.perf_counter) -> Conversation:
    """Alternate caller lines and agent replies until the caller hangs up (see the module docstring)."""
    conv = Conversation(started_at=datetime.now(UTC))
    start = clock()
    for _ in range(caller.max_turns):
        try:
            line = caller.next_line(conv.transcript)
        except VendorError as exc:
            conv.error = f"the caller model failed: {exc}"
            break
        if line is None:
            break
        sent = clock() - start
        conv.transcript.append(Turn(role="caller", text=line, t=sent, end_t=sent))
        try:
            answer = send(line)
        except VendorError as exc:
            conv.error = str(exc)
            break
        except DeadlineError as exc:  # what was said before it is evidence: kept, and the run stops after this case
            conv.error, conv.timed_out = str(exc), exc
            break
        finally:
            heartbeat()
        arrived = clock() - start
        conv.transcript.append(Turn(role="agent", text=answer.text, t=arrived, end_t=arrived))
        conv.tool_calls += [call.model_copy(update={"t": arrived}) for call in answer.tool_calls]
        if answer.cost is not None:
            conv.cost = (conv.cost or 0.0) + answer.cost
        if answer.ref:
            conv.refs.append(answer.ref)
        conv.payloads.append(answer.payload)
    conv.duration_ms = (clock() - start) * 1000
    return conv


class CaseCutShort(DeadlineError):
    """The run's deadline cut a case short; ``case_run`` holds what the vendor answered before it."""

    def __init__(self, case_run: CaseRun, cause: DeadlineError):
        super().__init__(cause.vendor, cause.waited)
        self.case_run = case_run


def case_reports(job: RunJob, runner: str, batch_size: int, run_case: Callable[[CaseSpec], CaseRun],
                 heartbeat: Callable[[], None]) -> Iterator[Report]:
    """The job's case runs, ``batch_size`` to a report, the lease renewed after each case.

    When the run's deadline cuts a case short (:class:`DeadlineError`: the vendor's client stops waiting a
    moment before the deadline), the cases done so far and that one (an error saying it timed out, with
    what was said before it when ``run_case`` raised :class:`CaseCutShort`) are reported, then the error is
    raised again: the run ends ``timed_out`` with what the vendor answered kept.
    """
    for batch_no, start in enumerate(range(0, len(job.cases), batch_size)):
        runs: list[CaseRun] = []
        for case in job.cases[start : start + batch_size]:
            try:
                runs.append(run_case(case))
            except DeadlineError as exc:
                runs.append(exc.case_run if isinstance(exc, CaseCutShort) else
                            CaseRun(case_id=case.case_id, source_ref=case.source_ref, status="error", error=str(exc)))
                yield Report.from_case_runs(f"{job.run_id}:{runner}:{batch_no}", runs)
                raise
            heartbeat()
        yield Report.from_case_runs(f"{job.run_id}:{runner}:{batch_no}", runs)


@contextmanager
def scratch_object(ctx: Any, kind: str, create: Callable[[str], str], delete: Callable[[str], None],
                   *, label: str = "") -> Iterator[str]:
    """The vendor id of a new scratch object of ``kind`` for the block.

    With a :class:`RunContext` that keeps a scratch book, the object is recorded before it is created and
    torn down at release by :func:`assay.core.runner.drive` (or the reaper, after a crash). With a bare
    heartbeat (a runner executed outside ``drive``), it is created here and deleted when the block ends.
    """
    if isinstance(ctx, RunContext) and ctx.scratch is not None:
        yield ctx.provision(kind, create, label=label).vendor_id  # type: ignore[misc]
        return
    vendor_id = create(f"assay-adhoc-{kind}-{label or new_suffix()}")
    try:
        yield vendor_id
    finally:
        delete(vendor_id)




EXAMPLE_CONFIG: dict[str, Any] = {
    "name": "Example main line",
    "prompt": "You answer calls for {{business_name}}. Ask for the caller's ZIP code and check the service area "
    "with check_service_area before booking.",
    "variables": {"business_name": "Example Plumbing"},
    "tools": [{"name": "check_service_area", "description": "Is a ZIP code inside the service area?",
               "parameters": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}}],
    "first_message": "Thanks for calling {{business_name}}.",
}
"""A small compiled config every platform runner is tried on by the conformance kit."""


MockSupport = Literal["served", "static", "refused"]
"""How a platform runner honours a suite's ``tool_mocks`` (:attr:`PlatformRunner.tool_mocks`)."""


class PlatformRunner(Runner):
    """What every runner that executes a compiled config on a vendor's platform shares: its settings (given,
    or read from ``ASSAY_*`` when first needed), the retry policy of its vendor client, the run's condition
    and model (options), and reading the run's target — a malformed config, or one with a setting the
    vendor cannot take, makes every case run an error, never a failure."""

    takes_model: ClassVar[bool] = True
    """Whether a run may name the model under test (``--model``) and its condition (``--condition``)."""

    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})
    does: ClassVar[str] = "runs"
    """What the runner does with a config, for messages (``chats with``, ``simulates``)."""
    tool_mocks: ClassVar[MockSupport] = "refused"
    """How it honours a suite's ``tool_mocks``: ``served`` (every call answered by the rules, from the case's
    world), ``static`` (the vendor returns one answer per tool: only tools whose first rule is ``when: {}``)
    or ``refused`` (a run of such a suite makes every case run an ERROR saying so, never ignores them)."""

    def __init__(self, settings: Settings | None = None, *, condition: str | None = None, model: str | None = None,
                 retry: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep):
        if model is not None and (not isinstance(model, str) or not model.strip("/ ")):
            raise UsageError(f"runner {self.name!r}: option 'model' is {model!r}; give a model name, or PROVIDER/NAME")
        self._settings = settings
        self.condition = condition
        """The name of the condition the run is under (``--condition``), recorded in every case run's artefact."""
        self.model = model
        """The model under test instead of the config's (``--model``, ``NAME`` or ``PROVIDER/NAME``), recorded too."""
        self.retry = retry or RetryPolicy()
        self.sleep = sleep

    @property
    def settings(self) -> Settings:
        """The settings given, else read from the environment (``ASSAY_*``) when first needed."""
        return self._settings if self._settings is not None else Settings()

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        return "config", {"config": EXAMPLE_CONFIG}

    def errors(self, job: RunJob, cases: Sequence[CaseSpec], error: str, batch_no: int = 0) -> Report:
        """A report of ``cases`` that could not be executed, each with ``error``."""
        return Report.from_case_runs(f"{job.run_id}:{self.name}:{batch_no}",
                                     [CaseRun(case_id=c.case_id, source_ref=c.source_ref, status="error", error=error)
                                      for c in cases])

    def compiled_config(self, job: RunJob) -> CompiledConfig | Report:
        """The run's compiled config with the run's ``model`` in place of its own, or the report that makes every
        case an error: the config is malformed, has a setting the vendor cannot take (:meth:`refused`), or the
        suite's tool mocks cannot be honoured."""
        if job.target_kind not in self.target_kinds:
            raise RunnerError(f"runner {self.name!r} {self.does} a compiled config; run {job.run_id} targets a "
                              f"{job.target_kind!r}")
        problems = config_problems(job.target)
        if problems:
            return self.errors(job, job.cases, "compiled config is malformed: " + "; ".join(problems))
        config = with_model(CompiledConfig.model_validate(job.target["config"]), self.model)
        refused = self.refused(config) or self.mocks_refused(job)
        if refused:
            return self.errors(job, job.cases, refused)
        return config

    def refused(self, config: CompiledConfig) -> str | None:
        """Why the vendor cannot take the config's settings (naming them), or None; never a silent drop."""
        return None

    def artefact(self, job: RunJob, config: CompiledConfig) -> dict[str, Any]:
        """Each case run's artefact: the config the run executed (redacted), its model as run and, when the run was
        started under a condition or with another model, ``condition: {name, model_asked}``."""
        raw = dict(job.target["config"])
        if config.model is not None:
            raw["model"] = config.model.model_dump(exclude_none=True)
        if self.condition is not None or self.model is not None:
            raw["condition"] = {"name": self.condition, "model_asked": self.model}
        return redact(raw)

    def mock_rules(self, job: RunJob) -> ToolMocks | None:
        """The suite's tool mocks, when its target declares them."""
        stored = job.target.get("tool_mocks")
        return ToolMocks.from_stored(stored) if stored else None

    def mocks_refused(self, job: RunJob) -> str | None:
        """Why this runner cannot honour the suite's tool mocks (see :attr:`tool_mocks`), or None."""
        mocks = self.mock_rules(job)
        if mocks is None or self.tool_mocks == "served":
            return None
        served = ", ".join(sorted(r.name for r in _mock_servers()))
        if self.tool_mocks == "static":
            conditional = sorted(set(mocks.tools) - set(argument_free(mocks)))
            if not conditional:
                return None
            return (f"runner {self.name!r} returns one fixed answer per tool, so it cannot answer by arguments the "
                    f"tool mocks of {', '.join(conditional)} (their first rule has a `when`); run the suite with "
                    f"--runner {served or 'a runner that serves tool mocks'}, or make each tool's first rule `when: {{}}`")
        return (f"runner {self.name!r} cannot answer the agent's tool calls from the suite's tool_mocks; run the "
                f"suite with --runner {served or 'a runner that serves tool mocks'}")


def _mock_servers() -> list[type[Runner]]:
    """The registered runners that serve tool mocks (for messages)."""
    from assay.core.plugins import registered

    return [r for r in registered().values() if getattr(r, "tool_mocks", None) == "served"]


__all__ = ["EXAMPLE_CONFIG", "MockSupport", "AgentReply", "CaseCutShort", "Conversation", "PlatformRunner", "case_reports",
           "converse", "scratch_object"]
