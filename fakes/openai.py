"""A fake OpenAI-compatible chat server: ``POST /v1/chat/completions``, for our judge and caller simulator.

Clients use ``fake.url + "/v1"`` as their base URL and send ``Authorization: Bearer <key>``. A request
``{model, messages: [{role, content}], temperature?, response_format?}`` gets the documented reply
``{id, object: "chat.completion", created, model, choices: [{index, message: {role: "assistant", content},
finish_reason: "stop"}], usage: {prompt_tokens, completion_tokens, total_tokens}}``.

What the assistant says is chosen by **rules**, kept in ``faults.scripts["rules"]`` (so they can be set
over the control API too): a list of ``{"match": <regex>, "reply": <string or any JSON value>}``. The
contents of all messages, joined with newlines, are searched (``re.search``, DOTALL) with each rule's
regex in order; the **first** match wins, except that a rule with ``"rate": r`` wins only that share of the
requests it matches, evenly spread (:func:`assay.fakes.brain.fires`: a judge that is noisy at an exact rate). A reply that is not a string is sent as its JSON text, so a
rule can return a judge verdict as a dict. Without a matching rule:

- if ``response_format`` asks for JSON (``json_object`` or ``json_schema``), a valid judge verdict
  ``{"verdict": "pass", "rationale": "..."}``;
- otherwise a short caller-like line.

Token counts are deterministic: ``ceil(words / 0.75)`` of the message contents (prompt) and of the
reply (completion). Errors use OpenAI's shape ``{"error": {"message", "type", "code"}}``. Every
request body received is kept in :attr:`FakeOpenAI.bodies` (the key travels in a header, never there).
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

DEFAULT_VERDICT = {"verdict": "pass", "rationale": "The agent did what the rubric asks."}
"""The reply to a JSON-mode request that no rule matches."""
DEFAULT_LINE = "Hi, I'm calling about a problem at home. Can you help me?"
"""The reply to a plain request that no rule matches."""

_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
          404: "invalid_request_error", 429: "rate_limit_exceeded", 503: "server_error"}
_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


def tokens(text: str) -> int:
    """The fake's token count of ``text``: ``ceil(words / 0.75)``."""
    return math.ceil(len(text.split()) / 0.75)


class FakeOpenAI(FakeVendor):
    """An OpenAI-compatible chat completions endpoint on loopback, its replies steered by rules."""

    name = "openai"

    def __init__(self, key: str = "test-key", host: str = "127.0.0.1", port: int = 0):
        super().__init__(key, host, port)
        self.bodies: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def setup_routes(self) -> None:
        self.route("POST", "/v1/chat/completions", self._complete)

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"message": message, "type": _TYPES.get(status, "api_error"), "code": _CODES.get(status)}}

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self.bodies.clear()

    def add_rule(self, match: str, reply: Any) -> None:
        """Append a rule: when ``match`` (a regex) finds the request's message text, answer ``reply``."""
        re.compile(match)
        with self.lock:
            self.faults.scripts.setdefault("rules", []).append({"match": match, "reply": reply})

    def completions(self) -> int:
        """How many completion requests were answered 200."""
        with self.lock:
            return sum(1 for r in self.requests if r["path"] == "/v1/chat/completions" and r["status"] == 200)

    # -- the endpoint --------------------------------------------------------------------------------
    def _complete(self, req: FakeRequest) -> Answer:
        body = req.json()
        with self.lock:
            self.bodies.append(body)
        problem = _invalid(body)
        if problem:
            return 400, self.error_body(400, problem)
        text = "\n".join(m["content"] for m in body["messages"])
        content = self._reply(text, body.get("response_format"))
        prompt, completion = tokens(text), tokens(content)
        return 200, {
            "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def _reply(self, text: str, response_format: Any) -> str:
        with self.lock:  # a rule with a "rate" answers only that share of its matches (the brain's rule)
            rules = list(self.faults.scripts.get("rules", []))
            chosen = next((r for k, r in enumerate(rules)
                           if re.search(r["match"], text, re.DOTALL) and fires(r, k, self.faults.hits)), None)
        if chosen is not None:
            reply = chosen["reply"]
            return reply if isinstance(reply, str) else json.dumps(reply)
        wants_json = isinstance(response_format, dict) and response_format.get("type") in ("json_object", "json_schema")
        return json.dumps(DEFAULT_VERDICT) if wants_json else DEFAULT_LINE


def _invalid(body: Any) -> str | None:
    """What is wrong with a request body, in OpenAI's words, or None."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "developer"):
            return f"messages[{i}].role must be one of 'system', 'user', 'assistant', 'developer'"
        if not isinstance(m.get("content"), str):
            return f"messages[{i}].content must be a string"
    return None


__all__ = ["DEFAULT_LINE", "DEFAULT_VERDICT", "FakeOpenAI", "tokens"]
