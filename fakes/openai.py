"""A fake OpenAI-compatible chat server: ``POST /v1/chat/completions``, for our judge and caller simulator.

Clients use ``fake.url + "/v1"`` as their base URL and send ``Authorization: Bearer <key>``. Every
request body is validated against OpenAI's published OpenAPI document (``specs/openai-openapi.json.gz``,
the chat completions operation; see ``specs/README.md``); a body it refuses gets 400 with the validation
messages in OpenAI's error shape ``{"error": {"message", "type", "param", "code"}}``. A valid request gets
a completion in the documented shape ``{id, object: "chat.completion", created, model, choices: [{index,
message: {role: "assistant", content, refusal: null}, logprobs: null, finish_reason: "stop"}], usage:
{prompt_tokens, completion_tokens, total_tokens}}``.

What the assistant says is chosen by **rules**, kept in ``faults.scripts["rules"]`` (so they can be set
over the control API too): a list of ``{"match": <regex>, "reply": <string or any JSON value>}``. The
contents of all messages, joined with newlines, are searched (``re.search``, DOTALL) with each rule's
regex in order; the **first** match wins, except that a rule with ``"rate": r`` wins only that share of the
requests it matches, evenly spread (:func:`assay.fakes.brain.fires`: a judge that is noisy at an exact rate). A reply that is not a string is sent as its JSON text, so a
rule can return a judge verdict as a dict. Without a matching rule:

- if ``response_format`` asks for JSON (``json_object`` or ``json_schema``), or the messages ask for a
  "JSON object" (a model told to answer JSON does), a valid judge verdict ``{"verdict": "pass",
  "rationale": "..."}``;
- otherwise a short caller-like line.

**Answer modes** (``faults.scripts["answer_mode"]``, one of :data:`ANSWER_MODES`; :meth:`FakeOpenAI.answer_mode`)
make the server and its model behave as real ones do once the reply is chosen: the JSON wrapped in a
```` ```json ```` fence (``fenced``) or in prose (``prose``); keys renamed, the verdict in capitals and an
extra key (``renamed``); the model's thoughts in ``reasoning_content`` beside the answer, voicing the
opposite verdict (``reasoning``); a refusal in ``message.refusal`` with no content (``refusal``); empty
content (``empty``); the answer cut in half with ``finish_reason: "length"`` (``length``); a server that
refuses ``response_format`` of type ``json_schema`` with 400 (``no_json_schema``, OpenAI's words for a
model without structured outputs), or refuses both JSON types (``no_json``). Each still answers in the
documented shape. A 200 whose body is an error object is the wild mode every fake has
(``faults.wild = {"error_200": "*"}``, :mod:`.wild`).

Token counts are deterministic: ``ceil(words / 0.75)`` of the message contents (prompt) and of the
reply (completion). Every request body received is kept in :attr:`FakeOpenAI.bodies` (the key travels
in a header, never there).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from typing import Any

from .base import Answer, FakeRequest, FakeVendor
from .brain import fires
from .openapi import OpenApi, document

DEFAULT_VERDICT = {"verdict": "pass", "rationale": "The agent did what the rubric asks."}
"""The reply to a JSON request that no rule matches."""
DEFAULT_LINE = "Hi, I'm calling about a problem at home. Can you help me?"
"""The reply to a plain request that no rule matches."""
ANSWER_MODES = ("fenced", "prose", "renamed", "reasoning", "refusal", "empty", "length", "no_json_schema", "no_json")
"""What ``faults.scripts["answer_mode"]`` may name (see the module docstring)."""
RENAMED = {"verdict": "Result", "rationale": "Reasoning"}
"""How the ``renamed`` mode names the verdict's keys."""
REFUSAL = "I'm sorry, but I can't help with that request."
"""The ``refusal`` mode's ``message.refusal``."""

_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
          404: "invalid_request_error", 429: "rate_limit_exceeded", 503: "server_error"}
_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
_PATH = "/chat/completions"
_REFUSED = {"no_json_schema": ("json_schema",), "no_json": ("json_schema", "json_object")}


def tokens(text: str) -> int:
    """The fake's token count of ``text``: ``ceil(words / 0.75)``."""
    return math.ceil(len(text.split()) / 0.75)


def openai_document() -> OpenApi:
    """The chat completions part of OpenAI's published OpenAPI document, loaded on first use."""
    return document("openai-openapi.json.gz")


