"""The fake agent's brain: a deterministic stand-in for the LLM behind an assistant, shared by the fakes.

A fake vendor (VAPI, ElevenLabs) asks :func:`reply` what its agent says to one caller line. Nothing is
random and nothing is clever, so a test can say exactly what the agent will do:

1. **Rules first.** ``rules`` (a fake reads them from ``faults.scripts["replies"]``) is a list of
   ``{"match": regex, "reply": text, "tool"?: name, "arguments"?: {...}, "result"?: any, "is_error"?: bool}``.
   The first rule whose ``match`` is found in the caller's line (``re.search``, ignoring case) decides:
   the agent says ``reply`` and, when ``tool`` is set, calls that tool with ``arguments`` and gets
   ``result`` back (default ``{"ok": true}``). A rule with ``"rate": r`` (0 < r <= 1) decides only on a share
   r of the lines it matches, spread evenly and deterministically: the n-th match decides when
   ``floor(n * r)`` steps up (``0.1``: the 10th, 20th, ... match), so a test can make an agent flaky at an
   exact rate. The fake keeps the counts (``hits``), per rule, across conversations.
2. **Then the conversation's script.** ``conversations`` (``faults.scripts["conversations"]``) is a list of
   ``{"opening": text, "replies": [{"reply": text, "tool"?, "arguments"?, "result"?, "is_error"?}, ...]}``:
   in a conversation whose first caller line is ``opening`` (compared without surrounding spaces), the
   agent's n-th reply is ``replies[n]``, and once they are spent :data:`CLOSING` (:func:`scripted`). This
   is how one team's cases get replies of their own (``assay fake-vendors --script``).
3. **Otherwise the default.** The agent's first reply is the assistant's first message (else "Hello, how
   can I help?"); later replies are :data:`LATER_REPLY`. On its first reply only, the agent calls the first
   attached tool whose name the prompt mentions (an agent told "check the area with check_service_area"
   does), with arguments filled from the tool's JSON-schema parameters (:func:`default_arguments`) and
   the result ``{"ok": true}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FIRST_REPLY = "Hello, how can I help?"
"""The first reply of an assistant without a first message."""
LATER_REPLY = "I understand. Is there anything else I can help with?"
"""Every later reply no rule decides."""
DEFAULT_RESULT: dict[str, Any] = {"ok": True}
"""What a tool returns unless a rule says otherwise."""
CLOSING = "You're welcome. Goodbye!"
"""A scripted conversation's reply once its scripted replies are spent."""

_RULE_KEYS = {"match", "reply", "tool", "arguments", "result", "is_error", "rate"}
_REPLY_KEYS = _RULE_KEYS - {"match", "rate"}
_CONVERSATION_KEYS = {"opening", "replies", "criteria"}


@dataclass(frozen=True)
class ToolUse:
    """One tool call the agent makes, with the result it gets back."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    is_error: bool = False


@dataclass(frozen=True)
class Reply:
    """What the agent says to one caller line, and the tool it calls first (if any)."""

    text: str
    tool: ToolUse | None = None


def check_rules(rules: Any) -> list[dict[str, Any]]:
    """``rules`` as a list of rule dicts; ValueError naming the bad rule and the allowed keys."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        raise ValueError(f"reply rules must be a list of objects, got {type(rules).__name__}")
    for k, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or not isinstance(rule.get("match"), str) or not isinstance(rule.get("reply"), str):
            raise ValueError(f"reply rule {k} needs a string 'match' (a regex) and a string 'reply': {rule!r}")
        unknown = sorted(set(rule) - _RULE_KEYS)
        if unknown:
            raise ValueError(f"reply rule {k} has unknown keys {unknown}; allowed: {sorted(_RULE_KEYS)}")
        rate = rule.get("rate", 1)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
            raise ValueError(f"reply rule {k}: 'rate' must be a number in (0, 1], got {rate!r}")
        try:
            re.compile(rule["match"])
        except re.error as exc:
            raise ValueError(f"reply rule {k}: 'match' {rule['match']!r} is not a regular expression: {exc}") from None
    return list(rules)


