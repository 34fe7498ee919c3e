"""Our caller: who speaks for the human side of a platform chat (VAPI chat, ElevenLabs simulations).

A case is a situation (who calls, what they want, what they must be told, what is true in the world),
never a script for the agent. Someone has to say the caller's lines:

- :class:`ScriptedCaller` says the case's scripted ``situation.turns`` in order, then hangs up;
- :class:`SimulatedCaller` asks a model on an OpenAI-compatible chat API (``{base}/chat/completions``,
  ``base`` including ``/v1``) for the next line, playing the caller described by :func:`caller_prompt`.
  The model ends the call by answering :data:`END_TOKEN`; a turn cap ends it in any case.

:func:`caller_for` picks one: scripted when the situation has turns, else simulated with the
``ASSAY_CALLER_*`` settings (defaulting to the judge's); a clear :class:`ConfigError` when there are
neither turns nor a caller model. Vendor adapters share :func:`caller_prompt`, so one situation reads the
same to every vendor's simulated user.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.evidence import Turn
from assay.core.settings import Settings

END_TOKEN = "[END_CALL]"
"""What the simulated caller answers to hang up (anything else it says in that answer is dropped)."""

DEFAULT_MAX_TURNS = 8
"""At most this many caller turns per conversation, whoever speaks them."""

OPENING = "(The call has just connected. Say your opening line.)"
"""What the caller model is shown before the agent has said anything."""


def caller_prompt(situation: Mapping[str, Any]) -> str:
    """The instructions for a model playing the caller of ``situation`` (a case's situation as a dict)."""
    lines = [
        "You are role-playing a person phoning a business, to test the business's assistant.",
        "Speak only as the caller: one short, natural spoken turn at a time, plain text, no stage directions.",
        f"Who you are: {situation.get('caller') or 'a caller'}",
    ]
    if situation.get("wants"):
        lines.append(f"What you want from this call: {situation['wants']}")
    told = [str(item) for item in situation.get("must_be_told") or []]
    if told:
        lines.append("The assistant should tell you the following; listen for it, never say it yourself:")
        lines += [f"- {item}" for item in told]
    world = situation.get("world") or {}
    if world:
        lines.append("Facts of your situation (use what a caller like you would know; do not recite the rest):")
        lines += [f"- {key}: {_fact(value)}" for key, value in world.items()]
    lines.append(
        f"When you have what you called for, the assistant has ended the call, or the call is going nowhere, "
        f"answer with exactly {END_TOKEN} and nothing else."
    )
    return "\n".join(lines)


def _fact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class Caller(Protocol):
    """Says the caller's next line given the conversation so far, or None to hang up."""

    max_turns: int

    def next_line(self, transcript: Sequence[Turn]) -> str | None: ...


def _caller_turns(transcript: Sequence[Turn]) -> int:
    return sum(1 for turn in transcript if turn.role == "caller")


class ScriptedCaller:
    """Says ``turns`` in order, one per call of :meth:`next_line`, then hangs up."""

    def __init__(self, turns: Sequence[str], *, max_turns: int | None = None):
        self.turns = [str(t) for t in turns]
        self.max_turns = len(self.turns) if max_turns is None else max_turns

    def next_line(self, transcript: Sequence[Turn]) -> str | None:
        said = _caller_turns(transcript)
        return self.turns[said] if said < min(len(self.turns), self.max_turns) else None


class SimulatedCaller:
    """A caller played by a model on an OpenAI-compatible chat API (deterministic: temperature 0).

    The model sees :func:`caller_prompt` as its system message and the conversation from the caller's
    side (the agent's turns as ``user``, its own as ``assistant``). ``client`` is an
    :class:`~assay.adapters.http.VendorClient` whose base URL ends in ``/v1``; its errors (classified,
    retried) propagate, so the runner can make that case run an ERROR.
    """

    def __init__(self, client: Any, model: str, situation: Mapping[str, Any], *,
                 max_turns: int = DEFAULT_MAX_TURNS, temperature: float = 0.0, owns_client: bool = False):
        self.client, self.model, self.max_turns, self.temperature = client, model, max_turns, temperature
        self.owns_client = owns_client
        """Close the client with this caller (it was made for it, not shared)."""
        self.system = caller_prompt(situation)
        self.tokens_in = self.tokens_out = 0

    def close(self) -> None:
        if self.owns_client:
            self.client.close()

    def messages(self, transcript: Sequence[Turn]) -> list[dict[str, str]]:
        """The chat messages the caller model is sent for its next line."""
        out = [{"role": "system", "content": self.system}]
        if not transcript or transcript[0].role != "agent":  # the model's side must open with a user message
            out.append({"role": "user", "content": OPENING})
        for turn in transcript:
            if turn.role in ("agent", "caller"):
                out.append({"role": "user" if turn.role == "agent" else "assistant", "content": turn.text})
        return out

    def next_line(self, transcript: Sequence[Turn]) -> str | None:
        if _caller_turns(transcript) >= self.max_turns:
            return None
        body = {"model": self.model, "messages": self.messages(transcript), "temperature": self.temperature}
        answer = self.client.post("/chat/completions", body)
        try:
            text = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise MalformedResponseError(self.client.vendor, 200, "the caller model's answer has no choices[0].message.content") from None
        usage = answer.get("usage") or {}
        self.tokens_in += int(usage.get("prompt_tokens") or 0)
        self.tokens_out += int(usage.get("completion_tokens") or 0)
        if not isinstance(text, str) or not text.strip():
            raise MalformedResponseError(self.client.vendor, 200, "the caller model answered with empty content")
        return None if END_TOKEN in text else text.strip()


def caller_client(settings: Settings) -> Any | None:
    """A client for the caller model (``ASSAY_CALLER_*``, defaulting to the judge's), or None when unset."""
    from .http import VendorClient

    base = settings.caller_base_url or settings.judge_base_url
    if not base or not (settings.caller_model or settings.judge_model):
        return None
    key = settings.caller_api_key or settings.judge_api_key
    headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
    return VendorClient("caller", base, headers, timeout=60.0)


NO_CALLER = (
    "case {case!r} has no scripted caller turns (situation.turns) and no caller model is configured: "
    "give the case scripted turns, or set ASSAY_CALLER_BASE_URL and ASSAY_CALLER_MODEL "
    "(or the judge's ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL, which the caller defaults to)"
)


def caller_for(situation: Mapping[str, Any], settings: Settings, *, client: Any | None = None, case: str = "",
               max_turns: int = DEFAULT_MAX_TURNS) -> Caller:
    """Scripted when ``situation["turns"]`` is non-empty, else simulated; ConfigError when neither is possible.

    ``client`` (from :func:`caller_client`) is shared by the callers of one run; without it one is made
    for this caller, and :meth:`SimulatedCaller.close` closes it.
    """
    turns = situation.get("turns") or []
    if turns:
        return ScriptedCaller(turns)
    owned = client is None
    client = caller_client(settings) if owned else client
    if client is None:
        raise ConfigError(NO_CALLER.format(case=case or situation.get("caller") or "?"))
    model = settings.caller_model or settings.judge_model
    return SimulatedCaller(client, str(model), situation, max_turns=max_turns, owns_client=owned)


__all__ = ["DEFAULT_MAX_TURNS", "END_TOKEN", "Caller", "ScriptedCaller", "SimulatedCaller", "caller_client",
           "caller_for", "caller_prompt"]
