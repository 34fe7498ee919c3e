"""A scripted model on loopback, so the real coding-agent CLIs run offline: ``python -m assay.fakes.model_server``.

It serves the two model APIs the harnesses call, over real HTTP on ``127.0.0.1``:

- Anthropic's Messages API (:mod:`assay.fakes.model_anthropic`), for Claude Code: point it here with
  ``ANTHROPIC_BASE_URL=<url>`` and any ``ANTHROPIC_API_KEY``;
- OpenAI's Responses API (:mod:`assay.fakes.model_responses`), for the Codex CLI: a model provider in
  ``$CODEX_HOME/config.toml`` with ``base_url = "<url>/v1"`` and ``wire_api = "responses"``.

Whatever the harness asks, the model plays a scripted agent (:mod:`assay.fakes.model_script`): the steps of a
fake-harness playbook, each as the calling harness's own tools. The playbook is ``--playbook FILE``, else the
project's ``.fake-harness/playbook.toml`` in the working directory the harness tells the model about.
:mod:`assay.fakes.model_clients` says how to point each harness here (``--codex-home DIR`` writes Codex's
configuration).

Requests are checked lightly against the documented shapes (a bad one gets the API's own 400 error) and
kept in :attr:`ScriptedModel.requests`; a path neither API has is answered 404 and listed in
:attr:`ScriptedModel.unknown`, so a new harness version calling something new shows up.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import model_anthropic, model_responses
from .base import serve_in_thread, shut_down
from .harness_events import tokens_of
from .harness_tools import UsageError
from .model_clients import codex_environment
from .model_script import FLAVOURS, Script

Events = Iterator[tuple[str, dict[str, Any]]]
"""A streamed answer: (event name, data) pairs, sent as server-sent events."""


@dataclass
class Exchange:
    """One request the server answered."""

    method: str
    path: str
    status: int
    body: Any = None
    """The request's JSON body (None when it had none or it was not JSON)."""


@dataclass
class ScriptedModel:
    """The server: start it (or use it as a context manager), give the harness :attr:`url`, stop it."""

    script: Script = field(default_factory=Script)
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[Exchange] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    """``METHOD path`` of every request to a path neither API has."""

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The server's root, e.g. ``http://127.0.0.1:PORT`` (Codex's base URL adds ``/v1``)."""
        assert self._server is not None, "start the scripted model first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedModel:
        handler = type("Handler", (_Handler,), {"model": self})
        self._server = serve_in_thread(ThreadingHTTPServer((self.host, self.port), handler), "scripted-model")
        return self

    def stop(self) -> None:
        if self._server is not None:
            shut_down(self._server)
            self._server = None

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.requests.append(exchange)
            if exchange.status == 404:
                self.unknown.append(f"{exchange.method} {exchange.path}")

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any | Events]:
        """The status and the answer (a JSON value, or :data:`Events` to stream) for one request."""
        if method in ("GET", "HEAD") and path == "/":
            return 200, None  # Claude Code's connectivity check
        if path.startswith("/v1/messages"):
            return self._messages(path, headers, body)
        if path == "/v1/responses" and method == "POST":
            return self._responses(headers, body)
        if path == "/v1/models" and method == "GET":
            if "anthropic-version" in headers:
                return 200, {"data": [], "has_more": False, "first_id": None, "last_id": None}
            return 200, {"object": "list", "data": []}
        problem = f"no route {method} {path} on the scripted model"
        if "anthropic-version" in headers:
            return 404, model_anthropic.error("not_found_error", problem)
        return 404, model_responses.error("invalid_request_error", problem)

    def _messages(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if not (headers.get("x-api-key") or headers.get("authorization")):
            return 401, model_anthropic.error("authentication_error", "x-api-key header is required")
        if path == "/v1/messages/count_tokens":
            return 200, {"input_tokens": tokens_of(json.dumps(body))}
        if path != "/v1/messages":
            return 404, model_anthropic.error("not_found_error", f"no route {path} on the scripted model")
        try:
            request = model_anthropic.validate(body)
            message = model_anthropic.respond(request, self.script)
        except (model_anthropic.RequestError, UsageError) as bad:
            return 400, model_anthropic.error("invalid_request_error", str(bad))
        return 200, (model_anthropic.stream(message) if request.get("stream") else message)

    def _responses(self, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if not headers.get("authorization", "").startswith("Bearer "):
            return 401, model_responses.error("invalid_request_error", "You didn't provide an API key.",
                                              "invalid_api_key")
        try:
            request = model_responses.validate(body)
            response = model_responses.respond(request, self.script)
        except (model_responses.RequestError, UsageError) as bad:
            return 400, model_responses.error("invalid_request_error", str(bad))
        return 200, (model_responses.stream(response) if request.get("stream") else response)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    model: ScriptedModel

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        path = urlsplit(self.path).path
        status, answer = self.model.answer(self.command, path, {k.lower(): v for k, v in self.headers.items()},
                                           body)
        self.model.record(Exchange(self.command, path, status, body))
        if isinstance(answer, Iterator):
            data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in answer).encode()
            kind = "text/event-stream"
        else:
            data = b"" if answer is None else json.dumps(answer).encode()
            kind = "application/json"
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        if kind == "text/event-stream":
            self.send_header("cache-control", "no-cache")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted, printing the URL first (``--port 0``: any free port)."""
    parser = argparse.ArgumentParser(prog="python -m assay.fakes.model_server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--playbook", type=Path, help="the playbook to play (default: the project's own)")
    parser.add_argument("--flavour", choices=FLAVOURS, default="good", help="which steps of the playbook")
    parser.add_argument("--codex-home", type=Path, metavar="DIR",
                        help="write a config.toml there that points the Codex CLI at this server (use as CODEX_HOME)")
    options = parser.parse_args(argv)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())  # before the URL: whoever reads it may stop us at once
    model = ScriptedModel(Script(options.playbook, options.flavour), options.host, options.port).start()
    if options.codex_home:
        codex_environment(model.url, options.codex_home)
    print(model.url, flush=True)
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()


__all__ = ["Exchange", "ScriptedModel", "main"]
