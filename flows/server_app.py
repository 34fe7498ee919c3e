"""The ASGI app the workspace's Prefect server runs (:mod:`.server`): Prefect's API and UI, with busy
SQLite refusals retried inside the server.

Prefect's server keeps its state in SQLite here, and it writes from many places at once: request
handlers, and the services that record task runs and events as they arrive. Most of its transactions
start deferred: they read, then write. When another connection commits in between, SQLite refuses the
write at once ("database is locked"; its busy timeout does not apply to a transaction that must upgrade
an outdated read), the transaction is rolled back, and Prefect answers 503. Its client then waits
2 s, then 4 s, and so on, before it asks again. So a flow run created while the server still records
the previous flow's task runs, as the nightly sweep creates its suites' runs, waited about 2 s each.

:class:`RetryBusy` asks again inside the server instead, after 20 ms, then 40 ms, and so on, for up to
:data:`BUDGET_SECONDS`. It is the same retry Prefect's client makes, sooner: the refused transaction
was rolled back, so the request is replayed as it came. A 503 that is still refused when the budget is
spent, or that is not this refusal, goes to the client as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

BUDGET_SECONDS = 10.0
"""How long a refused request is retried inside the server before its 503 goes to the client."""
FIRST_WAIT_SECONDS, LONGEST_WAIT_SECONDS = 0.02, 0.5
REFUSAL = b'"exception_message":"Service Unavailable"'
"""The body of Prefect's answer to an error its client may retry (a busy database, here)."""


class RetryBusy:
    """ASGI middleware: an HTTP request that ``app`` refuses with Prefect's retryable 503 is replayed,
    with growing waits, until it is answered otherwise or :data:`BUDGET_SECONDS` have passed."""

    def __init__(self, app: ASGIApp, budget_seconds: float = BUDGET_SECONDS) -> None:
        self.app = app
        self.budget_seconds = budget_seconds
        self.retried = 0
        """Refusals retried since start (read by tests)."""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan and websockets (events) pass through
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        loop = asyncio.get_running_loop()
        deadline, wait = loop.time() + self.budget_seconds, FIRST_WAIT_SECONDS
        while True:
            held: list[Message] = []  # a 503's messages, kept until its body says what it is

            async def answer(message: Message) -> None:
                if held or (message["type"] == "http.response.start" and message["status"] == 503):
                    held.append(message)
                else:
                    await send(message)

            error: Exception | None = None
            try:
                await self.app(dict(scope), _replay(body, receive), answer)  # routing rewrites its scope
            except Exception as exc:  # Starlette re-raises an error after sending its 500 or 503, for the log
                error = exc
            if _refused(held) and loop.time() + wait <= deadline:
                self.retried += 1
                await asyncio.sleep(wait)
                wait = min(wait * 2, LONGEST_WAIT_SECONDS)
                continue
            for message in held:
                await send(message)
            if error is not None:
                raise error
            return


def _refused(held: list[Message]) -> bool:
    return bool(held) and REFUSAL in b"".join(m.get("body", b"") for m in held[1:])


async def _whole_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the request's body once, then waits on the connection (for its end)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def create_app() -> RetryBusy:
    """The factory uvicorn calls: Prefect's server app, wrapped in :class:`RetryBusy`."""
    from prefect.server.api.server import create_app as prefect_app

    return RetryBusy(prefect_app())
