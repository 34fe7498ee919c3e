"""ElevenLabs Agents, translated in one place: our compiled config and situation out, its simulated
conversation and analysis back. A change on ElevenLabs' side touches this module only.

Outbound:

- a compiled config becomes an agent (:func:`agent_body`): ``conversation_config.agent.prompt.prompt`` is
  the prompt with its variables filled, ``first_message`` likewise, tools are client tools with their
  JSON-schema parameters, every setting goes where :data:`SETTINGS` puts it, and one ElevenLabs cannot
  take is refused by :func:`refused` (a live agent becomes a compiled config by :func:`config_from_agent`). A placeholder without a value stays as written and is declared as a dynamic
  variable whose value is its own text, so the agent sees exactly what an unresolved compile produced
  (the defect stays visible in the transcript) and ElevenLabs does not refuse to start the conversation;
- a situation becomes a ``simulation_specification`` (:func:`simulation_body`): ElevenLabs plays the
  caller itself, prompted with :func:`assay.adapters.caller.caller_prompt` (one situation reads the same
  to every vendor). Scripted caller turns are listed in that prompt as numbered quoted lines, the first
  also as the simulated user's ``first_message``. When the situation's ``world`` has facts, every tool is
  mocked to return them (``world[<tool name>]`` if present, else the whole world), since a client tool
  cannot run in a simulation. What the caller wants and must be told become evaluation criteria.

Inbound (:func:`read_conversation`, :func:`analysis_evaluations`): turns with ``t =
time_in_call_secs``; tool calls paired with their results by ``request_id`` (they arrive in separate
turns); the vendor's own analysis as runner evaluations, ``call_successful`` (evaluator
``elevenlabs:analysis``) and every criterion result (``elevenlabs:criteria``), on the vendor's verdict
(success -> pass, failure -> fail, unknown -> unknown) and, when scored, its 0..``max_score`` scale.

``end_t`` is left unknown (None): ElevenLabs reports only when a turn *began*, in whole seconds on a
simulated clock. Taking the next turn's start as this one's end would make every response latency
exactly zero, and a latency cap would then pass on evidence that measured nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assay.core.compiled import PLACEHOLDER, CompiledConfig, refused_settings, settings_given
from assay.core.errors import ConfigError, MalformedResponseError
from assay.core.evidence import Evaluation, ToolCall, Turn, Verdict
from assay.core.redact import redact
from assay.core.settings import Settings
from assay.core.tool_mocks import ToolMocks, argument_free, static_answer

from .caller import END_TOKEN, caller_prompt
from .http import VendorApi, vendor_message

VENDOR = "elevenlabs"
KEY_SETTING = "ASSAY_ELEVENLABS_API_KEY"
DEFAULT_LLM = "gpt-4o-mini"
"""The simulated user's LLM, and the agent's when its compiled config names no model, unless the runner is told
otherwise (its ``llm`` option)."""
VERDICTS: Mapping[str, Verdict] = {"success": "pass", "failure": "fail", "unknown": "unknown"}
"""ElevenLabs' result words onto ours; anything else reads as ``unknown`` (the raw value is kept)."""
SCRIPT_INTRO = ("Say exactly these lines, one per turn, in this order, word for word, whatever the agent "
                "says; after the last one, say goodbye and end the call:")
ENDING = "When you have what you called for, or the call is going nowhere, say goodbye and end the call."


def _resolve(text: str, variables: Mapping[Any, Any]) -> str:
    def fill(m: Any) -> str:
        value = variables.get(m.group(1))
        return m.group(0) if value is None or value == "" else str(value)
    return PLACEHOLDER.sub(fill, text)


