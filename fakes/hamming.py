"""A fake Hamming: voice test runs against an inbound agent, run asynchronously, polled for status and results.

It speaks the shapes Hamming's own CI workflow uses (there is no published reference for the current
test-run API; see the Hamming section of the vendor notes):

- ``POST /test-runs/test-inbound-agent`` ``{agentId, phoneNumbers, testConfigurations:[{testCaseId} |
  {tagId}, overrides?, scenarioFacts?, persona?:{name, voice?, prompt}], samplingCount?,
  selectedAssertionIds?}`` -> ``{testRunId, resultsUrl, testCaseRuns:[{id, testCaseId, status}]}``
  (one test case run per configuration and sample, in order; a ``tagId`` expands to its test cases);
- ``GET /test-runs/{id}/status`` -> ``{status}`` (404 for an unknown run): ``RUNNING``, then
  ``SCORING`` for the last fifth of its time, then the final status;
- ``GET /test-runs/{id}/results`` -> ``{summary, results}`` with each test case run's status,
  assertion results, metrics, a plain-string transcript and its duration (seconds).

Nothing else is served: Hamming documents no other call, so an adapter may use no other. The
assertions, the agent and the template test case a real account holds (made in Hamming's dashboard)
are given to the constructor instead (``assertions``: id -> name); a start request selecting an id the
account lacks is refused. The answers follow our reading of the API (:mod:`.hamming_reading`), which
the fake's tests check them against and ``faults.wild`` strays from (:mod:`.wild`). Inventory kinds:
``agents``, ``test_cases``, ``assertions``, ``test_runs``.

Steering (:class:`~.base.Faults`): ``never_finish``; ``finish_after`` (seconds, fixed);
``rename_assertions`` (id -> the name results report); and ``scripts``:

- ``finish_between: [lo, hi]``: each new run finishes after a random time in that range (seeded);
- ``final_status``: the status a run ends in (default ``COMPLETED``; ``FAILED``, ``CANCELED``,
  ``SCORING_FAILED`` shape the results accordingly);
- ``assertion_status: {assertion id: PASSED|FAILED|ERROR}`` and ``reasons: {assertion id: text}``;
  ``persona_status: {persona name or "*": {assertion id: ...}}`` says it for one persona's calls first;
- ``case_status: {persona name or "*": ERROR|...}``, ``transcript: {persona name or "*": text}``.

Results are read from ``scripts`` when asked for, so a test can change them while a run is going.
"""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

from .base import Answer, FakeRequest, FakeVendor
from .hamming_reading import READING, hamming_reading

TERMINAL = ("COMPLETED", "FINISHED", "FAILED", "CANCELED", "SCORING_FAILED")
_SHAPES = READING["components"]["schemas"]
_START_KEYS = set(_SHAPES["StartRequest"]["properties"])
_CONFIG_KEYS = set(_SHAPES["TestConfiguration"]["properties"])
_PERSONA_KEYS = set(_SHAPES["TestConfiguration"]["properties"]["persona"]["properties"])
DEFAULT_ASSERTIONS = {"as-greeting": "Greets the caller", "as-resolution": "Resolves the caller's request"}
"""The assertions the fake's account holds unless given others (id -> name)."""


