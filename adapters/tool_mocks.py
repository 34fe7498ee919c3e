"""The tool-mock server: a suite's ``tool_mocks`` answered over HTTP, in VAPI's ``tool-calls`` format.

A runner whose platform calls tools on a server (VAPI: a function tool's ``server.url``) starts one
:class:`MockServer` for a run (``with MockServer(mocks) as server:``): a threaded HTTP server on
``127.0.0.1`` at an ephemeral port, stopped and its socket closed when the block ends. Its :attr:`url`
carries a random token (``/runs/<token>``); a request to another path is refused.

The runner plays one conversation at a time against its scratch assistant, and wraps each in
:meth:`MockServer.conversation` with the case's world: every ``tool-calls`` request that arrives while it
is open belongs to that case (a chat's tool calls are made while its ``POST /chat`` is waiting). Each
call is answered by :func:`assay.core.tool_mocks.answer_call` — ``{"toolCallId", "name", "result"}``
with the answer as JSON text — or, when no rule covers it, ``{"toolCallId", "name", "error"}`` naming
the tool and its arguments. Either way it is logged (:class:`MockLog`): the runner stores the log as
evidence and turns an error into an ERROR case run.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from assay.core.errors import ConfigError, ToolMockError
from assay.core.tool_mocks import ToolMocks, answer_call

MAX_BODY = 1_000_000
"""The largest ``tool-calls`` message read, in bytes."""


@dataclass
class MockLog:
    """Every call one conversation's tools made to the mock, in order, with its answer or its error."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [e["error"] for e in self.entries if "error" in e]


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_unparsed": raw}


class MockServer:
    """One run's tool-mock server (see the module docstring); a vendor off this machine reaches it through
    ``public_url`` (``ASSAY_TOOL_MOCK_URL``), a tunnel to ``host:port`` (``ASSAY_TOOL_MOCK_BIND``)."""

    @classmethod
    def from_settings(cls, mocks: ToolMocks, settings: Any) -> "MockServer":
        host, _, port = settings.tool_mock_bind.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"ASSAY_TOOL_MOCK_BIND must be host:port such as 127.0.0.1:0, got {settings.tool_mock_bind!r}")
        return cls(mocks, host, int(port), settings.tool_mock_url)

    def __init__(self, mocks: ToolMocks, host: str = "127.0.0.1", port: int = 0, public_url: str | None = None):
        self.mocks = mocks
        self.token = secrets.token_hex(8)
        self._host, self._port, self._public = host, port, public_url.rstrip("/") if public_url else None
        self._lock = threading.Lock()
        self._current: tuple[Mapping[str, Any], MockLog] | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.strays: list[dict[str, Any]] = []
        """Tool calls that arrived while no conversation was open (answered with an error)."""

    @property
    def url(self) -> str:
        """Where the platform sends ``tool-calls`` messages."""
        if self._server is None:
            raise RuntimeError("the tool-mock server is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"{self._public or f'http://{host}:{port}'}/runs/{self.token}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "MockServer":
        self._server = ThreadingHTTPServer((self._host, self._port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="assay-tool-mocks", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @contextmanager
    def conversation(self, world: Mapping[str, Any]) -> Iterator[MockLog]:
        """Answer the tool calls that arrive in the block from ``world``; the log fills as they do."""
        log = MockLog()
        with self._lock:
            if self._current is not None:
                raise RuntimeError("the tool-mock server answers one conversation at a time")
            self._current = (world, log)
        try:
            yield log
        finally:
            with self._lock:
                self._current = None

    def answer(self, message: Any) -> dict[str, Any]:
        """The ``{"results": [...]}`` answer to one ``tool-calls`` server message (VAPI's shape)."""
        message = message.get("message") if isinstance(message, dict) else None
        calls = message.get("toolCallList") if isinstance(message, dict) else None
        if not isinstance(calls, list):
            return {"error": "expected a 'tool-calls' server message: {message: {type, toolCallList: [...]}}"}
        with self._lock:
            current = self._current
        results = []
        for call in calls:
            call = call if isinstance(call, dict) else {}
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            name, arguments = str(function.get("name") or ""), _arguments(function.get("arguments"))
            entry: dict[str, Any] = {"tool": name, "arguments": arguments}
            result: dict[str, Any] = {"toolCallId": str(call.get("id") or ""), "name": name}
            if current is None:
                entry["error"] = f"the tool call {name} arrived while no conversation was in progress"
                self.strays.append(entry)
            else:
                try:
                    answered = answer_call(self.mocks, current[0], name, arguments)
                    entry.update(rule=answered.rule, answer=answered.answer)
                    result["result"] = json.dumps(answered.answer, sort_keys=True)
                except ToolMockError as exc:
                    entry["error"] = str(exc)
                current[1].entries.append(entry)
            if "error" in entry:
                result["error"] = entry["error"]
            results.append(result)
        return {"results": results}


def _handler(server: MockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet: the log is the evidence
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") != f"/runs/{server.token}":
                return self._send(404, {"error": f"no tool-mock endpoint at {self.path}"})
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._send(413, {"error": f"a tool-calls message is at most {MAX_BODY} bytes"})
            try:
                message = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                return self._send(400, {"error": "the body is not JSON"})
            self._send(200, server.answer(message))

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


__all__ = ["MockLog", "MockServer"]