SETTINGS: dict[str, str | None] = {
    "model.provider": None, "model.model": "agent.prompt.llm", "model.temperature": "agent.prompt.temperature",
    "model.max_tokens": "agent.prompt.max_tokens",
    "voice.provider": None, "voice.voice_id": "tts.voice_id", "voice.model": "tts.model_id", "voice.speed": "tts.speed",
    "voice.stability": "tts.stability", "voice.similarity_boost": "tts.similarity_boost",
    "transcriber.provider": "asr.provider", "transcriber.language": "agent.language",
    "turn.silence_timeout_seconds": "turn.silence_end_call_timeout",
    "max_duration_seconds": "conversation.max_duration_seconds",
}
"""Each compiled-config setting an ElevenLabs agent takes -> where it goes in ``conversation_config``. None: taken
but not sent (ElevenLabs picks the model's provider from its name; its voices are its own). A setting not here
(``transcriber.model``, ``turn.wait_seconds``, ``end_call_message``, ``end_call_phrases``) is refused by name."""
VOICE_PROVIDERS = frozenset({"11labs", "elevenlabs"})
"""The voice providers an ElevenLabs agent can speak with: its own voices only."""


def refused(config: CompiledConfig) -> str | None:
    """Why ElevenLabs cannot take the config's settings, or None."""
    if config.voice is not None and config.voice.provider not in VOICE_PROVIDERS:
        return (f"ElevenLabs agents speak with ElevenLabs voices only, and the compiled config's voice.provider is "
                f"{config.voice.provider!r}: use one of {', '.join(sorted(VOICE_PROVIDERS))}, or run the suite on a "
                "runner whose vendor takes that voice")
    return refused_settings(config, SETTINGS, "ElevenLabs")


def agent_body(config: CompiledConfig, name: str, llm: str = DEFAULT_LLM) -> dict[str, Any]:
    """The ``POST /v1/convai/agents/create`` body for a compiled config, named ``name``.

    Every setting goes where :data:`SETTINGS` says (check :func:`refused` first: a setting ElevenLabs cannot
    take is not sent). Without them: ``llm`` (a runner option), temperature 0, language ``en``."""
    prompt = _resolve(config.prompt, config.variables)
    first = _resolve(config.first_message, config.variables) if config.first_message else None
    tools = []
    for tool in config.tools:
        parameters = (tool.model_extra or {}).get("parameters") or {"type": "object", "properties": {}}
        tools.append({"type": "client", "name": tool.name, "description": tool.description or tool.name,
                      "parameters": parameters, "expects_response": True})
    agent: dict[str, Any] = {"language": "en", "prompt": {"prompt": prompt, "llm": llm, "temperature": 0.0, "tools": tools}}
    if first:
        agent["first_message"] = first
    unresolved = {n: "{{" + n + "}}" for n in PLACEHOLDER.findall(prompt + "\n" + (first or ""))}
    if unresolved:
        agent["dynamic_variables"] = {"dynamic_variable_placeholders": unresolved}
    conversation_config: dict[str, Any] = {"agent": agent}
    for setting in settings_given(config):
        if SETTINGS.get(setting):
            group, _, field = setting.partition(".")
            value = getattr(getattr(config, group), field) if field else getattr(config, group)
            _put(conversation_config, str(SETTINGS[setting]), value)
    return {"name": name, "conversation_config": conversation_config, "tags": ["assay", "scratch"]}


