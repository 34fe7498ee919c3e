"""Vendors' call exports read as call-set lines: VAPI calls, ElevenLabs conversations, a Hamming test run's
results. One format per vendor (:data:`FORMATS`); its reader returns an :class:`ExportedCall` per record, whose
``line`` is a call-set line (:mod:`assay.core.callset`) without its ``case``.

An export is one object, a JSON list of them, or JSON Lines of them (:mod:`.export_files`); each object is a
record or the vendor's envelope of records:

- **VAPI**: a Call (``GET /call/{id}``; ``GET /call`` is a list of them), or a server message whose ``type`` is
  ``end-of-call-report`` (``{"message": {...}}``, as the webhook posts it, or the message alone): its call is
  ``message.call``, read with the report's ``artifact``, ``analysis``, ``endedReason``, ``cost`` and times,
  which are final. Any other server message carries no finished call and is refused.
- **ElevenLabs**: a conversation (``GET /v1/convai/conversations/{id}``), or a post-call webhook body of type
  ``post_call_transcription`` (the conversation is its ``data``). ``post_call_audio`` and
  ``call_initiation_failure`` bodies carry no conversation, and the conversations list (``{"conversations":
  [...]}``) only summaries without transcripts: each is refused, saying what to export instead.
- **Hamming**: a test run's results (``GET /test-runs/{id}/results``: ``{summary, results[]}``) or one result.

Costs are kept in the vendor's own unit with the unit named (``vendor_cost``, ``vendor_cost_unit``), and
``cost_usd`` holds only a figure the vendor gives in dollars: VAPI ``cost`` is USD; ElevenLabs
``metadata.cost`` is credits (never dollars), and its ``metadata.cost_fiat``, when given, is the USD figure;
Hamming's results give no cost.

How each record reads:

- **VAPI**. Turns from ``artifact.messages`` (``user`` -> caller, ``bot`` -> agent, ``system``): ``t`` is
  ``secondsFromStart``; ``end_t`` is ``t`` plus the turn's length, taken from ``endTime - time`` (both epoch milliseconds) when given, else from ``duration`` in seconds as
  VAPI's published document declares it. ``tool_calls`` messages are paired with their
  ``tool_call_result`` by ``toolCallId``. ``analysis.successEvaluation`` (``true``/``false``, ``pass``/``fail``;
  any other rubric's answer is kept with verdict ``unknown``) is the evaluation ``successEvaluation``, evaluator
  ``vapi:analysis``. A call whose ``status`` is not ``ended``, or whose ``endedReason`` names an error, a fault
  or a failure, did not execute (``error``).
- **ElevenLabs**. Turns, tools and evaluations are read exactly as the ``elevenlabs_chat`` runner reads a simulated conversation
  (:func:`assay.adapters.elevenlabs.read_conversation`, :func:`~assay.adapters.elevenlabs.analysis_evaluations`):
  ``t`` is ``time_in_call_secs``, and ``end_t`` stays unknown. Taking the next turn's start as a turn's end
  would make every response latency exactly zero, so ``transcript.response_latency`` would pass on evidence that
  measured nothing; unknown, it is undetermined instead. ``status: failed`` did not execute.
- **Hamming**. The plain-string transcript is split into turns by speaker (:func:`assay.adapters.hamming.turns`), without timings. ``status`` is the evaluation
  ``test`` (``hamming:test``), each ``assertionResults[]`` an evaluation named by its ``assertionName``
  (``hamming:assertion``), each metric ``hamming:metric``: the names the ``hamming`` runner uses. ``ERROR`` (and
  anything but ``PASSED``/``FAILED``) did not execute.

Every vendor's object as received (a webhook body whole) is kept, redacted, as the line's
``provider_payload``. ``metadata`` is what matching reads (VAPI ``metadata``; ElevenLabs ``conversation_initiation_client_data.dynamic_variables``, then
``metadata``; Hamming a result's ``metadata`` object, when the export has one). A record that is not the shape
above is one problem naming the record and the field; :func:`read_export` raises them all at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.core.errors import CallExportError, MalformedResponseError
from assay.core.redact import redact



@dataclass
class ExportedCall:
    """One vendor record read as a call: its call-set line (no ``case`` yet) and what matching and drafting need."""

    line: dict[str, Any]
    """A call-set line without ``case``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The call's own metadata, where ``--match`` looks for the case key."""
    verdict: str = "unknown"
    """The vendor's own overall verdict: ``fail`` when any of its evaluations failed, else ``pass`` when one
    passed, else ``unknown``; ``error`` when the call did not execute."""
    summary: str | None = None
    """The vendor's summary of the call, when it gives one (what the caller wanted)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Values the vendor extracted from the call (VAPI ``structuredData``, ElevenLabs ``data_collection_results``)."""


