"""Our judge's prompt, versioned, the response formats it is asked in, and the one reading of its answer.

The prompt is a system message (how to judge, what to answer) and a user message (the rubric, then the
evidence as :func:`assay.transforms.judge_evidence.evidence_text` renders it). The judge is asked to
answer one JSON object::

    {"verdict": "pass" | "fail", "rationale": "<one or two sentences>"}

:data:`RESPONSE_FORMATS` are the ways of asking, best first: a strict JSON schema (structured outputs),
JSON mode, then plain text (no ``response_format``), for servers that refuse the others.

**How an answer is read** (:func:`parse_verdict`; the same rule in every response format):

1. The answer text is the message's ``content`` (a string, or the ``text`` of its text parts). A
   ``<think>...</think>`` block in it is dropped: it is the model's reasoning, like the
   ``reasoning_content``/``reasoning`` fields, which are never read for the verdict.
2. The text holds **exactly one JSON object**: either it is one, or one is found in it (inside
   ```` ```json ```` fences or surrounded by prose). No object, or several, is no verdict: which of
   several objects is the answer would be a guess.
3. Its keys are matched case-insensitively, surrounding whitespace ignored. The verdict is the value of
   one of :data:`VERDICT_KEYS`, the rationale of one of :data:`RATIONALE_KEYS` (the first present, in
   that order). Two keys naming the verdict is no verdict. Other keys are ignored.
4. The verdict is a string which, lowercased, stripped of whitespace and of one trailing full stop, is one
   of :data:`VERDICT_WORDS`: ``pass``/``passed`` (the rubric holds) or ``fail``/``failed``. Nothing else
   is mapped: not ``yes``/``no``, not booleans, not scores; the prompt never offers them, and what a
   model meant by one (does the rubric hold? did the agent fail?) would be a guess.
5. The rationale is a non-empty string (stripped).

Anything else is no verdict, with what came back quoted (shortened) in the reason; a verdict is never
guessed from prose.

:data:`PROMPT_VERSION` is part of every judge-cache key: change the wording of either message and bump
it, so that no verdict reached under the old wording is served for the new one. (Reading more answer
shapes as verdicts changes no verdict already cached, so it needs no bump.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from assay.core.errors import MalformedResponseError

PROMPT_VERSION = 1
"""The version of :data:`SYSTEM`, :func:`messages` and :func:`parse_verdict` together."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]}, "rationale": {"type": "string"}},
    "required": ["verdict", "rationale"],
    "additionalProperties": False,
}
"""The answer as a JSON Schema, within the subset strict structured outputs accept."""

RESPONSE_FORMATS: dict[str, dict[str, Any] | None] = {
    "json_schema": {"type": "json_schema",
                    "json_schema": {"name": "rubric_verdict", "strict": True, "schema": VERDICT_SCHEMA}},
    "json_object": {"type": "json_object"},
    "text": None,
}
"""The ``response_format`` of each way of asking, best first (``text``: none sent)."""

SYSTEM = (
    "You evaluate a conversation between a caller and an AI agent, together with the tools the agent "
    "called. You are given a rubric: a statement about the agent's behaviour. Decide, from the evidence "
    "alone, whether the rubric holds for this conversation. Do not assume anything the evidence does not "
    "show. Answer with a JSON object and nothing else, exactly of the form "
    '{"verdict": "pass", "rationale": "..."} or {"verdict": "fail", "rationale": "..."}: '
    '"pass" when the rubric holds, "fail" when it does not; the rationale is one or two sentences that '
    "cite what in the evidence decided it."
)
"""The system message: the judge's task and the only answer it may give."""

VERDICT_KEYS = ("verdict", "result", "answer", "decision", "judgement", "judgment")
"""Keys an answer may name its verdict with (case-insensitive)."""
RATIONALE_KEYS = ("rationale", "reason", "reasoning", "explanation", "justification")
"""Keys an answer may name its rationale with (case-insensitive), preferred first."""
VERDICT_WORDS = {"pass": True, "passed": True, "fail": False, "failed": False}
"""Verdict values (lowercased, stripped, one trailing full stop removed) and whether the rubric holds."""

EXPECTED = '{"verdict": "pass"|"fail", "rationale": "<one or two sentences>"}'
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """What the judge concluded about one rubric over one piece of evidence."""

    met: bool
    """True when the verdict was ``pass``."""
    rationale: str
    """The judge's one or two sentences, stripped."""


def messages(rubric: str, evidence: str) -> list[dict[str, str]]:
    """The chat messages that ask the judge about ``rubric`` over ``evidence`` (rendered evidence text)."""
    user = f"RUBRIC\n{rubric.strip()}\n\nEVIDENCE\n{evidence}\n\nAnswer with the JSON object only."
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def answer_text(content: Any) -> str | None:
    """The text of a message's ``content``: the string, or its text parts joined; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text"
                 and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def parse_verdict(content: Any, vendor: str = "judge") -> Verdict:
    """The verdict in the judge's answer ``content`` by the module's rule, or :class:`MalformedResponseError`
    saying what is wrong and quoting what came back."""
    text = answer_text(content)

    def bad(what: str) -> MalformedResponseError:
        quoted = f" ({snippet(text)})" if text and text.strip() else ""
        return MalformedResponseError(vendor, 200, f"the judge's answer {what}{quoted}; expected {EXPECTED}")

    if text is None:
        raise bad("has no text content")
    text = _THINK.sub("", text)
    if not text.strip():
        raise bad("is empty")
    objects = json_objects(text)
    if not objects:
        raise bad("holds no JSON object")
    if len(objects) > 1:
        raise bad(f"holds {len(objects)} JSON objects, not one")
    answer = {str(k).strip().lower(): v for k, v in objects[0].items()}
    named = [k for k in VERDICT_KEYS if k in answer]
    if not named:
        raise bad("names no verdict (keys " + ", ".join(map(repr, objects[0])) + ")")
    if len(named) > 1:
        raise bad("names a verdict twice (" + ", ".join(named) + ")")
    verdict = answer[named[0]]
    word = verdict.strip().lower().removesuffix(".").strip() if isinstance(verdict, str) else None
    if word not in VERDICT_WORDS:
        raise bad(f"has verdict {verdict!r}, which is neither 'pass' nor 'fail'")
    rationale = next((answer[k] for k in RATIONALE_KEYS if k in answer), None)
    if not isinstance(rationale, str) or not rationale.strip():
        raise bad("has no rationale")
    return Verdict(met=VERDICT_WORDS[word], rationale=rationale.strip())


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text``, outermost only, left to right (the whole text when it is one)."""
    try:
        whole = json.loads(text)
    except ValueError:
        pass
    else:
        return [whole] if isinstance(whole, dict) else []
    decoder, found, at = json.JSONDecoder(), [], text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        at = text.find("{", end)
    return found


def snippet(text: str, limit: int = 120) -> str:
    """``text`` on one line, shortened to ``limit`` characters, quoted."""
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


__all__ = ["PROMPT_VERSION", "RATIONALE_KEYS", "RESPONSE_FORMATS", "SYSTEM", "VERDICT_KEYS", "VERDICT_SCHEMA",
           "VERDICT_WORDS", "Verdict", "answer_text", "json_objects", "messages", "parse_verdict", "snippet"]