class FakeOpenAI(FakeVendor):
    """An OpenAI-compatible chat completions endpoint on loopback, its replies steered by rules."""

    name = "openai"

    def __init__(self, key: str = "test-key", host: str = "127.0.0.1", port: int = 0):
        super().__init__(key, host, port)
        self.bodies: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def setup_routes(self) -> None:
        self.route("POST", "/v1/chat/completions", self._complete)

    def error_body(self, status: int, message: str, param: str | None = None) -> Any:
        return {"error": {"message": message, "type": _TYPES.get(status, "api_error"), "param": param,
                          "code": _CODES.get(status)}}

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self.bodies.clear()

    def add_rule(self, match: str, reply: Any) -> None:
        """Append a rule: when ``match`` (a regex) finds the request's message text, answer ``reply``."""
        re.compile(match)
        with self.lock:
            self.faults.scripts.setdefault("rules", []).append({"match": match, "reply": reply})

    def answer_mode(self, mode: str | None) -> None:
        """Answer from now on as ``mode`` (one of :data:`ANSWER_MODES`) says; None: plainly."""
        if mode is not None and mode not in ANSWER_MODES:
            raise ValueError(f"unknown answer mode {mode!r}; known: {', '.join(ANSWER_MODES)}")
        with self.lock:
            self.faults.scripts["answer_mode"] = mode

    def completions(self) -> int:
        """How many completion requests were answered 200."""
        with self.lock:
            return sum(1 for r in self.requests if r["path"] == "/v1/chat/completions" and r["status"] == 200)

    # -- the endpoint --------------------------------------------------------------------------------
    def _complete(self, req: FakeRequest) -> Answer:
        body = req.json()
        with self.lock:
            self.bodies.append(body)
            mode = self.faults.scripts.get("answer_mode")
        problems = openai_document().problems("POST", _PATH, body)
        if problems:
            return 400, self.error_body(400, "; ".join(problems))
        asked = (body.get("response_format") or {}).get("type", "text")
        if asked in _REFUSED.get(mode, ()):
            return 400, self.error_body(400, f"Invalid parameter: 'response_format' of type '{asked}' is not "
                                             "supported with this model.", param="response_format")
        text = "\n".join(_text(m.get("content")) for m in body["messages"])
        reply = self._reply(text, asked != "text" or "json object" in text.lower())
        message: dict[str, Any] = {"role": "assistant", "content": _wild_content(reply, mode), "refusal": None}
        finish = "stop"
        if mode == "refusal":
            message.update(content=None, refusal=REFUSAL)
        elif mode == "empty":
            message["content"] = ""
        elif mode == "length":
            finish = "length"
        elif mode == "reasoning":
            opposite = {**DEFAULT_VERDICT, "verdict": "fail"}
            message["reasoning_content"] = f"Let me think. At first I would answer {json.dumps(opposite)}, but no."
        prompt, completion = tokens(text), tokens(message["content"] or message["refusal"] or "")
        return 200, {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def _reply(self, text: str, wants_json: bool) -> Any:
        with self.lock:  # a rule with a "rate" answers only that share of its matches (the brain's rule)
            rules = list(self.faults.scripts.get("rules", []))
            chosen = next((r for k, r in enumerate(rules)
                           if re.search(r["match"], text, re.DOTALL) and fires(r, k, self.faults.hits)), None)
        if chosen is not None:
            return chosen["reply"]
        return dict(DEFAULT_VERDICT) if wants_json else DEFAULT_LINE


def _text(content: Any) -> str:
    """A request message's content as text: the string, or its text parts joined."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _wild_content(reply: Any, mode: str | None) -> str:
    """The message content for ``reply`` as the answer ``mode`` words it (the reply's JSON text by default)."""
    if mode == "renamed" and isinstance(reply, dict):
        reply = {RENAMED.get(k, k): (v.upper() if k == "verdict" and isinstance(v, str) else v) for k, v in reply.items()}
        reply["confidence"] = 0.9
    text = reply if isinstance(reply, str) else json.dumps(reply)
    if mode == "fenced":
        return f"```json\n{text}\n```"
    if mode == "prose":
        return f"Here is my assessment of the conversation.\n\n{text}\n\nLet me know if you need anything else."
    if mode == "length":
        return text[: len(text) // 2]
    return text


__all__ = ["ANSWER_MODES", "DEFAULT_LINE", "DEFAULT_VERDICT", "REFUSAL", "RENAMED", "FakeOpenAI", "openai_document",
           "tokens"]