class _Bad(Exception):
    """One problem with one record: the field and what is wrong."""

    def __init__(self, where: str, what: str):
        super().__init__(f"{where}: {what}")


def _need(record: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str, where: str = "") -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or value == "":
        raise _Bad(f"{where}{key}", f"expected {what}, got {json.dumps(value)[:60]}")
    return value


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _costs(amount: float | None, unit: str, usd: float | None = None) -> dict[str, Any]:
    """The vendor's own cost in its own unit, and ``cost_usd`` only from a figure the vendor gives in dollars."""
    dollars = amount if unit == "USD" else usd
    return {"cost_usd": dollars, "vendor_cost": amount, "vendor_cost_unit": unit if amount is not None else None}


def _overall(evaluations: list[dict[str, Any]], error: str | None) -> str:
    if error:
        return "error"
    verdicts = {e.get("verdict") for e in evaluations}
    return "fail" if "fail" in verdicts else "pass" if "pass" in verdicts else "unknown"


def _finish(vendor: str, ref: str, record: Mapping[str, Any], line: dict[str, Any], **extra: Any) -> ExportedCall:
    line = {"call_id": f"{vendor}-{ref}", **line, "provider": vendor, "provider_ref": ref,
            "provider_payload": redact(dict(record))}
    line = {k: v for k, v in line.items() if v not in (None, [], "")}
    return ExportedCall(line=line, verdict=_overall(line.get("evaluations", []), line.get("error")), **extra)


# ------------------------------------------------------------------------------------ VAPI

_VAPI_ROLES = {"user": "caller", "bot": "agent", "assistant": "agent", "system": "system"}
_VAPI_PASS, _VAPI_FAIL = {"true", "pass", "passed", "success"}, {"false", "fail", "failed", "failure"}


