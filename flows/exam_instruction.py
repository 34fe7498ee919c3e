"""The replayable ask: what the person asked in a session, written so a replay can act on it alone.

A replay gets one instruction. It is the person's first message, then the follow-ups they gave, in
order. A short steering reply ("1", "yes", "go ahead") means nothing without what it answered, so it is
rewritten from that: the numbered option it picked, or the yes/no question it answered — read from the
assistant's text just before it, or from the input of the tool call it answered (any tool whose input
carries ``options`` or ``questions`` with options). A short reply that cannot be resolved is kept as it
was, with a note. Subagents' turns are not the person's asks.
"""

from __future__ import annotations

import re
from typing import Any

from assay.core.exam import slug_like
from assay.core.session import Session, SessionTurn

__all__ = ["first_ask", "instruction_text", "one_line", "resolve_reply", "slug_for"]

_NUMBER = re.compile(r"\d{1,2}")
_YES_NO = {"yes", "y", "no", "n", "ok", "okay", "go ahead", "sure", "yep", "yeah", "nope", "proceed", "do it",
           "go", "continue", "please do", "sounds good", "yes please", "no thanks", "k"}  # fmt: skip
_OPTION_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?\(?(\d{1,2})(?:\*\*)?\s*[.):](?:\*\*)?\s+(.+?)\s*$")
_UNRESOLVED = "(a short reply; what it answered is not in the session)"


def first_ask(session: Session) -> str:
    """The person's first message (:class:`ValueError` when the session has none)."""
    asks = session.user_turns
    if not asks:
        raise ValueError(f"session {session.session_id} has no message from the person; there is nothing to replay")
    return asks[0].text.strip()


def one_line(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def slug_for(text: str, limit: int = 40) -> str:
    """An exam slug from an ask: its first words, folded to ``a-z0-9-`` and cut at a word boundary."""
    words = slug_like(text.split("\n", 1)[0]).split("-")
    slug = ""
    for word in words:
        if slug and len(slug) + 1 + len(word) > limit:
            break
        slug = f"{slug}-{word}" if slug else word[:limit]
    return slug


def instruction_text(session: Session) -> str:
    """``instruction.md``: the first ask, then each follow-up (short replies resolved), numbered."""
    asks = session.user_turns
    text = first_ask(session)
    follow_ups = [resolve_reply(session, turn) for turn in asks[1:]]
    if not follow_ups:
        return text + "\n"
    lines = [text, "", "---", "", "Later in the session the person added, in this order:", ""]
    for number, follow_up in enumerate(follow_ups, 1):
        first, *rest = follow_up.strip().split("\n")
        lines.append(f"{number}. {first}")
        lines += [f"   {line}" if line else "" for line in rest]
    return "\n".join(lines) + "\n"


def resolve_reply(session: Session, turn: SessionTurn) -> str:
    """A follow-up as the instruction gives it: a short steering reply rewritten from what it answered."""
    reply = turn.text.strip()
    word = reply.lower().rstrip(".!").strip()
    if not (_NUMBER.fullmatch(word) or word in _YES_NO):
        return reply
    said = _since_last_ask([t for t in session.turns if t.index < turn.index and t.agent_id is None])
    call_ids = [*turn.call_ids, *(c for t in reversed(said) for c in reversed(t.call_ids))]
    calls = [session.call(c) for c in call_ids if _known_call(session, c)]
    options = next((o for o in (_call_options(c.input) for c in calls) if o), None)
    question = next((q for q in (_call_question(c.input) for c in calls) if q), None)
    text = next((t.text for t in reversed(said) if t.text.strip()), "")
    options = options or _text_options(text)
    question = question or _last_question(text)
    if _NUMBER.fullmatch(word) and options and word in options:
        return f"{reply} — {options[word]}"
    if word in _YES_NO and question:
        return f'{reply} — in answer to "{question}"'
    return f"{reply} {_UNRESOLVED}"


def _known_call(session: Session, call_id: str) -> bool:
    return any(c.call_id == call_id for c in session.tool_calls)


def _since_last_ask(turns: list[SessionTurn]) -> list[SessionTurn]:
    """The assistant's messages after the person's previous message, in order (what a reply can answer)."""
    said: list[SessionTurn] = []
    for turn in reversed(turns):
        if turn.role == "user" and turn.text:
            break
        if turn.role == "assistant":
            said.insert(0, turn)
    return said


def _text_options(text: str) -> dict[str, str]:
    """Numbered options in an assistant's text (``1.``, ``1)``, ``- 1:``, ``**1.**``), by number."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            options.setdefault(str(int(match.group(1))), one_line(match.group(2).replace("**", "")))
    return options


def _last_question(text: str) -> str | None:
    """The last sentence of ``text`` that ends with a question mark."""
    for line in reversed(text.splitlines()):
        if "?" in line:
            head = line[: line.rindex("?") + 1].replace("**", "").strip()
            sentence = re.split(r"(?<=[.!?:])\s+", head)[-1].lstrip("-*> ").strip()
            return one_line(sentence) if sentence else None
    return None


def _option_text(option: Any) -> str | None:
    if isinstance(option, str):
        return one_line(option)
    if isinstance(option, dict):
        for key in ("label", "text", "title", "value", "name"):
            if isinstance(option.get(key), str) and option[key].strip():
                return one_line(option[key])
    return None


def _questions(value: dict[str, Any]) -> list[dict[str, Any]]:
    questions = value.get("questions")
    listed = [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else []
    return [value, *listed]


def _call_options(value: dict[str, Any]) -> dict[str, str]:
    """The options a tool call offered the person (top level, or the first question that has them)."""
    for holder in _questions(value):
        options = holder.get("options")
        if isinstance(options, list):
            texts = [_option_text(o) for o in options]
            if texts and all(texts):
                return {str(i): str(t) for i, t in enumerate(texts, 1)}
    return {}


def _call_question(value: dict[str, Any]) -> str | None:
    for holder in _questions(value):
        question = holder.get("question")
        if isinstance(question, str) and question.strip():
            return one_line(question)
    return None
