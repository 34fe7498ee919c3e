"""The machinery every fake vendor shares: a threaded HTTP server on loopback, routing, key checks,
switchable faults, an inventory of objects, and a log of requests.

A fake is a :class:`FakeVendor` subclass that declares its routes with :meth:`FakeVendor.route` and
shapes its own errors (:meth:`FakeVendor.error_body`). Every fake also answers a small control API
under ``/_fake/`` (no key needed), so a person running ``assay fake-vendors`` can steer it with curl:

- ``POST /_fake/faults`` with any of :class:`Faults`' fields (JSON) switches faults on or off (for
  example ``{"answer_late": {"POST /chat": 5}}``: chats are made at once and answered five seconds later);
- ``GET /_fake/inventory`` lists the objects the fake holds by kind;
- ``GET /_fake/requests`` lists the requests received (method, path, status);
- ``POST /_fake/reset`` forgets objects, requests and faults.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Faults:
    """Faults a fake can be told to produce. Counts are consumed one per request (control calls excluded)."""

    latency: float = 0.0
    """Seconds added before every answer."""
    rate_limited: int = 0
    """The next N requests answer 429 with ``Retry-After: retry_after``."""
    retry_after: float = 1.0
    server_errors: int = 0
    """The next N requests answer 503 (a burst of 5xx)."""
    malformed: int = 0
    """The next N successful answers (to requests matching ``body_route``) have a body that is not JSON."""
    truncated: int = 0
    """The next N successful answers (to requests matching ``body_route``) are cut mid-body: the headers
    promise the whole body, half of it is sent, and the connection is closed (a dropped connection)."""
    body_route: str = "*"
    """Which requests ``malformed`` and ``truncated`` spoil: ``"METHOD /path"``, ``*`` matching any run of
    characters (``"GET /eval/run/*"``: only eval-run polls)."""
    hang: dict[str, float] = field(default_factory=dict)
    """``"METHOD /path"`` (``*`` matches any run of characters) -> seconds a matching request waits *before*
    the fake does anything: a vendor slower than a lease, or than a client's timeout."""
    answer_late: dict[str, float] = field(default_factory=dict)
    """``"METHOD /path"`` (as for ``hang``) -> seconds a matching request's answer waits *after* the work is
    done (the chat made, the run started): "slow, then succeed", what a client that gives up and sends
    again turns into duplicated work."""
    never_finish: bool = False
    """Asynchronous work (a Hamming run, a VAPI eval run) stays running for ever."""
    finish_after: float | None = None
    """Asynchronous work finishes this many seconds after it started (default: at once)."""
    rename_assertions: dict[str, str] = field(default_factory=dict)
    """Hamming: assertion id -> the new name results report it under."""
    wild: dict[str, str] = field(default_factory=dict)
    """Shape deviations a real vendor's answers show (:mod:`.wild`): mode (``extra_keys``, ``drop_optional``,
    ``null_optional``, ``unknown_enum``, ``error_200``) -> the ``"METHOD /path"`` answers it applies to
    (``*`` matches any run of characters)."""
    scripts: dict[str, Any] = field(default_factory=dict)
    """Vendor-specific scripted behaviour (see each fake)."""
    hits: dict[int, int] = field(default_factory=dict)
    """How often each rated reply rule has matched so far (:func:`assay.fakes.brain.reply`); reset with the faults."""


@dataclass
class FakeRequest:
    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    template: str = ""
    """The route's path template (``/assistant/{id}``) once routed: what a vendor's document is keyed by."""

    def json(self) -> Any:
        return json.loads(self.body or b"null")


Answer = tuple[int, Any] | tuple[int, Any, dict[str, str]]
Handler = Callable[[FakeRequest], Answer]


def serve_in_thread(server: ThreadingHTTPServer, name: str) -> ThreadingHTTPServer:
    """Serve ``server`` from a daemon thread called ``name``, each request in a daemon thread of its own.
    A short poll interval: :func:`shut_down` returns within 50 ms instead of the default half second."""
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True).start()
    return server


