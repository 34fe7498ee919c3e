"""What the catalog keeps of a refused report: a bounded summary, not the payload.

A report is refused when its run is final or its lease is not held; the evidence it carried is not
ours to store (the run's record is closed). What an operator needs is to tell what was refused: which
request, how many case runs and evaluations, a few of them to recognise, and a hash to match the
report against a vendor's copy or a retry. Keeping the whole payload made one refused 10,000-call
report a catalog row of megabytes, so :func:`rejected_summary` keeps at most :data:`SUMMARY_BYTES`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from assay.core.evidence import Report

SUMMARY_VERSION = 1
EXCERPT_ROWS = 3
"""At most this many case runs (and as many evaluations) are kept, each cut to :data:`ROW_BYTES`."""
ROW_BYTES = 4_096
TEXT_CHARS = 300
"""A string longer than this is cut, saying by how much."""
LIST_ITEMS = 10
"""A list longer than this (a transcript, tool calls) keeps its first items and says how many there were."""
SUMMARY_BYTES = 32_768
"""The most a summary takes as JSON: its excerpts stop before they would pass it."""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))


def _cut(value: Any) -> Any:
    """``value`` with long strings and lists shortened, saying so (a transcript keeps its first turns)."""
    if isinstance(value, str) and len(value) > TEXT_CHARS:
        return f"{value[:TEXT_CHARS]}… ({len(value) - TEXT_CHARS} more characters)"
    if isinstance(value, list):
        kept = [_cut(v) for v in value[:LIST_ITEMS]]
        return kept + ([f"… ({len(value) - LIST_ITEMS} more items)"] if len(value) > LIST_ITEMS else [])
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    return value


def _excerpt(rows: list[dict[str, Any]], room: int) -> list[Any]:
    """The first rows, each cut; a row still over :data:`ROW_BYTES` is kept as the start of its JSON."""
    out: list[Any] = []
    for row in rows[:EXCERPT_ROWS]:
        cut = _cut(row)
        text = _json(cut)
        if len(text) > ROW_BYTES:
            cut = {"excerpt": text[:ROW_BYTES], "bytes": len(text)}
            text = _json(cut)
        if len(text) > room:
            break
        out.append(cut)
        room -= len(text)
    return out


def _lines(report: Report) -> Iterator[bytes]:
    """The report as JSON lines (sorted keys): its request id, each case run, each evaluation, its meta. Read
    a thousand rows at a time, so hashing a large report never holds all of it as Python objects at once."""
    yield _json(report.request_id).encode() + b"\n"
    for table in (report.case_runs, report.evaluations):
        for batch in table.to_batches(max_chunksize=1_000):
            for row in batch.to_pylist():
                yield _json(row).encode() + b"\n"
    yield _json(report.meta).encode() + b"\n"


def rejected_summary(report: Report) -> dict[str, Any]:
    """A bounded summary of a refused (already redacted) report: its request id, its counts, the SHA-256 and
    size of the whole payload as JSON lines (:func:`_lines`), its first case runs and evaluations, cut to
    size, and its ``meta``, cut the same way. Never more than :data:`SUMMARY_BYTES` as JSON."""
    digest, size = hashlib.sha256(), 0
    for line in _lines(report):
        digest.update(line)
        size += len(line)
    head = report.case_runs.slice(0, EXCERPT_ROWS).to_pylist()
    evaluations = report.evaluations.slice(0, EXCERPT_ROWS).to_pylist()
    summary: dict[str, Any] = {
        "summary_version": SUMMARY_VERSION,
        "request_id": report.request_id,
        "case_runs_total": report.case_runs.num_rows,
        "evaluations_total": report.evaluations.num_rows,
        "payload_sha256": digest.hexdigest(),
        "payload_bytes": size,
        "meta": _cut(json.loads(_json(report.meta))),
    }
    if len(_json(summary)) > SUMMARY_BYTES // 4:  # a meta of its own size: only its keys are kept
        summary["meta"] = {"keys": _cut(sorted(map(str, report.meta)))}
    room = SUMMARY_BYTES - len(_json(summary)) - 256  # the keys below and their punctuation
    summary["case_runs"] = _excerpt(json.loads(_json(head)), room // 2)
    summary["evaluations"] = _excerpt(json.loads(_json(evaluations)), room // 2)
    summary["truncated"] = (len(summary["case_runs"]) < report.case_runs.num_rows
                            or len(summary["evaluations"]) < report.evaluations.num_rows)
    return summary


__all__ = ["SUMMARY_BYTES", "rejected_summary"]
