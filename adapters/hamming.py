"""Hamming, both directions, in one place: our cases and assertions into a test run; its results into evidence.

**Out.** Each case becomes one test configuration: the configured template test case
(``ASSAY_HAMMING_TEST_CASE_ID``; Hamming has no API to create test cases) with the case's situation as
its scenario: the situation's ``world`` as ``scenarioFacts`` and a ``persona`` whose name is the
caller's (the caller line up to its first comma) and whose prompt is our caller prompt
(:func:`assay.adapters.caller.caller_prompt`, shared with every vendor's simulated caller, less the
hang-up token only our own simulator answers; scripted ``turns`` become lines the persona says).

**Assertions in Hamming's slot.** An assertion with ``role: hamming`` goes into the run's
``selectedAssertionIds``. It names the Hamming assertion it stands for with the ``vendor.evaluation``
mechanism: ``params.vendor_id`` is the Hamming assertion's id (what the start request takes) and
``params.name`` its name (what results report as ``assertionName``). Hamming documents no way to list
its assertions, so nothing is looked up: the bundle is the record of which assertion is meant, and an
id Hamming does not know is refused by Hamming at submission. The id and the name are kept (in the
provider reference, and in the catalog's ``vendor_mappings``), so a result reported under another name
is a rename: never joined silently, it becomes an ``error`` evaluation naming both names.

**In.** One case run per case, matched by the test case run ids Hamming answered the submission with,
in order. The plain-string transcript becomes turns (``Speaker: text`` lines; agent and caller by
speaker name); ``duration`` (seconds) becomes ``duration_ms``. Evaluations, each on Hamming's own scale:

- ``test`` (``hamming:test``): the test case's PASSED / FAILED / ERROR as pass / fail / error;
- ``overall_score`` (``hamming:score``, scale 0-100): the run's overall assertion score (Hamming
  reports it per run, so every case run of the run carries it);
- ``assertion:<our key>`` (``hamming:assertion``, see :func:`~assay.core.evidence.native_evaluation_name`)
  for each of our assertions sent to Hamming: PASSED / FAILED / ERROR as pass / fail / error (an error
  is met null, never a failure); a Hamming assertion we did not send keeps Hamming's name;
- each metric (``latencyP50``, ``latencyP90``, ``interruptionCount``; ``hamming:metric``) as a score.

A test case Hamming reports as ERROR, or never finished (``PENDING`` in a run that ended), or with a
status its API does not list, or finished without a transcript (the evidence our checks read), is an
ERROR case run, never a FAIL.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.evidence import CaseRun, Evaluation, Turn, native_evaluation_name
from assay.core.redact import redact
from assay.core.runner import AssertionSpec, CaseSpec, RunJob

from .caller import END_TOKEN, caller_prompt
from .http import VendorApi, vendor_message

log = logging.getLogger(__name__)

VENDOR = "hamming"
KEY_SETTING = "ASSAY_HAMMING_API_KEY"
ROLE = "hamming"
"""The ``role`` that sends an assertion into Hamming's selected assertions."""
TERMINAL = frozenset({"COMPLETED", "FINISHED", "FAILED", "CANCELED", "SCORING_FAILED"})
"""Run statuses after which nothing changes: results are read then."""
VERDICTS = {"PASSED": "pass", "FAILED": "fail", "ERROR": "error"}
_CALLER = {"customer", "caller", "user", "human", "tester", "persona"}
_AGENT = {"agent", "assistant", "bot", "ai", "voice agent"}
_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,30}?)\s*:\s*(.*)$")
REF_VERSION = 1


def malformed(what: str, answer: Any) -> MalformedResponseError:
    """A 2xx answer off the documented shape, with Hamming's own words when the body carries an error."""
    said = vendor_message(answer, "") if isinstance(answer, Mapping) else ""
    return MalformedResponseError(VENDOR, 200, what + (f" (Hamming said: {said})" if said else ""))


def run_status(answer: Any, test_run: str) -> str:
    """The status a ``GET /test-runs/{id}/status`` answer reports. A status beyond the documented ones is
    read as not finished (polling goes on, bounded by the run's deadline)."""
    status = answer.get("status") if isinstance(answer, Mapping) else None
    if not isinstance(status, str):
        raise malformed(f"the status of test run {test_run} has no 'status'", answer)
    return status


