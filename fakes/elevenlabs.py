"""A fake ElevenLabs Agents platform: scratch agents and simulated conversations, shaped after the public API.

Auth is ``xi-api-key: <key>``. Errors are ElevenLabs' two shapes: a refused body is 422
``{detail: [{loc, msg, type}]}``; everything else is ``{detail: {type, code, message, request_id}}``
(429 codes ``rate_limit_exceeded`` / ``concurrent_limit_exceeded``, steered by
``scripts["rate_limit_code"]``). Every request's body and query string is validated against ElevenLabs'
published OpenAPI document (the part of it the adapter uses, ``specs/elevenlabs-openapi.json.gz``; see
``specs/README.md``), refused as ElevenLabs' 422 when the document refuses it, so an adapter that drifts
from the documented shape fails here, not in production. Answers are in the document's shapes (the
fake's tests check them against its response schemas); ``faults.wild`` makes them stray (:mod:`.wild`).

Routes: ``POST /v1/convai/agents/create`` -> ``{agent_id}``; ``GET|PATCH|DELETE
/v1/convai/agents/{agent_id}``; ``GET /v1/convai/agents?page_size&cursor&search`` -> ``{agents,
next_cursor, has_more}`` (newest first; ``search`` matches names case-insensitively); ``POST
/v1/convai/agents/{agent_id}/simulate-conversation``. The inventory keeps the ``agent`` objects.

A simulation is deterministic:

- **The agent** greets with its first message (unless a partial history is given), then answers each
  user line with the shared brain (:mod:`.brain`, rules from ``scripts["replies"]``). A tool call is
  three agent turns, as ElevenLabs transcripts show them: one with ``tool_calls``, one with
  ``tool_results`` (``result_value`` from ``tool_mock_config`` when the tool is mocked, else the brain's
  result as JSON text), then the words. ``scripts["conversations"]`` (the brain's scripted conversations,
  keyed by the user's first line) give one conversation its own replies, and its own ``criteria``. ``{{variables}}`` in the prompt and first message are filled from
  ``dynamic_variables`` then the agent's placeholders; one left without a value is refused (400), as the
  platform refuses to start such a conversation.
- **The simulated user** says, in order, its ``first_message`` (if any) and the lines its prompt lists
  as numbered quoted lines (``1. "..."``, JSON escapes allowed), skipping as many as the partial history's user turns already
  said; a prompt without such lines gives one line derived from it (the first line mentioning what the
  user wants, else the prompt's first line) and a goodbye. Then the conversation ends, or earlier at
  ``new_turns_limit`` new turns. ``time_in_call_secs`` advances by one second per 2.5 words (at least one).
- **The analysis**: every criterion (the agent's ``platform_settings.evaluation.criteria`` and the
  request's ``extra_evaluation_criteria``) is ``success`` with a rationale, unless
  ``scripts["criteria"][id]`` says ``"failure"``/``"unknown"`` or gives ``{result, score?, rationale?}``.
  A ``numeric_uniform`` criterion reports ``score`` (``max_score`` on success, 0 on failure) and
  ``max_score`` (default 10). ``call_successful`` is ``scripts["call_successful"]`` if set, else
  ``failure`` when a criterion failed, else ``success``.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .base import Answer, FakeRequest, FakeVendor, Handler
from .brain import check_conversations, check_rules, reply, scripted
from .openapi import elevenlabs_document

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")
SCRIPTED_LINE = re.compile(r'^\s*\d+[.)]\s*"(?P<line>.*)"\s*$', re.MULTILINE)
"""A line the simulated user's prompt scripts: ``1. "I need a plumber."``."""
GOODBYE = "Thanks, that's everything I needed. Goodbye."
DEFAULT_MAX_SCORE = 10
ACCESS_INFO = {"is_creator": True, "creator_name": "Fake Owner", "creator_email": "owner@example.invalid", "role": "admin"}
"""Who the listed agents belong to, as the agent list reports it (every agent here is the caller's own)."""
_TYPES = {401: "authentication_error", 403: "authorization_error", 404: "not_found", 400: "invalid_request",
          409: "conflict", 429: "rate_limit_error", 503: "service_unavailable"}
