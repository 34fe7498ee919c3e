"""VAPI, translated in one place: our compiled config and assertions out, VAPI's chats and eval runs back.

Outbound: a compiled config becomes an assistant (:func:`assistant_body`: the prompt with its
variables filled as the system message, tools as ``{type: "function", function: {...}}``, the first
message, and every setting where :data:`SETTINGS` puts it; one VAPI cannot take is refused by
:func:`refused`); a live assistant becomes a compiled config again (:func:`config_from_assistant`); an assertion with a home in VAPI's evals becomes a judge
plan (:func:`judge_plan`); a case's caller turns become a ``chat.mockConversation`` eval
(:func:`mock_conversation`). Inbound: a chat response becomes the agent's reply with its tool calls
paired with their results (:func:`chat_reply`); an eval run's result becomes a transcript
(:func:`eval_transcript`).

:class:`VapiApi` is the only thing that talks to VAPI, through :class:`~assay.adapters.http.VendorClient`
(classified errors, retries, ``Retry-After``). A refused key (401/403) is a :class:`ConfigError` naming
``ASSAY_VAPI_API_KEY``, never the key. VAPI limits names (assistants 40 characters, evals 80), so a
scratch object's name is sent as :func:`vendor_name`, a short digest of it that teardown can recompute.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from assay.core.compiled import PLACEHOLDER, CompiledConfig, refused_settings, settings_given
from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.evidence import ToolCall, Turn
from assay.core.runner import AssertionSpec
from assay.core.settings import Settings

from .http import VendorApi, vendor_message
from .runners.platform_chat import AgentReply

VENDOR = "vapi"
DEFAULT_MODEL: dict[str, str] = {"provider": "openai", "model": "gpt-4o"}
"""The assistant's model when its compiled config names none (the config's ``model`` is sent as it is)."""
KEY_SETTING = "ASSAY_VAPI_API_KEY"
ANY_REPLY = "/.*/"
"""The judge plan of a checkpoint that only lets the agent speak: every reply matches."""


def vendor_name(scratch_name: str) -> str:
    """The short, stable name a scratch object is created under at VAPI (30 characters)."""
    return "assay-" + hashlib.sha256(scratch_name.encode()).hexdigest()[:24]


def resolve(text: str, variables: dict[Any, Any]) -> str:
    """``text`` with each ``{{variable}}`` that has a non-empty value filled in; others left as written."""
    def fill(m: re.Match[str]) -> str:
        value = variables.get(m.group(1))
        return m.group(0) if value is None or value == "" else str(value)
    return PLACEHOLDER.sub(fill, text)


SETTINGS: dict[str, str] = {
    "model.provider": "model.provider", "model.model": "model.model", "model.temperature": "model.temperature",
    "model.max_tokens": "model.maxTokens",
    "voice.provider": "voice.provider", "voice.voice_id": "voice.voiceId", "voice.model": "voice.model",
    "voice.speed": "voice.speed", "voice.stability": "voice.stability", "voice.similarity_boost": "voice.similarityBoost",
    "transcriber.provider": "transcriber.provider", "transcriber.model": "transcriber.model",
    "transcriber.language": "transcriber.language",
    "turn.wait_seconds": "startSpeakingPlan.waitSeconds",
    "max_duration_seconds": "maxDurationSeconds", "end_call_message": "endCallMessage", "end_call_phrases": "endCallPhrases",
}
"""Each compiled-config setting VAPI takes -> where it goes in an assistant (``CreateAssistantDTO``). A setting
not here (``turn.silence_timeout_seconds``: VAPI's assistant document has none) is refused by name."""


def refused(config: CompiledConfig) -> str | None:
    """Why VAPI cannot take the config's settings, or None (VAPI needs a model's provider: it is never guessed)."""
    if config.model is not None and config.model.provider is None:
        return (f"VAPI needs the provider of the compiled config's model {config.model.model!r}: set model.provider "
                "(openai, anthropic, ...)")
    return refused_settings(config, SETTINGS, "VAPI")


def assistant_body(config: CompiledConfig, name: str, model: dict[str, str] | None = None,
                   tool_server: str | None = None) -> dict[str, Any]:
    """The ``POST /assistant`` body for a compiled config, under VAPI name ``vendor_name(name)``. With
    ``tool_server`` (the suite's tool mocks), every tool's ``server.url`` is it: VAPI posts calls there.

    Every setting goes where :data:`SETTINGS` says (check :func:`refused` first: a setting VAPI cannot take
    is not sent). The model is the config's, else ``model`` (a runner option), else :data:`DEFAULT_MODEL`."""
    tools = []
    for tool in config.tools:
        extra = tool.model_extra or {}
        function: dict[str, Any] = {"name": tool.name, "description": tool.description,
                                    "parameters": extra.get("parameters") or {"type": "object", "properties": {}}}
        tools.append({"type": "function", "function": function, **({"server": {"url": tool_server}} if tool_server else {})})
    body: dict[str, Any] = {"model": dict(model or DEFAULT_MODEL) if config.model is None else {}}
    for setting in settings_given(config):
        if setting in SETTINGS:
            group, _, field = setting.partition(".")
            value = getattr(getattr(config, group), field) if field else getattr(config, group)
            _put(body, SETTINGS[setting], value)
    body["model"]["messages"] = [{"role": "system", "content": resolve(config.prompt, config.variables)}]
    if tools:
        body["model"]["tools"] = tools
    body.update(name=vendor_name(name), metadata={"assay_scratch": name})
    if config.first_message:
        body["firstMessage"] = resolve(config.first_message, config.variables)
    return body


def _put(body: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        body = body.setdefault(part, {})
    body[last] = value


def config_from_assistant(assistant: dict[str, Any]) -> dict[str, Any]:
    """A compiled config read from a VAPI assistant (``GET /assistant/{id}``): its system prompt, first message,
    function tools and every setting of :data:`SETTINGS` it has. What else it holds (server, hooks, plans Assay does
    not translate) is left out, listed under ``imported.left_out`` so nobody takes the config for the whole
    assistant."""
    model = assistant.get("model") if isinstance(assistant.get("model"), dict) else {}
    prompt = "\n\n".join(str(m.get("content") or "") for m in model.get("messages") or []
                          if isinstance(m, dict) and m.get("role") == "system")
    config: dict[str, Any] = {"name": str(assistant.get("name") or assistant.get("id") or "VAPI assistant"),
                              "prompt": prompt, "variables": {}}
    tools = [t.get("function") or {} for t in model.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    config["tools"] = [{k: v for k, v in f.items() if k in ("name", "description", "parameters")} for f in tools if f.get("name")]
    if assistant.get("firstMessage"):
        config["first_message"] = assistant["firstMessage"]
    for setting, path in SETTINGS.items():
        value: Any = assistant
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            _put(config, setting, value)
    known = {"id", "orgId", "createdAt", "updatedAt", "name", "firstMessage", "metadata", "model", "voice", "transcriber",
             "maxDurationSeconds", "endCallMessage", "endCallPhrases", "startSpeakingPlan"}
    left_out = sorted(k for k in assistant if k not in known)
    left_out += [f"model.{k}" for k in sorted(model) if k not in ("provider", "model", "temperature", "maxTokens", "messages",
                                                                   "tools")]
    left_out += [f"model.tools[{t.get('type')}]" for t in model.get("tools") or [] if isinstance(t, dict)
                 and t.get("type") != "function"]
    for group in ("voice", "transcriber", "startSpeakingPlan"):
        taken = {p.split(".")[1] for p in SETTINGS.values() if p.startswith(group + ".")} | {"provider"}
        left_out += [f"{group}.{k}" for k in sorted(assistant.get(group) or {}) if k not in taken]
    config["imported"] = {"vendor": VENDOR, "id": assistant.get("id"), "left_out": left_out}
    return config


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as an object; text that is not a JSON object is kept under ``_unparsed``."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_unparsed": raw}


def _result(content: Any) -> Any:
    if not isinstance(content, str):
        return content
    try:
        return json.loads(content)
    except ValueError:
        return content


MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})
"""The roles VAPI's document gives a chat message; the reply is read from ``assistant`` and ``tool`` ones."""