def persona(situation: Mapping[str, Any]) -> dict[str, str]:
    """Hamming's caller persona for a situation: the caller's name and our caller prompt."""
    caller = str(situation.get("caller") or "A caller")
    prompt = "\n".join(line for line in caller_prompt(situation).splitlines() if END_TOKEN not in line)
    turns = [str(t) for t in situation.get("turns") or []]
    if turns:
        prompt += "\nSay these lines, in this order, one per turn:\n" + "\n".join(f"- {t}" for t in turns)
    return {"name": caller.split(",", 1)[0].strip() or "A caller", "prompt": prompt}


def configuration_for(case: CaseSpec, test_case_id: str) -> dict[str, Any]:
    """One case as a Hamming test configuration."""
    situation = case.situation
    cfg: dict[str, Any] = {"testCaseId": test_case_id, "persona": persona(situation)}
    if situation.get("world"):
        cfg["scenarioFacts"] = dict(situation["world"])
    return cfg


def slotted(job: RunJob) -> list[AssertionSpec]:
    """The job's assertions that go into Hamming's slot; a wrong mechanism there stops the run, named."""
    specs = [a for a in job.assertions if a.role == ROLE]
    for a in specs:
        if a.mechanism != "vendor.evaluation" or not a.params.get("name"):
            raise ConfigError(
                f"assertion {a.key!r} has role {ROLE!r} but mechanism {a.mechanism!r}: an assertion in Hamming's "
                "slot names a Hamming assertion with mechanism vendor.evaluation, params.vendor_id (its id at "
                "Hamming) and params.name (its name there); change the mechanism, or remove the role to have "
                "Assay judge it"
            )
        if not a.params.get("vendor_id"):
            raise ConfigError(
                f"assertion {a.key!r} (role {ROLE!r}) names Hamming assertion {a.params['name']!r} but not its id: "
                "Hamming selects assertions by id and offers no documented way to look one up by name; set "
                "params.vendor_id to the assertion's id, as Hamming's dashboard shows it"
            )
    return specs


def selected(specs: Sequence[AssertionSpec]) -> dict[str, tuple[str, str]]:
    """Our assertion id -> (Hamming's assertion id, the name we expect it reported under), from the bundle.

    One Hamming assertion named twice under different names is refused: results could match only one."""
    out = {a.assertion_id: (str(a.params["vendor_id"]), str(a.params["name"])) for a in specs}
    names: dict[str, set[str]] = {}
    for hid, name in out.values():
        names.setdefault(hid, set()).add(name)
    clashes = {hid: sorted(n) for hid, n in names.items() if len(n) > 1}
    if clashes:
        raise ConfigError("; ".join(f"Hamming assertion {hid} is named {' and '.join(map(repr, n))} by different "
                                    "assertions" for hid, n in sorted(clashes.items()))
                          + ": results report one name per id; give every assertion with that vendor_id the same name")
    return out


@dataclass(frozen=True)
class Submission:
    """What a submission must remember until its results are read: the provider reference, as JSON."""

    test_run: str
    case_runs: tuple[tuple[str, str], ...]
    """(Hamming's test case run id, our case id), in submission order."""
    assertions: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Our assertion id -> (Hamming's assertion id, its name at submission)."""

    def to_ref(self) -> str:
        return json.dumps({"v": REF_VERSION, "test_run": self.test_run, "case_runs": [list(c) for c in self.case_runs],
                           "assertions": {k: list(v) for k, v in sorted(self.assertions.items())}}, separators=(",", ":"))

    @classmethod
    def from_ref(cls, ref: str) -> "Submission":
        try:
            doc = json.loads(ref)
            if doc.get("v") != REF_VERSION:
                raise ValueError(f"version {doc.get('v')!r}, expected {REF_VERSION}")
            return cls(doc["test_run"], tuple((a, b) for a, b in doc["case_runs"]),
                       {k: (v[0], v[1]) for k, v in doc["assertions"].items()})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"provider reference {ref[:80]!r} is not a Hamming submission this build reads ({exc})") from None

    @classmethod
    def from_answer(cls, answer: Any, job: RunJob, assertions: dict[str, tuple[str, str]]) -> "Submission":
        """Read Hamming's answer to a start request: one test case run per case, in order."""
        runs = answer.get("testCaseRuns") if isinstance(answer, Mapping) else None
        if not isinstance(answer, Mapping) or not isinstance(answer.get("testRunId"), str) or not isinstance(runs, list):
            raise malformed("the start answer lacks testRunId or testCaseRuns", answer)
        ids = [r.get("id") for r in runs if isinstance(r, Mapping)]
        if len(ids) != len(job.cases) or not all(isinstance(i, str) for i in ids):
            raise MalformedResponseError(
                VENDOR, 200, f"Hamming started {len(ids)} test case runs for {len(job.cases)} cases; expected one per case")
        return cls(answer["testRunId"], tuple(zip(ids, (c.case_id for c in job.cases), strict=True)), assertions)