class FakeHamming(FakeVendor):
    """Hamming on loopback. ``assertions`` are the account's assertions (id -> name; default :data:`DEFAULT_ASSERTIONS`)."""

    name = "hamming"
    document = hamming_reading()

    def __init__(
        self,
        key: str = "test-key",
        *,
        agent_id: str = "fake-agent",
        test_case_id: str = "tc-template",
        assertions: dict[str, str] | None = None,
        seed: int = 0,
        **kwargs: Any,
    ):
        self.agent_id, self.test_case_id = agent_id, test_case_id
        self.seeded_assertions = dict(DEFAULT_ASSERTIONS if assertions is None else assertions)
        self.rng = random.Random(seed)
        self.in_flight = 0
        self.peak_in_flight = 0
        """Requests being answered at once (latency included): what a concurrency bound is checked against."""
        self._count = threading.Lock()
        super().__init__(key, **kwargs)
        self._seed()

    def _seed(self) -> None:
        self.objects("agents")[self.agent_id] = {"id": self.agent_id, "name": "Inbound line"}
        self.objects("test_cases")[self.test_case_id] = {"id": self.test_case_id, "name": "Template", "tags": ["assay"]}
        for aid, name in self.seeded_assertions.items():
            self.objects("assertions")[aid] = {"id": aid, "name": name, "description": ""}

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self.in_flight = self.peak_in_flight = 0
            self._seed()

    def setup_routes(self) -> None:
        self.route("POST", "/test-runs/test-inbound-agent", self.start_run)
        self.route("GET", "/test-runs/{id}/status", self.run_status)
        self.route("GET", "/test-runs/{id}/results", self.run_results)

    def _answer(self, req: FakeRequest) -> tuple[int, Any, dict[str, str]]:
        with self._count:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return super()._answer(req)
        finally:
            with self._count:
                self.in_flight -= 1

    # -- starting a run --------------------------------------------------------------------------------
    def start_run(self, req: FakeRequest) -> Answer:
        body = req.json()
        problem = self._invalid(body)
        if problem:
            return problem
        with self.lock:
            configs = self._expand(body["testConfigurations"])
            if isinstance(configs, tuple):
                return configs
            run_id = f"tr_{uuid.uuid4().hex[:12]}"
            samples = int(body.get("samplingCount") or 1)
            case_runs = [
                {"id": f"tcr_{uuid.uuid4().hex[:12]}", "testCaseId": tc, "config": cfg}
                for tc, cfg in configs for _ in range(samples)
            ]
            now = self.clock()
            self.objects("test_runs")[run_id] = {
                "id": run_id, "started": now, "finish_at": self._finish_at(now),
                "case_runs": case_runs, "assertion_ids": list(body.get("selectedAssertionIds") or []),
                "final_status": str(self.faults.scripts.get("final_status", "COMPLETED")),
            }
        return 201, {
            "testRunId": run_id,
            "resultsUrl": f"/test-runs/{run_id}/results",
            "testCaseRuns": [{"id": c["id"], "testCaseId": c["testCaseId"], "status": "CREATED"} for c in case_runs],
        }

    def _finish_at(self, now: float) -> float | None:
        f = self.faults
        if f.never_finish:
            return None
        between = f.scripts.get("finish_between")
        if between:
            return now + self.rng.uniform(float(between[0]), float(between[1]))
        return now + float(f.finish_after or 0.0)

    def _invalid(self, body: Any) -> Answer | None:
        if not isinstance(body, dict):
            return 400, self.error_body(400, "the body must be a JSON object")
        unknown = sorted(set(body) - _START_KEYS)
        if unknown:
            return 400, self.error_body(400, f"unknown fields {unknown}; allowed: {sorted(_START_KEYS)}")
        if body.get("agentId") not in self.objects("agents"):
            return 404, self.error_body(404, f"agent {body.get('agentId')!r} not found")
        phones = body.get("phoneNumbers")
        if not isinstance(phones, list) or not phones or not all(isinstance(p, str) and p for p in phones):
            return 400, self.error_body(400, "phoneNumbers must be a non-empty list of phone numbers")
        configs = body.get("testConfigurations")
        if not isinstance(configs, list) or not configs:
            return 400, self.error_body(400, "testConfigurations must be a non-empty list")
        samples = body.get("samplingCount", 1)
        if not isinstance(samples, int) or isinstance(samples, bool) or not 1 <= samples <= 10:
            return 400, self.error_body(400, f"samplingCount must be an integer from 1 to 10, not {samples!r}")
        selected = body.get("selectedAssertionIds") or []
        if not isinstance(selected, list) or not all(isinstance(a, str) for a in selected):
            return 400, self.error_body(400, "selectedAssertionIds must be a list of assertion ids")
        missing = sorted(a for a in selected if a not in self.objects("assertions"))
        if missing:
            return 400, self.error_body(400, f"unknown assertion ids {missing}")
        for i, cfg in enumerate(configs):
            problem = _config_problem(cfg)
            if problem:
                return 400, self.error_body(400, f"testConfigurations[{i}]: {problem}")
        return None

    def _expand(self, configs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]] | Answer:
        out: list[tuple[str, dict[str, Any]]] = []
        cases = self.objects("test_cases")
        for cfg in configs:
            if "testCaseId" in cfg:
                if cfg["testCaseId"] not in cases:
                    return 404, self.error_body(404, f"test case {cfg['testCaseId']!r} not found")
                out.append((cfg["testCaseId"], cfg))
            else:
                tagged = sorted(tc for tc, c in cases.items() if cfg["tagId"] in c.get("tags", []))
                if not tagged:
                    return 404, self.error_body(404, f"no test case has tag {cfg['tagId']!r}")
                out.extend((tc, cfg) for tc in tagged)
        return out

    # -- polling ---------------------------------------------------------------------------------------
    def _run(self, req: FakeRequest) -> dict[str, Any] | None:
        with self.lock:
            return self.objects("test_runs").get(req.params["id"])

    def _state(self, run: dict[str, Any]) -> str:
        finish = run["finish_at"]
        now = self.clock()
        if finish is None or now < finish - (finish - run["started"]) / 5:
            return "RUNNING"
        return "SCORING" if now < finish else run["final_status"]

    def run_status(self, req: FakeRequest) -> Answer:
        run = self._run(req)
        if run is None:
            return 404, self.error_body(404, f"test run {req.params['id']!r} not found")
        return 200, {"status": self._state(run)}

    def run_results(self, req: FakeRequest) -> Answer:
        run = self._run(req)
        if run is None:
            return 404, self.error_body(404, f"test run {req.params['id']!r} not found")
        status = self._state(run)
        with self.lock:
            scripts, renamed = dict(self.faults.scripts), dict(self.faults.rename_assertions)
            catalogue = {a: dict(v) for a, v in self.objects("assertions").items()}
        results = [
            self._case_result(i, c, run, status, scripts, renamed, catalogue) for i, c in enumerate(run["case_runs"])
        ]
        graded = [a for r in results for a in r["assertionResults"] if a["status"] != "ERROR"]
        summary: dict[str, Any] = {
            "id": run["id"], "status": status, "totalTests": len(results),
            "passedTests": sum(r["status"] == "PASSED" for r in results),
            "failedTests": sum(r["status"] == "FAILED" for r in results),
        }
        if graded and status in TERMINAL:
            score = round(100 * sum(a["status"] == "PASSED" for a in graded) / len(graded), 1)
            summary["assertions"] = {"overallScore": score, "categories": [{"name": "all", "score": score}]}
        return 200, {"summary": summary, "results": results}

    def _case_result(self, i: int, case: dict[str, Any], run: dict[str, Any], status: str,
                     scripts: dict[str, Any], renamed: dict[str, str], catalogue: dict[str, Any]) -> dict[str, Any]:
        persona = (case["config"].get("persona") or {}).get("name") or f"Caller {i + 1}"
        out: dict[str, Any] = {"id": case["id"], "testCaseId": case["testCaseId"], "assertionResults": []}
        if status not in TERMINAL or status == "CANCELED":
            return {**out, "status": "PENDING"}
        own = _pick(scripts.get("case_status"), persona)
        if status == "FAILED" or own == "ERROR":
            return {**out, "status": "ERROR"}
        for aid in run["assertion_ids"]:
            own_status = _pick(scripts.get("persona_status"), persona) or {}
            verdict = "ERROR" if status == "SCORING_FAILED" else own_status.get(
                aid, (scripts.get("assertion_status") or {}).get(aid, "PASSED"))
            item = {"assertionId": aid, "assertionName": renamed.get(aid) or catalogue.get(aid, {}).get("name", aid),
                    "status": verdict}
            reason = (scripts.get("reasons") or {}).get(aid)
            if reason:
                item["reason"] = reason
            out["assertionResults"].append(item)
        failed = any(a["status"] == "FAILED" for a in out["assertionResults"])
        transcript = _pick(scripts.get("transcript"), persona) or (
            f"Agent: Thanks for calling, how can I help you today?\nCustomer: Hi, this is {persona}.\n"
            f"Agent: Of course, {persona}. Let me look into that for you.\nCustomer: Thank you, goodbye."
        )
        return {
            **out, "status": own or ("FAILED" if failed else "PASSED"), "transcript": transcript,
            "duration": round(30.0 + 7.5 * i, 1),
            "metrics": {"latencyP50": 800 + 10 * i, "latencyP90": 1400 + 10 * i, "interruptionCount": i % 2},
            "recordingUrl": f"https://recordings.invalid/{case['id']}.wav",
        }