_CODES = {401: "invalid_api_key", 403: "forbidden", 404: "not_found", 400: "invalid_request", 409: "conflict",
          503: "service_unavailable"}


class _Read(BaseModel):
    """How the fake reads a body the document has accepted: the fields it acts on, with no constraint of its
    own (what is allowed is the document's to say, checked before a handler runs)."""

    model_config = ConfigDict(extra="ignore")


# ------------------------------------------------------------------------------------ agents

class Tool(_Read):
    type: str
    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    expects_response: bool = False


class Prompt(_Read):
    prompt: str = ""
    llm: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tools: list[Tool] | None = None
    tool_ids: list[str] | None = None


class DynamicVariables(_Read):
    dynamic_variable_placeholders: dict[str, str | int | float | bool | None] = Field(default_factory=dict)


class AgentSettings(_Read):
    first_message: str | None = None
    language: str | None = None
    prompt: Prompt | None = None
    dynamic_variables: DynamicVariables | None = None


class ConversationConfig(_Read):
    agent: AgentSettings | None = None
    tts: dict[str, Any] | None = None
    asr: dict[str, Any] | None = None
    turn: dict[str, Any] | None = None
    conversation: dict[str, Any] | None = None


class AgentBody(_Read):
    conversation_config: ConversationConfig | None = None
    name: str | None = None
    tags: list[str] | None = None
    platform_settings: dict[str, Any] | None = None


# ------------------------------------------------------------------------------------ simulations

class UserPrompt(_Read):
    prompt: str = ""
    llm: str | None = None
    temperature: float | None = None


class SimulatedUser(_Read):
    prompt: UserPrompt | None = None
    first_message: str | None = None
    language: str | None = None


class ToolMock(_Read):
    default_return_value: str = "Tool Called."
    default_is_error: bool = False


class HistoryTurn(_Read):
    role: str
    message: str | None = None
    time_in_call_secs: int
    tool_calls: list[dict[str, Any]] | None = None
    tool_results: list[dict[str, Any]] | None = None


class SimulationSpecification(_Read):
    simulated_user_config: SimulatedUser
    tool_mock_config: dict[str, ToolMock] | None = None
    partial_conversation_history: list[HistoryTurn] | None = None
    dynamic_variables: dict[str, str | int | float | bool | None] | None = None


class Criterion(_Read):
    id: str
    name: str
    type: str = "prompt"
    conversation_goal_prompt: str
    scoring_mode: str | None = None
    """Not in the published document this fake follows (see ``specs/README.md``): read as the vendor notes say."""
    max_score: int | None = None


class SimulateBody(_Read):
    simulation_specification: SimulationSpecification
    extra_evaluation_criteria: list[Criterion] | None = None
    new_turns_limit: int = 10000


def _merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in change.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


