"""Our judge's prompt, versioned, and the one reading of its answer.

The prompt is a system message (how to judge, what to answer) and a user message (the rubric, then the
evidence as :func:`assay.transforms.judge_evidence.evidence_text` renders it). The judge must answer a
JSON object with exactly two keys::

    {"verdict": "pass" | "fail", "rationale": "<one or two sentences>"}

and is asked to with ``response_format={"type": "json_object"}``. :func:`parse_verdict` accepts that
and nothing else: text that is not JSON, other or missing keys, another verdict, or an empty rationale
is an error (a null result that says why), never a verdict guessed from the text.

:data:`PROMPT_VERSION` is part of every judge-cache key: change the wording of either message and bump
it, so that no verdict reached under the old wording is served for the new one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from assay.core.errors import MalformedResponseError

PROMPT_VERSION = 1
"""The version of :data:`SYSTEM`, :func:`messages` and :func:`parse_verdict` together."""

RESPONSE_FORMAT: dict[str, Any] = {"type": "json_object"}
"""OpenAI's JSON mode: the model must answer a JSON object."""

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

VERDICTS = ("pass", "fail")


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


def parse_verdict(content: Any, vendor: str = "judge") -> Verdict:
    """The verdict in the judge's answer ``content``, or :class:`MalformedResponseError` saying what is wrong."""

    def bad(what: str) -> MalformedResponseError:
        return MalformedResponseError(vendor, 200, f"the judge's answer {what}; expected "
                                                   '{"verdict": "pass"|"fail", "rationale": "<one or two sentences>"}')

    if not isinstance(content, str):
        raise bad("has no text content")
    try:
        answer = json.loads(content)
    except ValueError:
        raise bad(f"is not JSON ({_snippet(content)})") from None
    if not isinstance(answer, dict):
        raise bad(f"is JSON but not an object ({_snippet(content)})")
    keys = set(answer)
    if keys != {"verdict", "rationale"}:
        missing, extra = sorted({"verdict", "rationale"} - keys), sorted(keys - {"verdict", "rationale"})
        raise bad(("lacks " + ", ".join(missing) if missing else "") + ("; " if missing and extra else "")
                  + ("has unexpected key(s) " + ", ".join(extra) if extra else ""))
    verdict, rationale = answer["verdict"], answer["rationale"]
    if verdict not in VERDICTS:
        raise bad(f"has verdict {verdict!r}, which is neither 'pass' nor 'fail'")
    if not isinstance(rationale, str) or not rationale.strip():
        raise bad("has an empty rationale")
    return Verdict(met=verdict == "pass", rationale=rationale.strip())


def _snippet(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


__all__ = ["PROMPT_VERSION", "RESPONSE_FORMAT", "SYSTEM", "Verdict", "messages", "parse_verdict"]
