"""Measuring our judge against people: a labelled set judged exactly like case runs, the figures kept.

A labelled set is a JSON Lines file, one item per line::

    {"id": "refund-1", "rubric": "The agent offers a refund.",
     "transcript": [{"role": "caller", "text": "I was double charged."},
                    {"role": "agent", "text": "I have refunded the second charge."}],
     "tool_calls": [{"name": "refund", "arguments": {"charge": 2}, "result": {"ok": true}}],
     "expected": "pass"}

(written on one line in the file). Fields: ``rubric`` (what must hold, as a rubric assertion's
``rubric`` parameter), ``transcript`` (turns of ``role`` caller/agent/system and ``text``; ``t`` and
``end_t`` allowed), ``tool_calls`` (optional: ``name``, ``arguments``, ``result``, ``is_error``),
``expected`` (the person's label: ``pass`` or ``fail``) and ``id`` (optional; default ``line-N``).
Blank lines are skipped; anything else malformed is refused with its line number, nothing judged.

Each item is rendered as the judge sees a case run (:mod:`assay.transforms.judge_evidence`), asked
with the same prompt through the judge cache (:func:`.judge_calls.ask_cached`; the cache's assertion
id is a hash of the rubric text), and the agreement rate and Cohen's kappa
(:mod:`assay.transforms.agreement`) are stored in the catalog's ``judge_agreements``.

Of the undetermined items, ``unparsed`` counts those whose answer came back but could not be read as a
verdict (:attr:`assay.adapters.judges.Judgement.unparsed`: no single JSON object, no readable verdict,
a refusal, empty or cut-off content), apart from the endpoint's failures: many of them say the judge
model and our prompt do not get on, not that the server is down.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.adapters.judges import PROMPT_VERSION
from assay.core.errors import ConfigError, LabelsError
from assay.core.evidence import CaseRun, Report, ToolCall, Turn
from assay.core.ids import stable_id
from assay.storage.catalog.judge_cache import record_agreement
from assay.transforms.agreement import agreement
from assay.transforms.judge_evidence import with_evidence

from .judge_calls import ask_cached
from .workspace import Workspace


class LabelledItem(BaseModel):
    """One line of a labelled set: a rubric, the evidence, and what a person concluded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    """Names the item in the report (default ``line-N``)."""
    rubric: str = Field(min_length=1)
    """What must hold, in words: a rubric assertion's ``rubric`` parameter."""
    transcript: list[Turn]
    """The conversation, as a case run records it."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The tools the agent called, with their results."""
    expected: Literal["pass", "fail"]
    """The person's label."""


def read_labels(path: Path, text: str) -> list[LabelledItem]:
    """The items of a labelled set, or :class:`LabelsError` naming every bad line."""
    items: list[LabelledItem] = []
    problems: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = LabelledItem.model_validate_json(line)
        except ValidationError as exc:
            problems.extend((number, f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}") for e in exc.errors())
            continue
        items.append(item if item.id else item.model_copy(update={"id": f"line-{number}"}))
    if problems:
        raise LabelsError(str(path), problems[:20])
    if not items:
        raise LabelsError(str(path), [(0, "no labelled items; write one JSON object per line (see `assay judge-agreement --help`)")])
    return items


def measure(ws: Workspace, path: Path) -> dict[str, Any]:
    """Judge every item of the labelled set at ``path``, store the agreement figures, return them."""
    judge = ws.settings.judge_model if ws.settings.judge_base_url else None
    if judge is None:
        raise ConfigError("no judge configured: set ASSAY_JUDGE_BASE_URL (with /v1) and ASSAY_JUDGE_MODEL")
    raw = path.read_bytes()
    items = read_labels(path, raw.decode("utf-8"))
    report = Report.from_case_runs("labels", [
        CaseRun(case_id=str(item.id), transcript=item.transcript, tool_calls=item.tool_calls) for item in items])
    case_runs = pl.from_arrow(report.case_runs).with_columns(case_run_id=pl.int_range(pl.len()).cast(pl.String))
    todo = with_evidence(case_runs).with_columns(  # type: ignore[arg-type]
        rubric=pl.Series([item.rubric for item in items], dtype=pl.String),
        assertion_id=pl.Series([stable_id("labelled rubric", item.rubric) for item in items], dtype=pl.String),
    )
    judgements, spent = ask_cached(ws, judge, todo)
    expected = [item.expected == "pass" for item in items]
    unparsed = sum(j.unparsed for j in judgements)
    figures = agreement(pl.DataFrame({"expected": expected, "met": [j.met for j in judgements]},
                                     schema={"expected": pl.Boolean, "met": pl.Boolean}))
    verdicts = [{"id": item.id, "expected": item.expected,
                 "verdict": None if j.met is None else ("pass" if j.met else "fail"), "reason": j.reason}
                for item, j in zip(items, judgements, strict=True)]
    sha = hashlib.sha256(raw).hexdigest()
    agreement_id = record_agreement(
        ws.engine, judge_model=judge, prompt_version=PROMPT_VERSION, labels=str(path), labels_sha256=sha,
        items=figures.items, undetermined=figures.undetermined, agreement=figures.agreement, kappa=figures.kappa,
        details={"figures": {**figures.to_dict(), "unparsed": unparsed}, "items": verdicts},
    )
    return {
        "agreement_id": agreement_id, "judge_model": judge, "prompt_version": PROMPT_VERSION, "labels": str(path),
        "labels_sha256": sha, **figures.to_dict(), "unparsed": unparsed, **spent,
        "disagreements": [v for v in verdicts if v["verdict"] is not None and v["verdict"] != v["expected"]],
        "undetermined_items": [v for v in verdicts if v["verdict"] is None],
    }


def describe(result: dict[str, Any]) -> list[str]:
    """The lines ``assay judge-agreement`` prints."""
    def figure(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    decided = result["items"] - result["undetermined"]
    lines = [
        f"judge {result['judge_model']} (prompt v{result['prompt_version']}) on {result['items']} labelled item(s) "
        f"from {result['labels']}: agreement {figure(result['agreement'])}, Cohen's kappa {figure(result['kappa'])} "
        f"over {decided} decided item(s); {result['undetermined']} undetermined (counted in neither), "
        f"{result['unparsed']} of them an answer that could not be read as a verdict",
        f"judge calls {result['judge_calls']} (requests sent, retries included), "
        f"{result['judge_cached']} item(s) from the judge cache; stored as {result['agreement_id']}",
    ]
    for v in result["disagreements"][:10]:
        lines.append(f"  {v['id']}: labelled {v['expected']}, judged {v['verdict']}: {v['reason']}")
    for v in result["undetermined_items"][:10]:
        lines.append(f"  {v['id']}: labelled {v['expected']}, no verdict: {v['reason']}")
    return lines


__all__ = ["LabelledItem", "describe", "measure", "read_labels"]