def shut_down(server: ThreadingHTTPServer) -> None:
    """Stop serving and close the listening socket."""
    server.shutdown()
    server.server_close()


class FakeVendor:
    """A fake vendor served on ``127.0.0.1`` at a free port, in a daemon thread."""

    name = "fake"

    def __init__(self, key: str = "test-key", host: str = "127.0.0.1", port: int = 0):
        self.key = key
        self.faults = Faults()
        self.inventory: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        self.clock: Callable[[], float] = time.monotonic
        """What a fake's simulated work (a run that finishes later) is timed by: a test may step its own."""
        self._routes: list[tuple[str, re.Pattern[str], Handler, str]] = []
        self._host, self._port = host, port
        self._server: ThreadingHTTPServer | None = None
        self.setup_routes()

    # -- subclass API --------------------------------------------------------------------------------
    def setup_routes(self) -> None:
        """Declare routes with :meth:`route`."""

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """``pattern`` is a path with ``{name}`` placeholders (one path segment each)."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        self._routes.append((method.upper(), re.compile(f"^{regex}$"), handler, pattern))

    document: Any = None
    """The vendor's OpenAPI document (:class:`~.openapi.OpenApi`) its requests and answers follow, if it has one."""

    def wild(self, req: FakeRequest, status: int, payload: Any) -> tuple[int, Any]:
        """The answer as a vendor that strays from its document gives it (:func:`.wild.deviate`, ``faults.wild``)."""
        from .wild import deviate

        return deviate(self, req, status, payload)

    def authorised(self, headers: dict[str, str]) -> bool:
        """Whether the request carries the right key (default: ``Authorization: Bearer <key>``)."""
        return headers.get("authorization") == f"Bearer {self.key}"

    def error_body(self, status: int, message: str) -> Any:
        """The vendor's error shape."""
        return {"statusCode": status, "error": _REASONS.get(status, "Error"), "message": message}

    def objects(self, kind: str) -> dict[str, Any]:
        with self.lock:
            return self.inventory.setdefault(kind, {})

    def live_objects(self) -> dict[str, list[str]]:
        """Kind -> ids of the objects the fake still holds (what a leak test checks)."""
        with self.lock:
            return {kind: sorted(objs) for kind, objs in self.inventory.items() if objs}

    # -- serving -------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "start the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeVendor":
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, a keep-alive client's delayed ACK
            # would add ~40 ms to every answer.
            disable_nagle_algorithm = True
            disable_nagle_algorithm = True  # headers and body go out in two writes: without this, ~40 ms per answer

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                fake._dispatch(self)

            do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _serve

        self._server = serve_in_thread(_Server((self._host, self._port), _Handler), f"fake-{self.name}")
        return self

    def stop(self) -> None:
        if self._server is not None:
            shut_down(self._server)
            self._server = None

    def __enter__(self) -> "FakeVendor":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        with self.lock:
            self.inventory.clear()
            self.requests.clear()
            self.faults = Faults()

    # -- dispatch ------------------------------------------------------------------------------------
    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        split = urlsplit(h.path)
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        req = FakeRequest(h.command, split.path, {}, parse_qs(split.query), headers, body)
        if split.path.startswith("/_fake/"):
            status, payload, extra = self._control(req)
            return _send(h, status, payload, extra)
        status, payload, extra = self._answer(req)
        with self.lock:
            self.requests.append({"method": req.method, "path": req.path, "status": status, "at": time.time()})
        _send(h, status, payload, extra)

    def _answer(self, req: FakeRequest) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            f = self.faults
            latency = f.latency
            fault: tuple[int, str] | None = None
            if f.rate_limited > 0:
                f.rate_limited -= 1
                fault = (429, "Too many concurrent requests")
            elif f.server_errors > 0:
                f.server_errors -= 1
                fault = (503, "Service temporarily unavailable")
            hang = _delay(f.hang, req)
        if latency or hang:
            time.sleep(latency + hang)
        if fault is not None:
            extra = {"retry-after": _seconds(self.faults.retry_after)} if fault[0] == 429 else {}
            return fault[0], self.error_body(fault[0], fault[1]), extra
        if not self.authorised(req.headers):
            return 401, self.error_body(401, "Invalid API key"), {}
        for method, regex, handler, template in self._routes:
            m = regex.match(req.path)
            if m and method == req.method:
                req.params, req.template = m.groupdict(), template
                try:
                    answer = handler(req)
                except json.JSONDecodeError as exc:
                    return 400, self.error_body(400, f"body is not JSON: {exc.msg}"), {}
                status, payload = answer[0], answer[1]
                extra = answer[2] if len(answer) == 3 else {}
                if 200 <= status < 300 and self.faults.wild:
                    status, payload = self.wild(req, status, payload)
                with self.lock:
                    late = _delay(self.faults.answer_late, req)
                    spoil = 200 <= status < 300 and bool(_delay({self.faults.body_route: 1}, req))
                    if spoil and self.faults.malformed > 0:
                        self.faults.malformed -= 1
                        payload = _Malformed()
                    elif spoil and self.faults.truncated > 0:
                        self.faults.truncated -= 1
                        payload = _Truncated(payload)
                if late:
                    time.sleep(late)
                return status, payload, extra
        return 404, self.error_body(404, f"Cannot {req.method} {req.path}"), {}

    def _control(self, req: FakeRequest) -> tuple[int, Any, dict[str, str]]:
        if req.path == "/_fake/faults" and req.method == "POST":
            change = req.json() or {}
            known = {f.name for f in fields(Faults)}
            unknown = sorted(set(change) - known)
            if unknown:
                return 400, {"error": f"unknown faults {unknown}; known: {sorted(known)}"}, {}
            with self.lock:
                for k, v in change.items():
                    setattr(self.faults, k, v)
                return 200, asdict(self.faults), {}
        if req.path == "/_fake/inventory":
            return 200, self.live_objects(), {}
        if req.path == "/_fake/requests":
            with self.lock:
                return 200, list(self.requests), {}
        if req.path == "/_fake/reset" and req.method == "POST":
            self.reset()
            return 200, {}, {}
        return 404, {"error": f"no control endpoint {req.method} {req.path}"}, {}