def vapi_call(record: Mapping[str, Any]) -> ExportedCall:
    """One VAPI Call."""
    from .vapi import _arguments, _result

    ref = _need(record, "id", str, "the call's id (a string)")
    artifact = record.get("artifact") or {}
    messages = _need(artifact, "messages", list, "a list of messages", "artifact.") if artifact else []
    transcript, calls, results = [], [], {}
    for i, m in enumerate(messages):
        where = f"artifact.messages[{i}]."
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise _Bad(f"{where}role", "expected user, bot, system, tool_calls or tool_call_result")
        t = _number(m.get("secondsFromStart"))
        if m["role"] in _VAPI_ROLES:
            text = m.get("message")
            if not isinstance(text, str):
                raise _Bad(f"{where}message", f"a {m['role']} message has text; got {json.dumps(text)[:40]}")
            span = _number(m.get("endTime")), _number(m.get("time"))
            length = (span[0] - span[1]) / 1000 if None not in span else _number(m.get("duration"))
            end = t + length if t is not None and length is not None and length >= 0 else None
            transcript.append({"role": _VAPI_ROLES[m["role"]], "text": text, "t": t, "end_t": end})
        elif m["role"] == "tool_calls":
            for k, c in enumerate(_need(m, "toolCalls", list, "a list of tool calls", where)):
                fn = c.get("function") if isinstance(c, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
                    raise _Bad(f"{where}toolCalls[{k}].function.name", "expected the tool's name")
                calls.append((c.get("id"), {"name": fn["name"], "arguments": _arguments(fn.get("arguments")), "t": t}))
        elif m["role"] == "tool_call_result":
            results[m.get("toolCallId")] = _result(m.get("result"))
        else:
            raise _Bad(f"{where}role", f"{m['role']!r} is not user, bot, system, tool_calls or tool_call_result")
    tool_calls = [{**call, "result": results.get(cid), "is_error": False} for cid, call in calls]
    analysis = record.get("analysis") or {}
    evaluations = []
    verdict = analysis.get("successEvaluation")
    if verdict is not None:
        said = str(verdict).strip().lower()
        evaluations.append({"name": "successEvaluation", "evaluator": "vapi:analysis",
                            "raw": {"successEvaluation": verdict},
                            "verdict": "pass" if said in _VAPI_PASS else "fail" if said in _VAPI_FAIL else "unknown",
                            "rationale": analysis.get("summary")})  # fmt: skip
    reason, status = str(record.get("endedReason") or ""), record.get("status")
    error = None
    if status not in (None, "ended") or any(w in reason for w in ("error", "fault", "failed")):
        error = f"VAPI: the call did not complete (status {status}, endedReason {reason or 'none'})"
    started, ended = record.get("startedAt"), record.get("endedAt")
    duration = None
    if isinstance(started, str) and isinstance(ended, str):
        try:
            duration = (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds() * 1000
        except ValueError:
            raise _Bad("endedAt", "expected ISO 8601 times in startedAt and endedAt") from None
    line = {"started_at": started, "duration_ms": duration, **_costs(_number(record.get("cost")), "USD"),
            "transcript": transcript, "tool_calls": tool_calls, "evaluations": evaluations, "error": error}
    structured = analysis.get("structuredData")
    return _finish("vapi", ref, record, line, metadata=dict(record.get("metadata") or {}),
                   summary=analysis.get("summary"), facts=dict(structured) if isinstance(structured, Mapping) else {})


# ------------------------------------------------------------------------------------ ElevenLabs

def elevenlabs_conversation(record: Mapping[str, Any]) -> ExportedCall:
    """One ElevenLabs conversation."""
    from .elevenlabs import analysis_evaluations, read_conversation

    ref = _need(record, "conversation_id", str, "the conversation's id (a string)")
    turns = _need(record, "transcript", list, "a list of turns")
    analysis = record.get("analysis")
    try:
        spoken, tools = read_conversation({"simulated_conversation": turns})
        evaluations = analysis_evaluations(record) if isinstance(analysis, Mapping) else []
    except MalformedResponseError as exc:
        raise _Bad("transcript" if "turn" in exc.vendor_message else "analysis", exc.vendor_message) from None
    meta = record.get("metadata") or {}
    started = _number(meta.get("start_time_unix_secs"))
    seconds = _number(meta.get("call_duration_secs"))
    error = None
    if record.get("status") == "failed":
        error = f"ElevenLabs: the conversation failed (status {record['status']})"
    line = {"started_at": datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z") if started else None,
            "duration_ms": seconds * 1000 if seconds is not None else None,
            **_costs(_number(meta.get("cost")), "credits", usd=_number(meta.get("cost_fiat"))),
            "transcript": [t.model_dump() for t in spoken],
            "tool_calls": [c.model_dump() for c in tools],
            "evaluations": [e.model_dump(exclude={"met", "value"}) for e in evaluations], "error": error}
    client = (record.get("conversation_initiation_client_data") or {}).get("dynamic_variables") or {}
    collected = (analysis or {}).get("data_collection_results") or {}
    facts = {k: v.get("value") for k, v in collected.items() if isinstance(v, Mapping) and v.get("value") is not None}
    summary = (analysis or {}).get("transcript_summary")
    return _finish("elevenlabs", ref, record, line, metadata={**meta, **client}, summary=summary, facts=facts)


# ------------------------------------------------------------------------------------ Hamming

def hamming_result(record: Mapping[str, Any]) -> ExportedCall:
    """One result of a Hamming test run."""
    from .hamming import VERDICTS, turns

    ref = _need(record, "id", str, "the result's id (a string)")
    _need(record, "testCaseId", str, "the id of the test case the result is of (a string)")
    status = _need(record, "status", str, "PASSED, FAILED, PENDING or ERROR")
    evaluations = [{"name": "test", "evaluator": "hamming:test", "verdict": VERDICTS.get(status, "unknown"),
                    "rationale": f"Hamming: {status}"}]
    for k, item in enumerate(record.get("assertionResults") or []):
        if not isinstance(item, Mapping) or not (item.get("assertionName") or item.get("assertionId")):
            raise _Bad(f"assertionResults[{k}].assertionName", "expected the assertion's name")
        evaluations.append({"name": str(item.get("assertionName") or item.get("assertionId")),
                            "evaluator": "hamming:assertion",
                            "verdict": VERDICTS.get(str(item.get("status")), "unknown"),
                            "rationale": item.get("reason"), "raw": redact(dict(item))})  # fmt: skip
    metrics = record.get("metrics") or {}
    evaluations += [{"name": key, "evaluator": "hamming:metric", "score": float(value),
                     "rationale": f"Hamming's metric {key}"}
                    for key, value in sorted(metrics.items()) if _number(value) is not None]  # fmt: skip
    error = None
    if status not in ("PASSED", "FAILED"):
        error = f"Hamming reported the test case as {status} (the call could not be completed or scored)"
    duration = _number(record.get("duration"))
    line = {"duration_ms": duration * 1000 if duration is not None else None,
            "transcript": [t.model_dump(exclude={"t", "end_t"}) for t in turns(record.get("transcript"))],
            "evaluations": evaluations, "error": error}
    meta = record.get("metadata")
    return _finish("hamming", ref, record, line, metadata=dict(meta) if isinstance(meta, Mapping) else {})


# ------------------------------------------------------------------------------------ Envelopes

Record = tuple[Mapping[str, Any], Mapping[str, Any]]
"""(what the vendor's reader reads, what is kept as the line's ``provider_payload``: the object as received)."""

_VAPI_REPORTED = ("artifact", "analysis", "endedReason", "cost", "costs", "startedAt", "endedAt")


def _vapi_records(obj: Mapping[str, Any]) -> list[Record]:
    """A Call, or a server message: only an end-of-call-report carries a finished call (``message.call``, with
    the report's artifact, analysis, endedReason, cost and times beside it, which win: they are final)."""
    message, at = obj.get("message"), "message."
    if not isinstance(message, Mapping) or "type" not in message:
        if obj.get("type") != "end-of-call-report":
            return [(obj, obj)]
        message, at = obj, ""  # the message without its envelope
    if message["type"] != "end-of-call-report":
        raise _Bad(f"{at}type", f"a {message['type']!r} server message carries no finished call; only "
                   "end-of-call-report messages do: leave the others out of the file")
    call = _need(message, "call", Mapping, "the call the report is about (an object with its id)", at)
    reported = {k: message[k] for k in _VAPI_REPORTED if message.get(k) is not None}
    return [({**call, **reported, "status": "ended"}, obj)]  # sent once the call has ended


_ELEVENLABS_OTHER = {"post_call_audio": "the call's audio only, no transcript",
                     "call_initiation_failure": "a call that never connected"}


def _elevenlabs_records(obj: Mapping[str, Any]) -> list[Record]:
    """A conversation, or a post-call webhook body: only ``post_call_transcription`` carries one (``data``).
    The conversations list holds summaries without transcripts, so it is refused."""
    if "conversation_id" in obj:
        return [(obj, obj)]
    if "conversations" in obj:
        raise _Bad("conversations", "this is the conversations list (GET /v1/convai/conversations): summaries "
                   "without transcripts; export each conversation with GET /v1/convai/conversations/{id}")
    if "data" in obj and isinstance(obj.get("type"), str):
        if obj["type"] != "post_call_transcription":
            why = _ELEVENLABS_OTHER.get(obj["type"], "not a post-call webhook")
            raise _Bad("type", f"a {obj['type']!r} webhook body carries no conversation ({why}); only "
                       "post_call_transcription bodies do: leave the others out of the file")
        return [(_need(obj, "data", Mapping, "the conversation (an object)"), obj)]
    return [(obj, obj)]


def _hamming_records(obj: Mapping[str, Any]) -> list[Record]:
    """A test run's results (``{summary, results}``), or one result."""
    if "results" not in obj:
        return [(obj, obj)]
    return [(r, r) for r in _need(obj, "results", list, "the run's results (a list)")]


@dataclass(frozen=True)
class ExportFormat:
    """One vendor's exports: what a file may hold, how one of its objects becomes records, how a record reads."""

    holds: str
    """What a file may hold, in words: one such object, a JSON list of them, or JSON Lines of them."""
    records: Callable[[Mapping[str, Any]], list[Record]]
    """One object of the file as its records: itself, or what the vendor's envelope carries (raises ``_Bad``)."""
    read: Callable[[Mapping[str, Any]], ExportedCall]
    """One record as a call."""


FORMATS: dict[str, ExportFormat] = {
    "vapi": ExportFormat("calls as GET /call (a list) or GET /call/{id} returns them, or end-of-call-report "
                         "webhook bodies", _vapi_records, vapi_call),
    "elevenlabs": ExportFormat("conversations as GET /v1/convai/conversations/{id} returns them, or "
                               "post_call_transcription webhook bodies", _elevenlabs_records, elevenlabs_conversation),
    "hamming": ExportFormat("a test run's results as GET /test-runs/{id}/results returns them, or single results",
                            _hamming_records, hamming_result),
}
"""Every vendor whose exports are read, by name."""
VENDORS = tuple(FORMATS)


def _records(vendor: str, path: Path) -> tuple[list[tuple[str, Any, Any]], list[str]]:
    """Every record of the file as (where it is, what the reader reads, the payload), and the problems of the
    objects that are no record."""
    from .export_files import read_values

    found, problems = [], []
    for line, value in read_values(path, FORMATS[vendor].holds):
        at = f" on line {line}" if line else ""
        items = value if isinstance(value, list) else [value]
        for k, item in enumerate(items):
            where = (f"item {k + 1} of the list" if isinstance(value, list) else "the object") + at
            if not isinstance(item, Mapping):
                problems.append(f"{where}: expected an object, got {type(item).__name__}")
                continue
            try:
                found += [(at, record, payload) for record, payload in FORMATS[vendor].records(item)]
            except _Bad as exc:
                problems.append(f"{where}: {exc}")
    return found, problems


def read_export(vendor: str, path: str | Path) -> list[ExportedCall]:
    """Every record of the export at ``path`` as a call, or a :class:`CallExportError` naming every bad record."""
    from assay.core.errors import UnknownChoiceError

    if vendor not in FORMATS:
        raise UnknownChoiceError("vendor", vendor, "name the vendor whose export this is", known=list(VENDORS))
    path = Path(path)
    if not path.is_file():
        raise CallExportError(str(path), [f"no such file; give the path of {FORMATS[vendor].holds}"])
    records, problems = _records(vendor, path)
    out = []
    for i, (where, record, payload) in enumerate(records):
        ident = record.get("id") or record.get("conversation_id") if isinstance(record, Mapping) else None
        label = f"record {i + 1}" + (f" ({ident})" if isinstance(ident, str) else "") + where
        if not isinstance(record, Mapping):
            problems.append(f"{label}: expected an object, got {type(record).__name__}")
            continue
        try:
            call = FORMATS[vendor].read(record)
        except _Bad as exc:
            problems.append(f"{label}: {exc}; expected {FORMATS[vendor].holds}")
            continue
        if payload is not record:
            call.line["provider_payload"] = redact(dict(payload))
        out.append(call)
    if problems:
        raise CallExportError(str(path), problems)
    return out


__all__ = ["FORMATS", "VENDORS", "ExportFormat", "ExportedCall", "elevenlabs_conversation", "hamming_result",
           "read_export", "vapi_call"]