def turns(transcript: Any) -> list[Turn]:
    """A plain-string transcript as turns: ``Speaker: text`` lines; unlabelled lines continue the last turn.
    Text with no recognisable speaker at all is kept as one system turn, so nothing is lost."""
    if not isinstance(transcript, str) or not transcript.strip():
        return []
    out: list[dict[str, str]] = []
    for line in transcript.splitlines():
        m = _LINE.match(line)
        speaker = m.group(1).strip().lower() if m else ""
        role = "caller" if speaker in _CALLER else "agent" if speaker in _AGENT else None
        if role is not None:
            out.append({"role": role, "text": m.group(2).strip()})
        elif line.strip() and out:
            out[-1]["text"] = f"{out[-1]['text']} {line.strip()}".strip()
        elif line.strip():
            out.append({"role": "system", "text": line.strip()})
    return [Turn(role=t["role"], text=t["text"]) for t in out]  # type: ignore[arg-type]


def case_runs(job: RunJob, sub: Submission, answer: Any, run_status: str) -> tuple[list[CaseRun], list[str]]:
    """Hamming's results as one case run per case, and the warnings (renamed assertions) to log."""
    results = answer.get("results") if isinstance(answer, Mapping) else None
    if not isinstance(results, list):
        raise malformed("the results answer has no list 'results'", answer)
    by_id = {r["id"]: r for r in results if isinstance(r, Mapping) and isinstance(r.get("id"), str)}
    summary = answer.get("summary") if isinstance(answer.get("summary"), Mapping) else {}
    score = (summary.get("assertions") or {}).get("overallScore") if isinstance(summary.get("assertions"), Mapping) else None
    specs = {a.assertion_id: a for a in job.assertions}
    out, warnings = [], []
    for tcr, case_id in sub.case_runs:
        result = by_id.get(tcr)
        if result is None:
            out.append(CaseRun(case_id=case_id, status="error", provider_ref=tcr,
                               error=f"Hamming's results (run {run_status}) have no test case run {tcr}"))
            continue
        own = [a for aid, a in specs.items() if aid in sub.assertions and a.case_id in (None, case_id)]
        evals, renamed = _evaluations(result, own, sub, score)
        warnings += renamed
        status = str(result.get("status"))
        error = None
        if status == "ERROR":
            error = "Hamming reported the test case as ERROR (the call could not be completed or scored)"
        elif status == "PENDING" or status not in VERDICTS:
            error = (f"Hamming never finished this test case ({status}); the run ended {run_status}" if status == "PENDING"
                     else f"Hamming reported test case status {status!r}, which its API does not list; the run ended {run_status}")
        elif not turns(result.get("transcript")):
            error = (f"Hamming reported the test case {status} without a transcript: nothing to check what was said "
                     "against (its own verdicts are in the provider payload)")
        duration = result.get("duration")
        out.append(CaseRun(
            case_id=case_id, status="error" if error else "executed", error=error,
            transcript=turns(result.get("transcript")), provider_ref=tcr, provider_payload=redact(dict(result)),
            duration_ms=float(duration) * 1000 if isinstance(duration, int | float) else None, evaluations=evals,
        ))
    return out, warnings