def _pick(table: Any, persona: str) -> Any:
    """A per-persona scripted value (by persona name, else ``"*"``), or None."""
    if not isinstance(table, dict):
        return None
    return table.get(persona, table.get("*"))


def _config_problem(cfg: Any) -> str | None:
    if not isinstance(cfg, dict):
        return "must be an object"
    unknown = sorted(set(cfg) - _CONFIG_KEYS)
    if unknown:
        return f"unknown fields {unknown}; allowed: {sorted(_CONFIG_KEYS)}"
    if ("testCaseId" in cfg) == ("tagId" in cfg):
        return "give exactly one of testCaseId and tagId"
    if "scenarioFacts" in cfg and not isinstance(cfg["scenarioFacts"], dict):
        return "scenarioFacts must be an object"
    if "overrides" in cfg and not isinstance(cfg["overrides"], dict):
        return "overrides must be an object"
    persona = cfg.get("persona")
    if persona is not None:
        if not isinstance(persona, dict) or set(persona) - _PERSONA_KEYS:
            return f"persona must be an object with {sorted(_PERSONA_KEYS)}"
        if not all(isinstance(persona.get(k), str) and persona[k].strip() for k in ("name", "prompt")):
            return "persona.name and persona.prompt must be non-empty strings"
    return None


__all__ = ["DEFAULT_ASSERTIONS", "TERMINAL", "FakeHamming"]