def check_conversations(conversations: Any) -> list[dict[str, Any]]:
    """``conversations`` as a list of scripted conversations; ValueError naming the bad one and the allowed keys."""
    if conversations is None:
        return []
    if not isinstance(conversations, list):
        raise ValueError(f"conversations must be a list of objects, got {type(conversations).__name__}")
    for k, convo in enumerate(conversations):
        if not isinstance(convo, Mapping) or not isinstance(convo.get("opening"), str):
            raise ValueError(f"conversation {k} needs a string 'opening' (the caller's first line): {convo!r}")
        unknown = sorted(set(convo) - _CONVERSATION_KEYS)
        if unknown:
            raise ValueError(f"conversation {k} has unknown keys {unknown}; allowed: {sorted(_CONVERSATION_KEYS)}")
        for n, said in enumerate(convo.get("replies") or []):
            if not isinstance(said, Mapping) or not isinstance(said.get("reply"), str) or set(said) - _REPLY_KEYS:
                raise ValueError(f"conversation {k}, reply {n}: an object with a string 'reply' and optional "
                                 f"{sorted(_REPLY_KEYS - {'reply'})}, got {said!r}")
    return list(conversations)


def scripted(conversations: Sequence[Mapping[str, Any]], opening: str, n: int) -> Reply | None:
    """The agent's n-th reply (from 0) in the conversation that ``opening`` began, if a script covers it."""
    convo = next((c for c in conversations if c["opening"].strip() == opening.strip()), None)
    if convo is None:
        return None
    replies = convo.get("replies") or []
    if n >= len(replies):
        return Reply(CLOSING)
    said = replies[n]
    tool = None
    if said.get("tool"):
        result = said["result"] if "result" in said else DEFAULT_RESULT
        tool = ToolUse(str(said["tool"]), dict(said.get("arguments") or {}), result, bool(said.get("is_error")))
    return Reply(said["reply"], tool)


def fires(rule: Mapping[str, Any], k: int, hits: dict[int, int]) -> bool:
    """Whether rule ``k``, which just matched, decides this time: always, unless it has a ``rate`` r, when
    its n-th match decides only if ``floor(n * r)`` steps up (counted in ``hits``)."""
    if "rate" not in rule:
        return True
    n = hits[k] = hits.get(k, 0) + 1
    return math.floor(n * rule["rate"] + 1e-9) > math.floor((n - 1) * rule["rate"] + 1e-9)


def reply(caller_text: str, *, rules: Sequence[Mapping[str, Any]] = (), prompt: str = "",
          first_message: str | None = None, tools: Sequence[Mapping[str, Any]] = (), first: bool = True,
          hits: dict[int, int] | None = None) -> Reply:
    """What the agent says to ``caller_text`` (see the module docstring for the rules).

    ``tools`` are ``{"name", "description"?, "parameters"?}`` (JSON-schema parameters); ``first`` says
    whether this is the agent's first reply in the conversation; ``hits`` counts each rated rule's matches
    (the caller keeps it between calls, under its own lock).
    """
    hits = {} if hits is None else hits
    for k, rule in enumerate(check_rules(list(rules))):
        if re.search(rule["match"], caller_text, re.IGNORECASE):
            if not fires(rule, k, hits):
                continue
            tool = None
            if rule.get("tool"):
                result = rule["result"] if "result" in rule else DEFAULT_RESULT
                tool = ToolUse(str(rule["tool"]), dict(rule.get("arguments") or {}), result, bool(rule.get("is_error")))
            return Reply(rule["reply"], tool)
    if not first:
        return Reply(LATER_REPLY)
    named = [t for t in tools if isinstance(t.get("name"), str) and t["name"] and t["name"] in prompt]
    tool = None
    if named:
        chosen = named[0]
        tool = ToolUse(chosen["name"], default_arguments(chosen.get("parameters"), caller_text), DEFAULT_RESULT)
    return Reply(first_message or FIRST_REPLY, tool)


def default_arguments(parameters: Any, caller_text: str) -> dict[str, Any]:
    """Arguments for a tool's required parameters: an enum's first value, a number 0, a boolean false,
    and for a string the first run of digits in the caller's line (else the line itself)."""
    if not isinstance(parameters, Mapping):
        return {}
    props = parameters.get("properties") or {}
    digits = re.search(r"\d+", caller_text)
    out: dict[str, Any] = {}
    for name in parameters.get("required") or []:
        spec = props.get(name) if isinstance(props.get(name), Mapping) else {}
        kind = spec.get("type")
        if spec.get("enum"):
            out[name] = spec["enum"][0]
        elif kind in ("number", "integer"):
            out[name] = 0
        elif kind == "boolean":
            out[name] = False
        else:
            out[name] = digits.group(0) if digits else caller_text
    return out


__all__ = ["CLOSING", "DEFAULT_RESULT", "FIRST_REPLY", "LATER_REPLY", "Reply", "ToolUse", "check_conversations", "check_rules",
           "default_arguments", "fires", "reply", "scripted"]