class _Server(ThreadingHTTPServer):
    """A listen backlog for many concurrent clients (the default, 5, drops connections under a burst)."""

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up before the answer (its read timeout) is what some faults are for: not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Malformed:
    """Marker: answer with a truncated, non-JSON body."""


@dataclass
class _Truncated:
    """Marker: answer ``payload`` cut mid-body, then close the connection."""

    payload: Any


def _delay(rules: dict[str, float], req: FakeRequest) -> float:
    """The seconds the first rule matching ``METHOD /path`` asks for (0 when none matches)."""
    key = f"{req.method} {req.path}"
    return next((float(s) for pattern, s in rules.items() if fnmatch.fnmatchcase(key, pattern)), 0.0)


def _send(h: BaseHTTPRequestHandler, status: int, payload: Any, extra: dict[str, str]) -> None:
    if isinstance(payload, _Truncated):
        data = json.dumps(payload.payload).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data[: len(data) // 2])
        h.close_connection = True
        return
    if isinstance(payload, _Malformed):
        data, kind = b'{"id": "trunc', "application/json"
    elif payload is None:
        data, kind = b"", "application/json"
    else:
        data, kind = json.dumps(payload).encode(), "application/json"
    h.send_response(status)
    h.send_header("content-type", kind)
    h.send_header("content-length", str(len(data)))
    for k, v in extra.items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


_REASONS = {400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
            409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable"}


__all__ = ["Answer", "FakeRequest", "FakeVendor", "Faults", "Handler"]