def _evaluations(result: Mapping[str, Any], own: list[AssertionSpec], sub: Submission,
                 score: Any) -> tuple[list[Evaluation], list[str]]:
    items = [a for a in result.get("assertionResults") or [] if isinstance(a, Mapping)]
    by_id = {a.get("assertionId"): a for a in items}
    passed = sum(a.get("status") == "PASSED" for a in items)
    status = str(result.get("status"))
    evals = [Evaluation.from_vendor(
        name="test", evaluator="hamming:test", verdict=VERDICTS.get(status, "unknown"),  # type: ignore[arg-type]
        rationale=f"Hamming: {status} ({passed} of {len(items)} assertions passed)")]
    if isinstance(score, int | float):
        evals.append(Evaluation.from_vendor(
            name="overall_score", evaluator="hamming:score", score=float(score), scale_min=0.0, scale_max=100.0,
            rationale="the run's overall assertion score (Hamming scores the run, not each case)"))
    warnings = []
    for spec in own:
        hid, name = sub.assertions[spec.assertion_id]
        item = by_id.get(hid)
        verdict, rationale = _assertion_verdict(spec, hid, name, item)
        if item is not None and item.get("assertionName") not in (None, name):
            warnings.append(rationale)
            log.warning("%s", rationale)
        evals.append(Evaluation.from_vendor(
            name=native_evaluation_name(spec.key), evaluator="hamming:assertion", verdict=verdict,  # type: ignore[arg-type]
            rationale=rationale, raw=redact(dict(item)) if item is not None else None))
    mapped = {hid for hid, _ in sub.assertions.values()}
    for item in items:
        if item.get("assertionId") not in mapped:
            evals.append(Evaluation.from_vendor(
                name=str(item.get("assertionName") or item.get("assertionId")), evaluator="hamming:assertion",
                verdict=VERDICTS.get(str(item.get("status")), "unknown"),  # type: ignore[arg-type]
                rationale=item.get("reason"), raw=redact(dict(item))))
    metrics = result.get("metrics") if isinstance(result.get("metrics"), Mapping) else {}
    for key, value in sorted(metrics.items()):
        if isinstance(value, int | float) and not isinstance(value, bool):
            evals.append(Evaluation.from_vendor(name=key, evaluator="hamming:metric", score=float(value),
                                                rationale=f"Hamming's metric {key}"))
    return evals, warnings


def _assertion_verdict(spec: AssertionSpec, hid: str, name: str, item: Mapping[str, Any] | None) -> tuple[str, str]:
    if item is None:
        return "error", f"Hamming returned no result for assertion {name!r} ({hid}), sent for {spec.key!r}"
    reported = item.get("assertionName")
    if reported is not None and reported != name:
        return "error", (
            f"Hamming assertion {hid} was sent for {spec.key!r} as {name!r} but its result is reported as "
            f"{reported!r}: it was renamed at Hamming, so the result is not taken as {spec.key!r}; check the "
            f"assertion at Hamming and update params.name in the bundle"
        )
    status = str(item.get("status"))
    verdict = VERDICTS.get(status, "unknown")
    unnamed = "" if reported is not None else " (Hamming reported no name: joined by its id)"
    return verdict, str(item.get("reason") or f"Hamming: {name!r} {status}") + unnamed


class HammingApi(VendorApi):
    """Hamming's endpoints that Assay uses. A refused key (401/403) is a :class:`ConfigError` naming
    ``ASSAY_HAMMING_API_KEY``, never the key."""

    label = "Hamming"
    key_setting = KEY_SETTING

    def start(self, body: dict[str, Any]) -> Any:
        """Start a test run (billed: each case is a phone call). Hamming documents no idempotency and no list
        of test runs, so a start whose answer was lost is never sent again: the run ends with an error saying
        Hamming may hold a test run for the agent."""
        return self._call("POST", "/test-runs/test-inbound-agent", body, creates=True,
                          where=f"for a new test run of agent {body.get('agentId')} in Hamming's dashboard")

    def status(self, test_run: str) -> Any:
        return self._call("GET", f"/test-runs/{test_run}/status")

    def results(self, test_run: str) -> Any:
        return self._call("GET", f"/test-runs/{test_run}/results")


__all__ = ["KEY_SETTING", "malformed", "run_status", "HammingApi", "ROLE", "TERMINAL", "VENDOR", "Submission", "case_runs", "persona", "selected", "slotted",
           "configuration_for", "turns"]
