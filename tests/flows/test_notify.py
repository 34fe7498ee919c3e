"""The verdict where operators look: a run-suite flow run's state and tags, read back through Prefect's
client, and the notification webhook, posted to a real HTTP receiver on loopback."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from assay.flows import notify
from assay.flows.demo import SUITES

MAIN_LINE = SUITES[0]
"""The demo's config-check suite: on it ``blueprint_ci`` passes and ``publish_gate`` fails."""


class Receiver:
    """A webhook receiver on loopback: keeps each JSON body posted to it, answers ``status``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 204
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(outer.status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/assay"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch, assay_home) -> Iterator[Receiver]:
    with Receiver() as r:
        monkeypatch.setenv("ASSAY_NOTIFY_WEBHOOK_URL", r.url)
        yield r


def _flow_run(state: Any) -> Any:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(state.state_details.flow_run_id)


def test_a_failed_gate_ends_the_flow_run_failed_tagged_and_posts_the_webhook(prefect_harness, demo_ws,
                                                                              receiver: Receiver) -> None:
    from assay.flows.orchestration import attend, run_suite

    state = run_suite(MAIN_LINE, gate=["blueprint_ci", "publish_gate"], return_state=True)
    flow_run = _flow_run(state)
    assert flow_run.state.type.value == "FAILED" and flow_run.state.name == "Gate failed"
    assert flow_run.state.message.startswith("publish_gate: fail (required every_variable_resolves not met")
    assert {"verdict:fail", "gate:fail", "consumer:publish_gate:fail", "consumer:blueprint_ci:pass",
            "consumer:nightly_sweep:pass"} <= set(flow_run.tags)
    run_id = state.result(raise_on_failure=False).result["run"]["run_id"]
    assert f"run:{run_id}" in flow_run.tags
    [body] = receiver.bodies
    assert body["kind"] == "gate" and body["run_id"] == run_id and body["suite"] == MAIN_LINE
    assert body["flow_run_id"] == str(flow_run.id)
    assert [(f["run_id"], f["suite"], f["consumer"], f["verdict"]) for f in body["failures"]] == [
        (run_id, MAIN_LINE, "publish_gate", "fail")]
    assert "every_variable_resolves" in body["failures"][0]["reason"] and "publish_gate: fail" in body["text"]
    # a command waiting on the flow reads the verdicts as from any run; its exit code comes from them
    result = attend(run_suite, MAIN_LINE, gate=["publish_gate"])
    assert {v["consumer"]: v["verdict"] for v in result["verdicts"]}["publish_gate"] == "fail"
    assert len(receiver.bodies) == 2


@pytest.mark.parametrize(("gate", "tags"), [
    (["blueprint_ci"], {"verdict:fail", "gate:pass", "consumer:blueprint_ci:pass", "consumer:publish_gate:fail"}),
    (None, {"verdict:fail", "consumer:blueprint_ci:pass", "consumer:publish_gate:fail"}),
])
def test_a_gate_that_holds_or_no_gate_completes_tagged_and_posts_nothing(prefect_harness, demo_ws, receiver: Receiver,
                                                                         gate: list[str] | None, tags: set[str]) -> None:
    from assay.flows.orchestration import run_suite

    state = run_suite(MAIN_LINE, gate=gate, return_state=True)
    flow_run = _flow_run(state)
    assert flow_run.state.type.value == "COMPLETED" and flow_run.state.name == "Completed"
    assert tags <= set(flow_run.tags) and (gate is not None) == any(t.startswith("gate:") for t in flow_run.tags)
    assert receiver.bodies == []


def test_assay_run_gate_fails_its_flow_run_and_keeps_its_exit_code(prefect_harness, demo_ws,
                                                                   receiver: Receiver) -> None:
    from command_line import assay
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags

    hook = {"ASSAY_NOTIFY_WEBHOOK_URL": receiver.url}
    done = assay("run", MAIN_LINE, "--gate", "publish_gate", "--json", home=demo_ws.settings.home, check=80,
                 extra_env=hook)
    run_id = json.loads(done.stdout)["run"]["run_id"]
    with get_client(sync_client=True) as client:
        [flow_run] = client.read_flow_runs(flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[f"run:{run_id}"])))
    assert flow_run.state.name == "Gate failed" and "gate:fail" in flow_run.tags
    assert [b["run_id"] for b in receiver.bodies] == [run_id]
    assay("run", MAIN_LINE, "--gate", "blueprint_ci", home=demo_ws.settings.home, check=0, extra_env=hook)
    assert len(receiver.bodies) == 1


def test_a_gated_run_that_ends_without_verdicts_fails_the_gate(prefect_harness, demo_ws, receiver: Receiver,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_servers import fake_vapi, vapi_env

    from assay.flows.orchestration import run_suite

    with fake_vapi() as vapi:
        for name, value in vapi_env(vapi, key="not-the-key-0123456789").items():  # VAPI refuses every call
            monkeypatch.setenv(name, value)
        state = run_suite("acme-plumbing/chat-line", "vapi_chat", gate=["blueprint_ci"], return_state=True)
    flow_run = _flow_run(state)
    assert flow_run.state.name == "Gate failed" and {"verdict:error", "gate:error"} <= set(flow_run.tags)
    assert flow_run.state.message.startswith("blueprint_ci: error (no verdict possible: the run ended error: ")
    [body] = receiver.bodies
    assert [(f["consumer"], f["verdict"]) for f in body["failures"]] == [("blueprint_ci", "error")]


def test_a_gated_consumer_without_criteria_is_refused_before_a_run_exists(prefect_harness, demo_ws,
                                                                          receiver: Receiver) -> None:
    from assay.core.errors import GateError
    from assay.flows.orchestration import run_suite
    from assay.storage.catalog.runs import list_runs

    with pytest.raises(GateError, match="ci_gaet"):
        run_suite(MAIN_LINE, gate=["ci_gaet"])
    assert list_runs(demo_ws.engine) == [] and receiver.bodies == []


def test_the_nightly_sweep_posts_what_failed(prefect_harness, demo_ws, receiver: Receiver) -> None:
    from assay.flows.orchestration import nightly_sweep

    swept = nightly_sweep()
    [body] = receiver.bodies
    assert body["kind"] == "nightly" and body["tag"] == "nightly"
    expected = []
    for s in swept["suites"]:  # a suite whose run failed or was refused, then each consumer that did not pass
        expected += [(s["suite"], s["run_id"], None, "error")] if s["status"] in ("failed", "refused") else []
        expected += [(s["suite"], s["run_id"], v["consumer"], v["verdict"]) for v in s["verdicts"] if v["verdict"] != "pass"]
    main_line = next(s for s in swept["suites"] if s["suite"] == MAIN_LINE)
    assert (MAIN_LINE, main_line["run_id"], "publish_gate", "fail") in expected
    assert [(f["suite"], f["run_id"], f["consumer"], f["verdict"]) for f in body["failures"]] == expected


def test_a_sweep_fails_on_a_suite_not_run_or_a_verdict_not_passed() -> None:
    suites = [{"suite": "t/s", "run_id": "r1", "status": "completed", "reason": None,
               "verdicts": [{"consumer": "ci", "verdict": "pass", "reason": "ok"}]}]
    assert notify.sweep_failures(suites) == []
    refused = [{"suite": "t/s", "runner": None, "run_id": None, "status": "refused", "verdicts": [],
                "reason": "no declared runner accepts the target"}]
    assert notify.sweep_failures(refused) == [{"suite": "t/s", "runner": None, "run_id": None, "consumer": None,
                                               "verdict": "error",
                                               "reason": "refused: no declared runner accepts the target"}]


def _silent_port() -> socket.socket:
    """A socket that accepts connections and never answers (a receiver that hangs)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


@pytest.mark.parametrize("failing", ["answers 500", "refuses connections", "never answers", "is no URL"])
def test_a_receiver_that_fails_is_logged_never_raised(receiver: Receiver, caplog: pytest.LogCaptureFixture,
                                                      failing: str) -> None:
    body = notify.notification("gate", [{"run_id": "r1", "suite": "t/s", "consumer": "ci", "verdict": "fail",
                                         "reason": "required x not met"}], run_id="r1", suite="t/s")
    receiver.status = 500
    with _silent_port() as silent:
        url = {"answers 500": receiver.url, "never answers": f"http://127.0.0.1:{silent.getsockname()[1]}/h",
               "refuses connections": "http://127.0.0.1:9/h", "is no URL": "http://[bad"}[failing]
        with caplog.at_level(logging.WARNING, logger=notify.__name__):
            assert notify.post(url, body, timeout=0.2) is False
    [record] = caplog.records
    assert "could not post the gate notification" in record.getMessage()
    assert url not in record.getMessage()  # a webhook's URL is its credential
    receiver.status = 204
    assert notify.post(receiver.url, body) is True and receiver.bodies[-1] == body
    assert notify.post(None, body) is False