def _put(body: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        body = body.setdefault(part, {})
    body[last] = value


def config_from_agent(agent: Mapping[str, Any]) -> dict[str, Any]:
    """A compiled config read from an ElevenLabs agent (``GET /v1/convai/agents/{agent_id}``): its prompt, first
    message, client and webhook tools, and every setting of :data:`SETTINGS` it has; what else it holds is listed
    under ``imported.left_out``. Its dynamic-variable placeholders become the config's variables."""
    conversation = agent.get("conversation_config") if isinstance(agent.get("conversation_config"), Mapping) else {}
    settings = conversation.get("agent") if isinstance(conversation.get("agent"), Mapping) else {}
    prompt = settings.get("prompt") if isinstance(settings.get("prompt"), Mapping) else {}
    placeholders = (settings.get("dynamic_variables") or {}).get("dynamic_variable_placeholders") or {}
    config: dict[str, Any] = {"name": str(agent.get("name") or agent.get("agent_id") or "ElevenLabs agent"),
                              "prompt": str(prompt.get("prompt") or ""), "variables": dict(placeholders)}
    config["tools"] = [{k: v for k, v in t.items() if k in ("name", "description", "parameters")}
                       for t in prompt.get("tools") or [] if isinstance(t, Mapping) and t.get("name")]
    if settings.get("first_message"):
        config["first_message"] = settings["first_message"]
    for setting, path in SETTINGS.items():
        value: Any = conversation
        for part in (path or "-").split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is not None and not (setting == "model.max_tokens" and value <= 0) and not (
                setting == "turn.silence_timeout_seconds" and value < 0):  # ElevenLabs' "none" is -1
            _put(config, setting, value)
    if "voice" in config:
        config["voice"]["provider"] = "11labs"
    taken = {p for p in SETTINGS.values() if p}
    left_out = [f"{group}.{k}" for group, part in conversation.items() if isinstance(part, Mapping)
                for k in sorted(part) if f"{group}.{k}" not in taken and group != "agent"]
    left_out += [f"agent.{k}" for k in sorted(settings) if k not in ("prompt", "first_message", "language", "dynamic_variables")]
    left_out += [f"agent.prompt.{k}" for k in sorted(prompt) if k not in ("prompt", "llm", "temperature", "max_tokens", "tools")]
    config["imported"] = {"vendor": VENDOR, "id": agent.get("agent_id"), "left_out": left_out}
    return config


def user_prompt(situation: Mapping[str, Any]) -> str:
    """The simulated user's prompt: our caller's instructions, with ElevenLabs' way of ending the call."""
    lines = [ln for ln in caller_prompt(situation).splitlines() if END_TOKEN not in ln]
    turns = [str(t) for t in situation.get("turns") or []]
    if turns:
        lines += ["", SCRIPT_INTRO, *(f"{i}. {json.dumps(t, ensure_ascii=False)}" for i, t in enumerate(turns, 1))]
    else:
        lines.append(ENDING)
    return "\n".join(lines)


def criteria(situation: Mapping[str, Any], scoring_mode: str = "binary") -> list[dict[str, Any]]:
    """ElevenLabs evaluation criteria for the situation: the caller's goal, and each thing they must be told."""
    goals = []
    if situation.get("wants"):
        goals.append(("caller_goal", "Caller's goal", f"The agent dealt with what the caller wanted: {situation['wants']}"))
    for i, item in enumerate(situation.get("must_be_told") or [], 1):
        goals.append((f"told_{i}", f"Told: {str(item)[:60]}", f"The agent told the caller: {item}"))
    out = []
    for cid, name, goal in goals:
        criterion: dict[str, Any] = {"id": cid, "name": name, "type": "prompt", "conversation_goal_prompt": goal}
        if scoring_mode != "binary":
            criterion["scoring_mode"] = scoring_mode
        out.append(criterion)
    return out


def simulation_body(situation: Mapping[str, Any], config: CompiledConfig, *, llm: str = DEFAULT_LLM,
                    turns_limit: int = 30, scoring_mode: str = "binary", mocks: ToolMocks | None = None) -> dict[str, Any]:
    """The ``simulate-conversation`` body for one case's situation against the agent made from ``config``.

    With the suite's ``mocks`` (each tool's first rule ``when: {}``, checked by the runner), every tool returns
    that rule's answer from the case's world, and a tool without rules returns an error saying so; a fact
    the world lacks raises :class:`~assay.core.errors.ToolMockError`."""
    user: dict[str, Any] = {"prompt": {"prompt": user_prompt(situation), "llm": llm, "temperature": 0.0}, "language": "en"}
    turns = situation.get("turns") or []
    if turns:
        user["first_message"] = str(turns[0])
    spec: dict[str, Any] = {"simulated_user_config": user}
    world = situation.get("world") or {}
    if mocks is not None and config.tools:
        spec["tool_mock_config"] = _mocked_tools(mocks, world, [t.name for t in config.tools])
    elif world and config.tools:
        spec["tool_mock_config"] = {
            t.name: {"default_return_value": json.dumps(world.get(t.name, world), sort_keys=True), "default_is_error": False}
            for t in config.tools
        }
    body: dict[str, Any] = {"simulation_specification": spec, "new_turns_limit": turns_limit}
    goals = criteria(situation, scoring_mode)
    if goals:
        body["extra_evaluation_criteria"] = goals
    return body


def _mocked_tools(mocks: ToolMocks, world: Mapping[str, Any], tools: list[str]) -> dict[str, Any]:
    static = argument_free(mocks)
    out = {}
    for name in tools:
        if name in static:
            out[name] = {"default_return_value": json.dumps(static_answer(static[name], world, name), sort_keys=True),
                         "default_is_error": False}
        else:
            out[name] = {"default_return_value": f"no tool mock covers tool {name!r}", "default_is_error": True}
    return out


# ------------------------------------------------------------------------------------ inbound

def _json_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _arguments(raw: Any) -> dict[str, Any]:
    parsed = _json_or_text(raw) if raw not in (None, "") else {}
    return parsed if isinstance(parsed, dict) else {"_unparsed": raw}


def _said(answer: Any) -> str:
    """ElevenLabs' own words, when a 2xx body off the documented shape carries an error."""
    said = vendor_message(answer, "") if isinstance(answer, Mapping) else ""
    return f" (ElevenLabs said: {said})" if said else ""


def _malformed(what: str, answer: Any = None) -> MalformedResponseError:
    return MalformedResponseError(VENDOR, 200, f"the simulated conversation is not the documented shape: {what}{_said(answer)}")


def read_conversation(response: Any) -> tuple[list[Turn], list[ToolCall]]:
    """The transcript (turns with words; tool-only turns carry no text) and the tool calls with their results.

    A conversation in which no turn has words (every ``message`` absent or null, as the document allows for
    each one) is no evidence of what the agent said: it is refused as malformed, so the case run is an
    ERROR rather than a transcript check failed on silence."""
    turns = response.get("simulated_conversation") if isinstance(response, Mapping) else None
    if not isinstance(turns, list):
        raise _malformed("no simulated_conversation list", response)
    transcript: list[Turn] = []
    calls: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or turn.get("role") not in ("user", "agent"):
            role = turn.get("role") if isinstance(turn, Mapping) else None
            raise _malformed(f"turn {i} has role {role!r}, not user or agent")
        t = turn.get("time_in_call_secs")
        t = float(t) if isinstance(t, int | float) else None
        if isinstance(turn.get("message"), str) and turn["message"].strip():
            transcript.append(Turn(role="caller" if turn["role"] == "user" else "agent", text=turn["message"], t=t))
        for k, call in enumerate(turn.get("tool_calls") or []):
            if not isinstance(call, Mapping) or not isinstance(call.get("tool_name"), str):
                raise _malformed(f"turn {i} tool call {k} has no tool_name")
            calls[str(call.get("request_id") or f"{i}:{k}")] = {**call, "_t": t}
        for result in turn.get("tool_results") or []:
            if isinstance(result, Mapping) and result.get("request_id") is not None:
                results[str(result["request_id"])] = dict(result)
    tool_calls = []
    for request_id, call in calls.items():
        result = results.get(request_id)
        tool_calls.append(ToolCall(
            name=call["tool_name"], arguments=_arguments(call.get("params_as_json")),
            result=_json_or_text(result.get("result_value")) if result else None,
            is_error=bool(result.get("is_error")) if result else False, t=call["_t"]))
    if turns and not transcript:
        raise _malformed(f"none of its {len(turns)} turns has a message")
    return transcript, tool_calls


def _verdict(value: Any) -> Verdict:
    return VERDICTS.get(str(value).lower(), "unknown") if value is not None else "unknown"


def analysis_evaluations(response: Any) -> list[Evaluation]:
    """ElevenLabs' own analysis as runner evaluations, kept on its verdicts and scales."""
    analysis = response.get("analysis") if isinstance(response, Mapping) else None
    if not isinstance(analysis, Mapping):
        raise _malformed("no analysis object", response)
    summary = analysis.get("transcript_summary")
    out = [Evaluation.from_vendor(
        name="call_successful", evaluator=f"{VENDOR}:analysis", verdict=_verdict(analysis.get("call_successful")),
        rationale=summary if isinstance(summary, str) else None,
        raw=redact({"call_successful": analysis.get("call_successful"), "transcript_summary": summary}))]
    results = analysis.get("evaluation_criteria_results") or {}
    if not isinstance(results, Mapping):
        raise _malformed("evaluation_criteria_results is not an object")
    for key, entry in results.items():
        if not isinstance(entry, Mapping):
            raise _malformed(f"criterion {key!r} is not an object")
        score, top = entry.get("score"), entry.get("max_score")
        scored = isinstance(score, int | float) and not isinstance(score, bool)
        scaled = scored and isinstance(top, int | float) and top > 0
        rationale = entry.get("rationale")
        out.append(Evaluation.from_vendor(
            name=str(entry.get("criteria_id") or key), evaluator=f"{VENDOR}:criteria", verdict=_verdict(entry.get("result")),
            score=float(score) if scored else None, scale_min=0.0 if scaled else None,
            scale_max=float(top) if scaled else None, rationale=rationale if isinstance(rationale, str) else None,
            raw=redact(dict(entry))))
    return out


# ------------------------------------------------------------------------------------ the API

class ElevenLabsApi(VendorApi):
    """ElevenLabs' endpoints that Assay uses, over one :class:`~assay.adapters.http.VendorClient`.

    A refused key (401/403) is a :class:`ConfigError` naming ``ASSAY_ELEVENLABS_API_KEY``, never the key.
    """

    label = "ElevenLabs"
    key_setting = KEY_SETTING

    @classmethod
    def from_settings(cls, settings: Settings, **client_options: Any) -> "ElevenLabsApi":
        from .http import VendorClient

        if settings.elevenlabs_api_key is None:
            raise ConfigError(f"ElevenLabs needs an API key: set {KEY_SETTING}")
        headers = {"xi-api-key": settings.elevenlabs_api_key.get_secret_value()}
        client_options.setdefault("timeout", 120.0)  # a simulation is a whole conversation: minutes, not seconds
        return cls(VendorClient(VENDOR, settings.elevenlabs_base_url, headers, **client_options))

    def create_agent(self, body: dict[str, Any]) -> str:
        answer = self._call("POST", "/v1/convai/agents/create", body)
        if not isinstance(answer, Mapping) or not isinstance(answer.get("agent_id"), str):
            raise MalformedResponseError(VENDOR, 200, f"the created agent has no 'agent_id'{_said(answer)}")
        return answer["agent_id"]

    def get_agent(self, agent_id: str) -> dict[str, Any]:
        """A live agent as ElevenLabs keeps it (``GET /v1/convai/agents/{agent_id}``)."""
        answer = self._call("GET", f"/v1/convai/agents/{agent_id}")
        if not isinstance(answer, dict) or not isinstance(answer.get("conversation_config"), Mapping):
            raise MalformedResponseError(VENDOR, 200, f"the agent has no 'conversation_config'{_said(answer)}")
        return answer

    def delete_agent(self, agent_id: str) -> None:
        self._delete(f"/v1/convai/agents/{agent_id}")

    def find_agents(self, name: str, page_size: int = 100) -> list[str]:
        """Ids of the agents named exactly ``name`` (the list endpoint's name search, every page)."""
        found: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"page_size": page_size, "search": name}
            if cursor:
                params["cursor"] = cursor
            page = self._call("GET", "/v1/convai/agents", params=params)
            if not isinstance(page, Mapping) or not isinstance(page.get("agents"), list):
                raise MalformedResponseError(VENDOR, 200, f"the agent list has no 'agents'{_said(page)}")
            found += [a["agent_id"] for a in page["agents"] if isinstance(a, Mapping) and a.get("name") == name]
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return found

    def simulate(self, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """One simulated conversation (billed). ElevenLabs documents no idempotency and no way to list
        simulations, so a simulation whose answer was lost is never run again: the case is an error saying so."""
        answer = self._call("POST", f"/v1/convai/agents/{agent_id}/simulate-conversation", body, creates=True,
                            where=f"for a conversation of agent {agent_id} in ElevenLabs' conversation history")
        if not isinstance(answer, dict):
            raise _malformed("the answer is not an object")
        return answer


__all__ = ["DEFAULT_LLM", "KEY_SETTING", "SETTINGS", "ElevenLabsApi", "agent_body", "analysis_evaluations",
           "config_from_agent", "criteria", "read_conversation", "refused", "simulation_body", "user_prompt"]
