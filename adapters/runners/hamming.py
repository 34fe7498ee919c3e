"""``hamming``: voice tests run by Hamming against the deployed assistant's inbound number; asynchronous.

The thing under test is the assistant already deployed at ``ASSAY_HAMMING_PHONE_NUMBERS``, registered
with Hamming as agent ``ASSAY_HAMMING_AGENT_ID``; the suite's compiled config only says which suite
this is (Hamming never sees it, and the case runs carry no artefact). :meth:`HammingRunner.submit`
starts one test run for the whole job and returns a provider reference that holds everything the
results must be matched with (see :class:`assay.adapters.hamming.Submission`);
:meth:`HammingRunner.collect` polls the run's status and, once it is terminal, reads the results
into one report. Hamming may answer hours later or never: the run waits under its deadline, and the
``collect`` flow polls it (``assay collect``).

Every request goes through :class:`~assay.adapters.http.VendorClient` (one per runner instance, shared
by the threads of a collect pass): 429 waits what ``Retry-After`` says, a read is retried after a 5xx or
a body cut short, the rest is raised classified; a refused key names ``ASSAY_HAMMING_API_KEY``. Starting
a test run bills calls, so it is never sent twice: a start whose answer was lost ends the run with an
error saying Hamming may hold a test run. Translation both ways lives in :mod:`assay.adapters.hamming`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import UTC, datetime
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from assay.core.errors import ConfigError
from assay.core.evidence import Report
from assay.core.mechanisms import mechanisms_of
from assay.core.runner import CaseSpec, Runner, RunJob
from assay.core.settings import Settings

from .. import hamming as h
from ..http import RetryPolicy, VendorClient



class HammingRunner(Runner):
    """Submits a job as one Hamming test run; collects its results when Hamming has finished."""

    name: ClassVar[str] = "hamming"
    mechanisms: ClassVar[frozenset[str]] = frozenset(
        {"transcript.contains", "transcript.not_contains", "transcript.regex", "transcript.not_regex",
         "transcript.max_turns",
         "transcript.max_latency", "rubric"}
    ) | mechanisms_of("vendor")
    """What its evidence honestly supports: a transcript (no turn timings, no cost), the call's duration
    and Hamming's own evaluations. Not tool calls, not structural checks, not response latency, no timing.*
    mechanism (no per-turn timings)."""
    synchronous: ClassVar[bool] = False
    repeats: ClassVar[bool] = False  # results come back keyed by test case, one per case
    tool_mocks: ClassVar[str] = "refused"  # it calls the deployed agent, whose tools answer for themselves
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        client: VendorClient | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.settings = settings or Settings()
        self._client, self._retry, self._sleep = client, retry or RetryPolicy(), sleep
        self._lock = threading.Lock()

    @property
    def client(self) -> VendorClient:
        """The Hamming client, made on first use (so listing or loading the runner needs no key)."""
        with self._lock:
            if self._client is None:
                key = self.settings.hamming_api_key
                if key is None:
                    raise ConfigError(f"runner 'hamming' needs a Hamming API key: set {h.KEY_SETTING}")
                self._client = VendorClient(
                    h.VENDOR, self.settings.hamming_base_url, {"Authorization": f"Bearer {key.get_secret_value()}"},
                    retry=self._retry, sleep=self._sleep,
                )
            return self._client

    @property
    def api(self) -> h.HammingApi:
        """Hamming's endpoints over :attr:`client`: a refused key names ``ASSAY_HAMMING_API_KEY``."""
        return h.HammingApi(self.client)

    def close(self) -> None:
        """Close the HTTP client (a later request opens a new one)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _target(self) -> tuple[str, list[str], str]:
        s = self.settings
        missing = [env for env, value in (("ASSAY_HAMMING_AGENT_ID", s.hamming_agent_id),
                                          ("ASSAY_HAMMING_PHONE_NUMBERS", s.hamming_phone_numbers),
                                          ("ASSAY_HAMMING_TEST_CASE_ID", s.hamming_test_case_id)) if not value]
        if missing:
            raise ConfigError(
                f"runner 'hamming' calls a deployed assistant through Hamming and needs {', '.join(missing)} "
                "(the Hamming agent, its inbound numbers as a JSON list, and the template test case)"
            )
        return str(s.hamming_agent_id), list(s.hamming_phone_numbers), str(s.hamming_test_case_id)

    # -- the asynchronous contract --------------------------------------------------------------------
    def submit(self, job: RunJob) -> str:
        """Start one Hamming test run for the job; the provider reference is a :class:`~h.Submission`."""
        agent, phones, test_case = self._target()
        specs = h.slotted(job)
        api = self.api
        api.client.until(job.waits_until)
        mapping = h.selected(specs)
        body: dict[str, Any] = {
            "agentId": agent, "phoneNumbers": phones,
            "testConfigurations": [h.configuration_for(case, test_case) for case in job.cases],
        }
        if mapping:
            body["selectedAssertionIds"] = sorted({hid for hid, _ in mapping.values()})
        answer = api.start(body)
        return h.Submission.from_answer(answer, job, mapping).to_ref()

    def vendor_mappings(self, job: RunJob, provider_ref: str) -> dict[str, tuple[str, str | None]]:
        """Our assertion id -> (Hamming's assertion id, its name at submission), for the catalog to keep."""
        return dict(h.Submission.from_ref(provider_ref).assertions)

    def collect(self, job: RunJob, provider_ref: str) -> Iterator[Report] | None:
        """None while Hamming is working; else the results as reports (idempotent request ids)."""
        sub = h.Submission.from_ref(provider_ref)
        api = self.api
        until = job.waits_until
        # waits end at the run's deadline; a last look after it (the collect flow's) is not bounded
        api.client.until(until if until is not None and until > datetime.now(UTC) else None)
        status = h.run_status(api.status(sub.test_run), sub.test_run)
        if status not in h.TERMINAL:
            return None
        runs, warnings = h.case_runs(job, sub, api.results(sub.test_run), status)
        reports = [
            dataclasses.replace(
                Report.from_case_runs(f"{job.run_id}:{self.name}:{sub.test_run}:{n}", runs[i : i + self.batch_size]),
                meta={"provider_status": status, "warnings": warnings if n == 0 else []},
            )
            for n, i in enumerate(range(0, len(runs), self.batch_size))
        ]
        return iter(reports)

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        return "config", {"config": {"name": "Deployed inbound line", "prompt": "Reached by phone through Hamming."}}


__all__ = ["HammingRunner"]
