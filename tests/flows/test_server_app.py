"""The workspace server retries busy-database refusals itself (``flows/server_app.py``).

The app under the middleware is built as Prefect builds its API: FastAPI, with Prefect's own handler
for errors its client may retry, mounted under ``/api`` (so routing rewrites the request's scope).
The endpoint raises what SQLite raises when a deferred transaction cannot upgrade: "database is locked".
The end-to-end case, flow runs back to back against a real workspace server, is in ``test_server.py``.
"""

from __future__ import annotations

import asyncio
import sqlite3

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from prefect.server.api.server import custom_internal_exception_handler

from assay.flows.server_app import REFUSAL, RetryBusy


def _server(busy_for: int | None, seen: list[bytes]) -> FastAPI:
    """Refuses ``POST /api/flow_runs/`` as busy for its first ``busy_for`` calls (``None``: always)."""
    api = FastAPI(exception_handlers={Exception: custom_internal_exception_handler})

    @api.post("/flow_runs/")
    async def create(request: Request) -> dict[str, int]:
        seen.append(await request.body())
        if busy_for is None or len(seen) <= busy_for:
            raise sa.exc.OperationalError("INSERT INTO flow_run ...", {}, sqlite3.OperationalError("database is locked"))
        return {"created": len(seen)}

    @api.get("/ready")
    async def ready() -> JSONResponse:
        seen.append(b"")
        return JSONResponse({"message": "not ready yet"}, status_code=503)

    app = FastAPI()
    app.mount("/api", api)
    return app


def _call(app: RetryBusy, method: str, path: str, body: bytes = b"") -> httpx.Response:
    async def go() -> httpx.Response:
        # the app re-raises an error after answering it, for the server's log: take the answer
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://server") as client:
            return await client.request(method, path, content=body)

    return asyncio.run(go())


def test_a_busy_refusal_is_replayed_in_the_server_with_its_body() -> None:
    seen: list[bytes] = []
    app = RetryBusy(_server(busy_for=2, seen=seen))
    body = b'{"flow_id": "f", "name": "tidy-otter", "parameters": {"suite": "acme/main"}}'
    answered = _call(app, "POST", "/api/flow_runs/", body)
    assert answered.status_code == 200 and answered.json() == {"created": 3}
    assert seen == [body] * 3 and app.retried == 2


def test_other_503s_reach_the_client_untouched_and_once() -> None:
    seen: list[bytes] = []
    app = RetryBusy(_server(busy_for=0, seen=seen))
    answered = _call(app, "GET", "/api/ready")
    assert answered.status_code == 503 and answered.json() == {"message": "not ready yet"}
    assert len(seen) == 1 and app.retried == 0


@pytest.mark.parametrize("budget", [0.0, 0.1])
def test_a_refusal_that_outlasts_the_budget_reaches_the_client_as_prefect_sent_it(budget: float) -> None:
    seen: list[bytes] = []
    app = RetryBusy(_server(busy_for=None, seen=seen), budget_seconds=budget)
    answered = _call(app, "POST", "/api/flow_runs/", b"{}")
    assert answered.status_code == 503 and REFUSAL in answered.content
    # no budget: asked once, as Prefect alone would; a budget of 0.1 s: at least once more, 20 ms later
    assert (len(seen) == 1) if budget == 0.0 else (len(seen) >= 2), len(seen)