def malformed(what: str, answer: Any) -> MalformedResponseError:
    """A 2xx answer off the documented shape, with VAPI's own words when the body carries an error."""
    said = vendor_message(answer, "") if isinstance(answer, dict) else ""
    return MalformedResponseError(VENDOR, 200, what + (f" (VAPI said: {said})" if said else ""))


def chat_reply(response: Any) -> AgentReply:
    """A ``POST /chat`` response read as the agent's reply; MalformedResponseError when it is not the documented
    shape (a message with a role VAPI does not document included: its words could be the agent's)."""
    if not isinstance(response, dict) or not isinstance(response.get("id"), str) or not isinstance(response.get("output"), list):
        raise malformed("the chat response has no 'id' or no 'output' list", response)
    texts, calls, results = [], [], {}
    for message in response["output"]:
        if not isinstance(message, dict):
            raise MalformedResponseError(VENDOR, 200, f"a chat output message is not an object: {message!r}"[:200])
        if message.get("role") not in MESSAGE_ROLES:
            raise MalformedResponseError(VENDOR, 200, f"a chat output message has role {message.get('role')!r}, which "
                                         f"VAPI does not document ({', '.join(sorted(MESSAGE_ROLES))})")
        if message.get("role") == "tool":
            results[message.get("tool_call_id")] = _result(message.get("content"))
        elif message.get("role") == "assistant":
            if message.get("content"):
                texts.append(str(message["content"]))
            calls += [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    tool_calls = [
        ToolCall(name=str((c.get("function") or {}).get("name") or ""), arguments=_arguments((c.get("function") or {}).get("arguments")),
                 result=results.get(c.get("id")))
        for c in calls
    ]
    cost = response.get("cost")
    return AgentReply("\n".join(texts), tool_calls, float(cost) if isinstance(cost, int | float) else None,
                      response["id"], response)


# -------------------------------------------------------------------------------- evals

def _js_literal(pattern: str, case_insensitive: bool) -> str:
    """A pattern as VAPI's regex judge plans write it: ``/pattern/flags`` (named groups in JavaScript's syntax)."""
    return f"/{pattern.replace('(?P<', '(?<')}/{'i' if case_insensitive else ''}"


JUDGE_INSTRUCTIONS = (
    "You judge a conversation between a caller and a phone assistant.\n\nConversation:\n{{{{messages}}}}\n\n"
    "Criterion: {rubric}\n\nAnswer with exactly one word: pass if the criterion holds for the assistant, fail otherwise."
)


def judge_plan(assertion: AssertionSpec, judge_model: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The VAPI judge plan for an assertion, or None when it has no home in VAPI's evals.

    ``transcript.contains`` and ``transcript.regex`` said by the agent become ``regex`` plans (a contains
    is its text escaped: VAPI's ``exact`` plan compares the whole reply, which is not a contains);
    ``rubric`` becomes an ``ai`` plan whose judge sees the whole conversation. Text on other roles, and
    every other mechanism, has no home: VAPI judges only the assistant's messages.
    """
    p = assertion.params
    if assertion.mechanism in ("transcript.contains", "transcript.regex") and p.get("role") == "agent":
        pattern = re.escape(p["text"]) if assertion.mechanism == "transcript.contains" else p["text"]
        content = _js_literal(pattern, bool(p.get("case_insensitive")))
        return {"type": "regex", "content": content} if len(content) <= 1000 else None
    if assertion.mechanism == "rubric":
        model = {**(judge_model or DEFAULT_MODEL),
                 "messages": [{"role": "system", "content": JUDGE_INSTRUCTIONS.format(rubric=p["rubric"])}]}
        return {"type": "ai", "model": model}
    return None


def mock_conversation(name: str, caller_turns: list[str], plan: dict[str, Any]) -> dict[str, Any]:
    """A ``chat.mockConversation`` eval: each caller turn is followed by the agent's reply; the reply to the
    last caller turn is judged by ``plan``, earlier replies only let the agent speak (:data:`ANY_REPLY`)."""
    messages: list[dict[str, Any]] = []
    for k, turn in enumerate(caller_turns):
        messages.append({"role": "user", "content": turn[:1000]})
        last = k == len(caller_turns) - 1
        messages.append({"role": "assistant", "judgePlan": plan if last else {"type": "regex", "content": ANY_REPLY}})
    return {"type": "chat.mockConversation", "name": vendor_name(name), "messages": messages}


def eval_transcript(result: dict[str, Any]) -> tuple[list[Turn], list[ToolCall]]:
    """The conversation an eval run result replayed: user mocks as caller turns, assistant messages as
    agent turns, tool calls paired with the tool message that follows. No timings: VAPI gives none."""
    turns: list[Turn] = []
    calls: list[ToolCall] = []
    pending: list[int] = []
    for message in result.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        if role == "user":
            turns.append(Turn(role="caller", text=str(content or "")))
        elif role == "assistant":
            turns.append(Turn(role="agent", text=str(content or "")))
            for call in message.get("toolCalls") or []:
                calls.append(ToolCall(name=str(call.get("name") or ""), arguments=_arguments(call.get("arguments") or {})))
                pending.append(len(calls) - 1)
        elif role == "tool" and pending:
            k = pending.pop(0)
            calls[k] = calls[k].model_copy(update={"result": _result(content)})
    return turns, calls


# -------------------------------------------------------------------------------- the API

class VapiApi(VendorApi):
    """VAPI's endpoints that Assay uses, over one :class:`~assay.adapters.http.VendorClient`."""

    label = "VAPI"
    key_setting = KEY_SETTING

    @classmethod
    def from_settings(cls, settings: Settings, **client_options: Any) -> "VapiApi":
        from .http import VendorClient

        if settings.vapi_api_key is None:
            raise ConfigError(f"VAPI needs a private key: set {KEY_SETTING}")
        headers = {"Authorization": f"Bearer {settings.vapi_api_key.get_secret_value()}"}
        return cls(VendorClient(VENDOR, settings.vapi_base_url, headers, **client_options))

    def _created_id(self, answer: Any, what: str) -> str:
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            raise malformed(f"the created {what} has no 'id'", answer)
        return answer["id"]

    def create_assistant(self, body: dict[str, Any]) -> str:
        return self._created_id(self._call("POST", "/assistant", body), "assistant")

    def get_assistant(self, assistant_id: str) -> dict[str, Any]:
        """A live assistant as VAPI keeps it (``GET /assistant/{id}``)."""
        answer = self._call("GET", f"/assistant/{assistant_id}")
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            raise malformed("the assistant has no 'id'", answer)
        return answer

    def delete_assistant(self, assistant_id: str) -> None:
        self._delete(f"/assistant/{assistant_id}")

    def find_assistants(self, scratch_name: str) -> list[str]:
        """Ids of the assistants created under ``scratch_name`` (``GET /assistant``, a bare array, newest 1000)."""
        listed = self._call("GET", "/assistant", params={"limit": 1000})
        return [a["id"] for a in listed or [] if isinstance(a, dict) and a.get("name") == vendor_name(scratch_name)]

    def chat(self, assistant_id: str, text: str, previous_chat_id: str | None = None,
             marker: str | None = None) -> AgentReply:
        """One exchange (``POST /chat``, billed). With ``marker`` (a unique name, at most 40 characters) the
        chat carries it as its ``name``: a chat whose answer was lost is then found by it
        (:meth:`find_chat`) instead of being made twice; without one, such a failure is an error."""
        body: dict[str, Any] = {"assistantId": assistant_id, "input": text}
        if previous_chat_id:
            body["previousChatId"] = previous_chat_id
        recover = None
        if marker:
            body["name"] = marker
            recover = lambda: self.find_chat(assistant_id, marker, previous_chat_id)  # noqa: E731
        return chat_reply(self._call("POST", "/chat", body, creates=True, recover=recover))

    def find_chat(self, assistant_id: str, marker: str, previous_chat_id: str | None = None) -> dict[str, Any] | None:
        """The chat named ``marker`` (``GET /chat`` filtered by assistant and previous chat), or None."""
        params: dict[str, Any] = {"assistantId": assistant_id, "limit": 100}
        if previous_chat_id:
            params["previousChatId"] = previous_chat_id
        listed = self._call("GET", "/chat", params=params) or {}
        return next((c for c in listed.get("results") or [] if isinstance(c, dict) and c.get("name") == marker), None)

    def create_eval(self, body: dict[str, Any]) -> str:
        return self._created_id(self._call("POST", "/eval", body), "eval")

    def delete_eval(self, eval_id: str) -> None:
        self._delete(f"/eval/{eval_id}")

    def find_evals(self, scratch_name: str) -> list[str]:
        listed = self._call("GET", "/eval", params={"limit": 1000}) or {}
        return [e["id"] for e in listed.get("results") or [] if e.get("name") == vendor_name(scratch_name)]

    def run_eval(self, eval_id: str, assistant_id: str) -> str:
        """Start an eval run (billed). Our evals are scratch objects, one per run and assertion, so a run
        whose answer was lost is found by its eval (:meth:`find_eval_run`) instead of being started twice."""
        body = {"type": "eval", "evalId": eval_id, "target": {"type": "assistant", "assistantId": assistant_id}}
        recover = lambda: self.find_eval_run(eval_id)  # noqa: E731
        return self._created_id(self._call("POST", "/eval/run", body, creates=True, recover=recover), "eval run")

    def find_eval_run(self, eval_id: str) -> dict[str, Any] | None:
        """The newest run of eval ``eval_id`` (``GET /eval/run``, newest 100), or None."""
        listed = self._call("GET", "/eval/run", params={"limit": 100, "sortOrder": "DESC"}) or {}
        return next((r for r in listed.get("results") or [] if isinstance(r, dict) and r.get("evalId") == eval_id), None)

    def eval_run(self, run_id: str) -> dict[str, Any]:
        answer = self._call("GET", f"/eval/run/{run_id}")
        if not isinstance(answer, dict) or answer.get("status") not in ("queued", "running", "ended"):
            status = answer.get("status") if isinstance(answer, dict) else None
            raise malformed(f"the eval run's status is {status!r}, not one VAPI documents (queued, running, ended)", answer)
        return answer


__all__ = ["DEFAULT_MODEL", "KEY_SETTING", "SETTINGS", "VapiApi", "assistant_body", "chat_reply", "config_from_assistant",
           "eval_transcript", "judge_plan", "mock_conversation", "refused", "resolve", "vendor_name"]