class FakeElevenLabs(FakeVendor):
    """ElevenLabs Agents on loopback: ``with FakeElevenLabs(key="k") as el: el.url``."""

    name = "elevenlabs"
    document = elevenlabs_document()

    def __init__(self, *args: Any, **kwargs: Any):
        self._ids = itertools.count(1)
        self._order: dict[str, int] = {}
        super().__init__(*args, **kwargs)

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Every route's request is checked against the document before its handler sees it."""
        super().route(method, pattern, self._checked(method, pattern, handler))

    def _checked(self, method: str, template: str, handler: Handler) -> Handler:
        def checked(req: FakeRequest) -> Answer:
            problems = [{"loc": ["query", name], "msg": msg, "type": "value_error"}
                        for name, msg in self.document.query_errors(method, template, req.query)]
            if req.body or self.document.request_schema(method, template) is not None:
                problems += [{"loc": ["body", *loc], "msg": msg, "type": "value_error"}
                             for loc, msg in self.document.request_errors(method, template, req.json())]
            return (422, {"detail": problems}) if problems else handler(req)
        return checked

    def setup_routes(self) -> None:
        base = "/v1/convai/agents"
        self.route("POST", f"{base}/create", self.create_agent)
        self.route("GET", base, self.list_agents)
        self.route("GET", base + "/{agent_id}", lambda r: self._with_agent(r, lambda a: (200, a)))
        self.route("PATCH", base + "/{agent_id}", self.update_agent)
        self.route("DELETE", base + "/{agent_id}", self.delete_agent)
        self.route("POST", base + "/{agent_id}/simulate-conversation", self.simulate)

    def authorised(self, headers: dict[str, str]) -> bool:
        return headers.get("xi-api-key") == self.key

    def reset(self) -> None:
        super().reset()
        with self.lock:
            self._order.clear()

    def error_body(self, status: int, message: str) -> Any:
        code = _CODES.get(status, "error")
        if status == 429:
            code = str(self.faults.scripts.get("rate_limit_code", "concurrent_limit_exceeded"))
        return {"detail": {"type": _TYPES.get(status, "error"), "code": code, "message": message,
                           "request_id": f"req_{next(self._ids):06d}"}}

    def _refused(self, exc: ValidationError) -> Answer:
        return 422, {"detail": [{"loc": ["body", *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]}

    def _with_agent(self, req: FakeRequest, then: Any) -> Answer:
        with self.lock:
            agent = self.objects("agent").get(req.params["agent_id"])
        if agent is None:
            return 404, self.error_body(404, f"Agent {req.params['agent_id']!r} was not found")
        return then(agent)

    # -- agents ----------------------------------------------------------------------------------
    def create_agent(self, req: FakeRequest) -> Answer:
        try:
            body = AgentBody.model_validate(req.json())
        except ValidationError as exc:
            return self._refused(exc)
        agent_id = f"agent_{next(self._ids):04d}{int(time.time() * 1000) % 10**8:08d}"
        agent = {"agent_id": agent_id, "name": body.name or "", "tags": body.tags or [],
                 "conversation_config": body.model_dump(exclude_none=True).get("conversation_config", {}),
                 "platform_settings": body.platform_settings or {},
                 "metadata": {"created_at_unix_secs": int(time.time())}}
        with self.lock:
            self.objects("agent")[agent_id] = agent
            self._order[agent_id] = next(self._ids)
        return 200, {"agent_id": agent_id}

    def update_agent(self, req: FakeRequest) -> Answer:
        try:
            body = AgentBody.model_validate(req.json())
        except ValidationError as exc:
            return self._refused(exc)

        def patch(agent: dict[str, Any]) -> Answer:
            with self.lock:
                agent.update(_merge(agent, body.model_dump(exclude_none=True)))
            return 200, agent
        return self._with_agent(req, patch)

    def delete_agent(self, req: FakeRequest) -> Answer:
        def delete(agent: dict[str, Any]) -> Answer:
            with self.lock:
                self.objects("agent").pop(agent["agent_id"], None)
            return 200, {}
        return self._with_agent(req, delete)

    def list_agents(self, req: FakeRequest) -> Answer:
        q = {k: v[-1] for k, v in req.query.items()}
        try:
            size = int(q.get("page_size", "30"))
            start = int(q.get("cursor") or 0)
        except ValueError:
            return 422, {"detail": [{"loc": ["query", "page_size"], "msg": "Input should be a valid integer",
                                     "type": "int_parsing"}]}
        if not 1 <= size <= 100:
            return 422, {"detail": [{"loc": ["query", "page_size"], "msg": "Input should be between 1 and 100",
                                     "type": "less_than_equal"}]}
        search = (q.get("search") or "").lower()
        with self.lock:
            agents = sorted(self.objects("agent").values(), key=lambda a: -self._order.get(a["agent_id"], 0))
        matching = [a for a in agents if search in a["name"].lower()]
        page = matching[start : start + size]
        more = start + size < len(matching)
        summary = [{"agent_id": a["agent_id"], "name": a["name"], "tags": a["tags"],
                    "created_at_unix_secs": a["metadata"]["created_at_unix_secs"], "access_info": ACCESS_INFO}
                   for a in page]
        return 200, {"agents": summary, "next_cursor": str(start + size) if more else None, "has_more": more}

    # -- simulations -----------------------------------------------------------------------------
    def simulate(self, req: FakeRequest) -> Answer:
        try:
            body = SimulateBody.model_validate(req.json())
        except ValidationError as exc:
            return self._refused(exc)
        with self.lock:
            scripts = json.loads(json.dumps(self.faults.scripts))
        try:
            rules = check_rules(scripts.get("replies"))
            check_conversations(scripts.get("conversations"))
        except ValueError as exc:
            return 400, self.error_body(400, f"fake misconfigured: {exc}")
        return self._with_agent(req, lambda agent: self._simulate(agent, body, rules, scripts))

    def _simulate(self, agent: dict[str, Any], body: SimulateBody, rules: list[Any], scripts: dict[str, Any]) -> Answer:
        spec = body.simulation_specification
        settings = agent["conversation_config"].get("agent", {})
        prompt_cfg = settings.get("prompt", {})
        values = {**settings.get("dynamic_variables", {}).get("dynamic_variable_placeholders", {}),
                  **(spec.dynamic_variables or {})}
        prompt, first = prompt_cfg.get("prompt", ""), settings.get("first_message") or ""
        missing = sorted({n for n in PLACEHOLDER.findall(prompt + "\n" + first)
                          if n not in values and not n.startswith("system__")})
        if missing:
            return 400, self.error_body(400, f"Missing required dynamic variables: {missing}")
        prompt, first = _fill(prompt, values), _fill(first, values)
        tools = prompt_cfg.get("tools") or []
        mocks = spec.tool_mock_config or {}
        history = [t.model_dump(exclude_none=True) for t in spec.partial_conversation_history or []]
        convo = _Conversation(history, body.new_turns_limit)
        if not history and first:
            convo.add("agent", first)
        said = sum(1 for t in history if t["role"] == "user")
        replied = any(t["role"] == "agent" and t.get("message") and t["message"] != first for t in history)
        lines = [str(t.get("message") or "") for t in history if t["role"] == "user"]
        conversations = scripts.get("conversations") or []
        for line in _user_lines(spec.simulated_user_config)[said:]:
            if not convo.add("user", line):
                break
            lines.append(line)
            planned = None
            if not any(re.search(r["match"], line, re.IGNORECASE) for r in rules):
                planned = scripted(conversations, lines[0], len(lines) - 1)
            with self.lock:  # the rated rules' counts are shared by every conversation
                answer = planned or reply(line, rules=rules, prompt=prompt, first_message=None, tools=tools,
                                          first=not replied, hits=self.faults.hits)
            replied = True
            if answer.tool is not None and not self._tool_turns(convo, answer.tool, mocks):
                break
            if not convo.add("agent", answer.text):
                break
        criteria = [*(agent["platform_settings"].get("evaluation", {}).get("criteria") or []),
                    *[c.model_dump(exclude_none=True) for c in body.extra_evaluation_criteria or []]]
        own = next((c for c in conversations if lines and c["opening"].strip() == lines[0].strip()), {})
        steer = {**scripts, "criteria": {**(scripts.get("criteria") or {}), **(own.get("criteria") or {})}}
        return 200, {"simulated_conversation": convo.turns, "analysis": _analysis(convo.turns, criteria, steer)}

    def _tool_turns(self, convo: "_Conversation", tool: Any, mocks: dict[str, ToolMock]) -> bool:
        request_id = f"toolu_{next(self._ids):06d}"
        mock = mocks.get(tool.name)
        value = mock.default_return_value if mock else json.dumps(tool.result)
        is_error = mock.default_is_error if mock else tool.is_error
        call = {"request_id": request_id, "tool_name": tool.name, "params_as_json": json.dumps(tool.arguments),
                "tool_has_been_called": True}
        result = {"request_id": request_id, "tool_name": tool.name, "result_value": value, "is_error": is_error,
                  "tool_has_been_called": True, "type": "client"}
        return convo.add("agent", None, tool_calls=[call]) and convo.add("agent", None, tool_results=[result])


class _Conversation:
    """The turns so far, the simulated clock and the new-turn budget."""

    def __init__(self, history: list[dict[str, Any]], limit: int):
        self.turns = [{"tool_calls": [], "tool_results": [], **t} for t in history]
        self.clock = max((t["time_in_call_secs"] for t in history), default=-1) + 1 if history else 0
        self.left = limit

    def add(self, role: str, message: str | None, **extra: Any) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.turns.append({"role": role, "message": message, "time_in_call_secs": self.clock,
                           "tool_calls": extra.get("tool_calls", []), "tool_results": extra.get("tool_results", []),
                           "interrupted": False})
        self.clock += max(1, round(len((message or "").split()) / 2.5))
        return True


def _fill(text: str, values: dict[str, Any]) -> str:
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)


def _unquote(text: str) -> str:
    """A scripted line's text; JSON escapes (``\\"``) are read when the quoted text is a JSON string."""
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text


def _user_lines(user: SimulatedUser) -> list[str]:
    prompt = user.prompt.prompt if user.prompt else ""
    scripted = [_unquote(m.group("line")) for m in SCRIPTED_LINE.finditer(prompt)]
    lines = [user.first_message] if user.first_message else []
    if scripted:
        return lines + (scripted[1:] if lines and scripted[0] == lines[0] else scripted)
    if not lines:
        text = next((ln for ln in prompt.splitlines() if re.search(r"\bwants?\b", ln, re.I)),
                    prompt.strip().splitlines()[0] if prompt.strip() else "I have a question.")
        lines = [f"Hi, I'm calling about this: {text.split(':', 1)[-1].strip()}"]
    return lines + [GOODBYE]


def _analysis(turns: list[dict[str, Any]], criteria: list[dict[str, Any]], scripts: dict[str, Any]) -> dict[str, Any]:
    steer = scripts.get("criteria") or {}
    results = {}
    for c in criteria:
        wanted = steer.get(c["id"], "success")
        wanted = wanted if isinstance(wanted, dict) else {"result": wanted}
        result = wanted.get("result", "success")
        entry = {"criteria_id": c["id"], "result": result,
                 "rationale": wanted.get("rationale") or f"Judged {result} against the goal: {c.get('conversation_goal_prompt', '')}"}
        if c.get("scoring_mode") == "numeric_uniform":
            top = c.get("max_score") or DEFAULT_MAX_SCORE
            entry["max_score"] = top
            entry["score"] = wanted.get("score", top if result == "success" else 0 if result == "failure" else None)
        results[c["id"]] = entry
    failed = any(r["result"] == "failure" for r in results.values())
    said = [t for t in turns if t.get("message")]
    tools = sorted({c["tool_name"] for t in turns for c in t.get("tool_calls") or []})
    summary = (f"The user and the agent exchanged {len(said)} messages"
               + (f"; the agent called {', '.join(tools)}." if tools else "."))
    return {"call_successful": scripts.get("call_successful") or ("failure" if failed else "success"),
            "transcript_summary": summary, "evaluation_criteria_results": results, "data_collection_results": {}}


__all__ = ["GOODBYE", "SCRIPTED_LINE", "FakeElevenLabs"]
