"""A fake VAPI: assistants, text chats and evals, shaped after VAPI's published API.

Every request body and query string is validated against VAPI's own OpenAPI document (:mod:`.openapi`);
a request the document refuses gets 400 with the validation messages, as VAPI's ``{message: [...], error,
statusCode}``. Answers are in the document's shapes (the fake's tests check them against its response
schemas); ``faults.wild`` makes them stray (:mod:`.wild`). Auth is ``Authorization: Bearer <key>``. The agent behind every assistant is the shared
deterministic brain (:mod:`.brain`), steered by ``faults.scripts``:

- ``"replies"``: the brain's reply rules (regex over the caller's input -> reply, optional tool call);
- ``"conversations"``: the brain's scripted conversations (by the chat chain's first caller line, the
  agent's n-th reply), as ``assay fake-vendors --script`` writes them;
- ``"judge"``: rules for ``ai`` judge plans, ``[{"match": regex over the judge's system prompt,
  "verdict": "pass" | "fail"}]``; the first match decides, else ``pass``;
- ``"eval_error"``: when set (a message), eval runs end with ``endedReason: "error"`` and that message.

A tool with a ``server.url`` is answered as VAPI does: the fake POSTs a ``tool-calls`` server message there
and the tool's result in the chat is the ``result`` (or ``error``) the server returns for the call.

Eval runs are ``queued`` when created and ``ended`` on the first poll, unless ``faults.never_finish``
(running for ever) or ``faults.finish_after`` (ended that many seconds after creation). Each chat costs
:data:`CHAT_COST`, each eval run :data:`EVAL_RUN_COST`. The inventory keeps ``assistant``, ``chat``,
``eval`` and ``eval_run`` objects, so a test can prove that nothing was left behind.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from .base import Answer, FakeRequest, FakeVendor, Handler
from .brain import Reply, ToolUse, check_conversations, check_rules, reply, scripted
from .openapi import vapi_document

CHAT_COST = 0.002
"""US dollars charged per chat (one caller turn and the agent's reply)."""
EVAL_RUN_COST = 0.01
"""US dollars charged per eval run."""
ORG_ID = "org-fake"
_JS_REGEX = re.compile(r"^/(?P<body>.*)/(?P<flags>[a-z]*)$", re.DOTALL)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeVapi(FakeVendor):
    """VAPI on loopback: ``with FakeVapi(key="k") as vapi: vapi.url``."""

    name = "vapi"
    document = vapi_document()

    def __init__(self, *args: Any, **kwargs: Any):
        self._ids = itertools.count(1)
        super().__init__(*args, **kwargs)

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Every route's query string is checked against the document before its handler sees it."""
        def checked(req: FakeRequest) -> Answer:
            problems = self.document.query_problems(method, pattern, req.query)
            return (400, self.error_body(400, problems)) if problems else handler(req)  # type: ignore[arg-type]
        super().route(method, pattern, checked)

    def setup_routes(self) -> None:
        self.route("POST", "/assistant", self.create_assistant)
        self.route("GET", "/assistant", self.list_assistants)
        self.route("GET", "/assistant/{id}", lambda r: self._get("assistant", r.params["id"]))
        self.route("DELETE", "/assistant/{id}", lambda r: self._delete("assistant", r.params["id"]))
        self.route("POST", "/chat", self.chat)
        self.route("GET", "/chat", self.list_chats)
        self.route("POST", "/eval", self.create_eval)
        self.route("GET", "/eval", self.list_evals)
        self.route("GET", "/eval/run", self.list_eval_runs)  # before /eval/{id}, which would match it
        self.route("GET", "/eval/{id}", lambda r: self._get("eval", r.params["id"]))
        self.route("DELETE", "/eval/{id}", lambda r: self._delete("eval", r.params["id"]))
        self.route("POST", "/eval/run", self.create_eval_run)
        self.route("GET", "/eval/run/{id}", self.get_eval_run)

    # -- helpers --------------------------------------------------------------------------------------
    def _new_id(self, kind: str) -> str:
        return f"{kind}-{next(self._ids):06d}"

    def _invalid(self, method: str, template: str, body: Any) -> Answer | None:
        problems = vapi_document().problems(method, template, body)
        return (400, self.error_body(400, problems)) if problems else None  # type: ignore[arg-type]

    def _get(self, kind: str, id_: str) -> Answer:
        obj = self.objects(kind).get(id_)
        return (200, obj) if obj is not None else (404, self.error_body(404, f"{kind.capitalize()} not found"))

    def _delete(self, kind: str, id_: str) -> Answer:
        with self.lock:
            obj = self.objects(kind).pop(id_, None)
        return (200, obj) if obj is not None else (404, self.error_body(404, f"{kind.capitalize()} not found"))

    def _listed(self, kind: str, req: FakeRequest) -> list[dict[str, Any]]:
        limit = int((req.query.get("limit") or ["100"])[0])
        with self.lock:
            items = sorted(self.objects(kind).values(), key=lambda o: o["createdAt"], reverse=True)
        return items[:limit]

    def _brain(self, assistant: dict[str, Any], text: str, said: list[str], first: bool | None = None) -> Reply:
        """The agent's reply to ``text``, the caller's latest line; ``said``: the caller's earlier lines in the
        conversation; ``first``: whether the agent has not spoken yet (default: no earlier caller line)."""
        model = assistant.get("model") or {}
        prompt = "\n".join(m.get("content") or "" for m in model.get("messages") or [] if m.get("role") == "system")
        tools = [t.get("function") or {} for t in model.get("tools") or [] if t.get("type") == "function"]
        with self.lock:  # the rated rules' counts are shared by every conversation
            rules = check_rules(self.faults.scripts.get("replies"))
            conversations = check_conversations(self.faults.scripts.get("conversations"))
            if not any(re.search(r["match"], text, re.IGNORECASE) for r in rules):
                planned = scripted(conversations, (said or [text])[0], len(said))
                if planned is not None:
                    return planned
            return reply(text, rules=rules, prompt=prompt, first_message=assistant.get("firstMessage"), tools=tools,
                         first=not said if first is None else first, hits=self.faults.hits)

    # -- assistants ------------------------------------------------------------------------------------
    def create_assistant(self, req: FakeRequest) -> Answer:
        body = req.json()
        if (invalid := self._invalid("POST", "/assistant", body)) is not None:
            return invalid
        now = _now()
        assistant = {**body, "id": self._new_id("asst"), "orgId": ORG_ID, "createdAt": now, "updatedAt": now}
        with self.lock:
            self.objects("assistant")[assistant["id"]] = assistant
        return 201, assistant

    def list_assistants(self, req: FakeRequest) -> Answer:
        return 200, self._listed("assistant", req)  # VAPI returns a bare array here

    # -- chats -----------------------------------------------------------------------------------------
    def chat(self, req: FakeRequest) -> Answer:
        body = req.json()
        if (invalid := self._invalid("POST", "/chat", body)) is not None:
            return invalid
        if not isinstance(body.get("input"), str):
            return 400, self.error_body(400, "this fake answers string input only; send each caller turn as a string")
        assistant = self.objects("assistant").get(body.get("assistantId") or "")
        if assistant is None:
            return 404, self.error_body(404, f"Couldn't find assistant {body.get('assistantId')!r}")
        previous = None
        if body.get("previousChatId"):
            previous = self.objects("chat").get(body["previousChatId"])
            if previous is None:
                return 404, self.error_body(404, f"Couldn't find chat {body['previousChatId']!r}")
        earlier = [m["content"] for m in previous["messages"] if m.get("role") == "user"] if previous else []
        try:
            said = self._brain(assistant, body["input"], [str(m) for m in earlier])
        except ValueError as exc:
            return 500, self.error_body(500, f"fake brain: {exc}")
        chat_id = self._new_id("chat")
        said = _served(assistant, said, f"call-{chat_id}", {"id": chat_id, "assistantId": assistant["id"]})
        output = _chat_output(said, chat_id)
        context = ([*previous["messages"], *previous["output"]] if previous else [])
        now = _now()
        chat = {
            "id": chat_id, "orgId": ORG_ID, "assistantId": assistant["id"],
            "messages": [*context, {"role": "user", "content": body["input"]}], "output": output,
            "cost": CHAT_COST, "costs": [{"type": "chat", "cost": CHAT_COST}], "createdAt": now, "updatedAt": now,
        }
        for key in ("previousChatId", "name"):
            if body.get(key):
                chat[key] = body[key]
        with self.lock:
            self.objects("chat")[chat_id] = chat
        return 200, chat

    def list_chats(self, req: FakeRequest) -> Answer:
        """``GET /chat``, filtered by ``assistantId`` and ``previousChatId`` as VAPI documents, newest first."""
        wanted = {k: req.query[k][0] for k in ("assistantId", "previousChatId") if k in req.query}
        items = [c for c in self._listed("chat", req) if all(c.get(k) == v for k, v in wanted.items())]
        return 200, {"results": items, "metadata": {"itemsPerPage": len(items), "totalItems": len(items), "currentPage": 1}}

    # -- evals -----------------------------------------------------------------------------------------
    def create_eval(self, req: FakeRequest) -> Answer:
        body = req.json()
        if (invalid := self._invalid("POST", "/eval", body)) is not None:
            return invalid
        now = _now()
        ev = {**body, "id": self._new_id("eval"), "orgId": ORG_ID, "createdAt": now, "updatedAt": now}
        with self.lock:
            self.objects("eval")[ev["id"]] = ev
        return 201, ev

    def list_evals(self, req: FakeRequest) -> Answer:
        items = self._listed("eval", req)
        return 200, {"results": items, "metadata": {"itemsPerPage": len(items), "totalItems": len(items), "currentPage": 1}}

    def create_eval_run(self, req: FakeRequest) -> Answer:
        body = req.json()
        if (invalid := self._invalid("POST", "/eval/run", body)) is not None:
            return invalid
        ev = body.get("eval") or self.objects("eval").get(body.get("evalId") or "")
        if ev is None:
            return 404, self.error_body(404, f"Couldn't find eval {body.get('evalId')!r}")
        target = body["target"]
        if target.get("type") != "assistant" or target.get("assistantId") not in self.objects("assistant"):
            return 404, self.error_body(404, f"Couldn't find assistant {target.get('assistantId')!r}")
        now = _now()
        run = {"id": self._new_id("evalrun"), "orgId": ORG_ID, "type": "eval", "status": "queued",
               "evalId": body.get("evalId"), "eval": ev, "target": target, "createdAt": now, "_t0": time.monotonic()}
        with self.lock:
            self.objects("eval_run")[run["id"]] = run
        return 201, _public(run)

    def list_eval_runs(self, req: FakeRequest) -> Answer:
        """``GET /eval/run``: the eval runs, newest first (VAPI documents no filter by eval here)."""
        with self.lock:
            items = [_public(r) for r in self._listed("eval_run", req)]
        return 200, {"results": items, "metadata": {"itemsPerPage": len(items), "totalItems": len(items), "currentPage": 1}}

    def get_eval_run(self, req: FakeRequest) -> Answer:
        with self.lock:
            run = self.objects("eval_run").get(req.params["id"])
            if run is None:
                return 404, self.error_body(404, "Eval run not found")
            faults = self.faults
            running = faults.never_finish or (
                faults.finish_after is not None and time.monotonic() - run["_t0"] < faults.finish_after)
            if running:
                run.update(status="running", startedAt=run.get("startedAt") or _now())
            elif run["status"] != "ended":
                self._finish(run, faults.scripts)
            return 200, _public(run)

    def _finish(self, run: dict[str, Any], scripts: dict[str, Any]) -> None:
        started = run.get("startedAt") or _now()
        run.update(status="ended", startedAt=started, endedAt=_now(), cost=EVAL_RUN_COST,
                   costs=[{"type": "model", "cost": EVAL_RUN_COST}])
        if scripts.get("eval_error"):
            run.update(endedReason="error", endedMessage=str(scripts["eval_error"]), results=[])
            return
        assistant = self.objects("assistant")[run["target"]["assistantId"]]
        status, messages = self._mock_conversation(assistant, run["eval"]["messages"], scripts.get("judge") or [])
        run.update(endedReason="mockConversation.done",
                   results=[{"status": status, "messages": messages, "startedAt": started, "endedAt": run["endedAt"]}])

    def _mock_conversation(self, assistant: dict[str, Any], script: list[dict[str, Any]],
                           judge_rules: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """Play an eval's messages: mocks are replayed, each checkpoint gets a brain reply that its judge plan judges."""
        said: list[dict[str, Any]] = []
        passed, first, last_user = True, True, ""
        users: list[str] = []
        for message in script:
            if message.get("role") != "assistant" or "judgePlan" not in message:
                said.append({k: v for k, v in message.items() if k in ("role", "content", "toolCalls")})
                if message.get("role") == "user":
                    last_user = message.get("content", last_user)
                    users.append(str(last_user))
                first = first and message.get("role") != "assistant"
                continue
            answer = self._brain(assistant, last_user, users[:-1], first)
            first = False
            calls = [{"name": answer.tool.name, "arguments": answer.tool.arguments}] if answer.tool else []
            said.append({"role": "assistant", "content": answer.text, **({"toolCalls": calls} if calls else {})})
            if answer.tool:
                said.append({"role": "tool", "content": json.dumps(answer.tool.result)})
            passed = _judged(message["judgePlan"], answer, judge_rules) and passed
        return ("pass" if passed else "fail"), said


def _judged(plan: dict[str, Any], answer: Reply, judge_rules: list[dict[str, Any]]) -> bool:
    """Whether a checkpoint's judge plan passes the agent's reply (ai plans: by the ``judge`` rules)."""
    if plan["type"] == "ai":
        system = " ".join(m.get("content") or "" for m in plan["model"].get("messages") or [])
        for rule in judge_rules:
            if re.search(str(rule.get("match", "")), system, re.IGNORECASE):
                return rule.get("verdict") == "pass"
        return True
    wanted = plan.get("toolCalls") or []
    called = [answer.tool.name] if answer.tool else []
    if any(call["name"] not in called for call in wanted):
        return False
    if plan["type"] == "exact":
        return answer.text.strip().lower() == plan["content"].strip().lower()
    m = _JS_REGEX.match(plan["content"])
    pattern, flags = (m["body"], re.IGNORECASE if "i" in m["flags"] else 0) if m else (plan["content"], 0)
    return re.search(pattern, answer.text, flags) is not None


def _served(assistant: dict[str, Any], said: Reply, call_id: str, chat: dict[str, Any]) -> Reply:
    """``said`` with its tool's result from the tool's ``server.url`` when the assistant's tool has one, as VAPI
    does: a ``tool-calls`` server message is POSTed there and the matching ``results`` entry's ``result`` (or
    its ``error``) becomes the tool message's content. A server that fails gives the tool an error."""
    if said.tool is None:
        return said
    tools = [t for t in (assistant.get("model") or {}).get("tools") or []
             if (t.get("function") or {}).get("name") == said.tool.name and (t.get("server") or {}).get("url")]
    if not tools:
        return said
    call = {"id": call_id, "type": "function",
            "function": {"name": said.tool.name, "arguments": json.dumps(said.tool.arguments)}}
    message = {"type": "tool-calls", "timestamp": time.time() * 1000, "toolCallList": [call],
               "toolWithToolCallList": [{**tools[0], "toolCall": call}], "chat": chat}
    try:
        answer = httpx.post(tools[0]["server"]["url"], json={"message": message}, timeout=20).json()
        [found] = [r for r in answer.get("results") or [] if r.get("toolCallId") == call_id]
        error, result = found.get("error"), found.get("result")
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        error, result = f"the tool's server did not answer: {exc}", None
    used = ToolUse(said.tool.name, said.tool.arguments, str(error) if error else _json_or_text(result), bool(error))
    return Reply(said.text, used)


def _json_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _chat_output(said: Reply, chat_id: str) -> list[dict[str, Any]]:
    """A chat's ``output``: the tool call and its result (when the agent used a tool), then the reply."""
    if said.tool is None:
        return [{"role": "assistant", "content": said.text}]
    call_id = f"call-{chat_id}"
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": said.tool.name, "arguments": json.dumps(said.tool.arguments)}}]},
        {"role": "tool", "content": json.dumps(said.tool.result), "tool_call_id": call_id},
        {"role": "assistant", "content": said.text},
    ]


def _public(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if not k.startswith("_")}


__all__ = ["CHAT_COST", "EVAL_RUN_COST", "FakeVapi"]
