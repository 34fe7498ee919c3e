"""The one classification of vendor errors, and the retry policy every adapter shares, against a real
HTTP server on loopback."""

from __future__ import annotations

import pytest

from assay.adapters.http import RetryPolicy, VendorClient, parse_retry_after, vendor_message
from assay.core.errors import (
    MalformedResponseError,
    PermanentVendorError,
    RateLimitedError,
    TransientVendorError,
)
from assay.fakes.base import FakeVendor


class Echo(FakeVendor):
    name = "echo"

    def setup_routes(self) -> None:
        self.route("GET", "/thing/{id}", lambda r: (200, {"id": r.params["id"]}))
        self.route("POST", "/refuse", lambda r: (422, {"detail": [{"loc": ["body", "name"], "msg": "field required"}]}))


@pytest.fixture
def echo():
    with Echo(key="k-123") as fake:
        yield fake


@pytest.fixture
def clients():
    made: list[VendorClient] = []
    yield made
    for client in made:
        client.close()


@pytest.fixture
def _client(clients):
    def make(fake: FakeVendor, key: str = "k-123", attempts: int = 4) -> tuple[VendorClient, list[float]]:
        slept: list[float] = []
        client = VendorClient("echo", fake.url, {"authorization": f"Bearer {key}"},
                              retry=RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.02), sleep=slept.append)
        clients.append(client)
        return client, slept

    return make


def test_success_returns_the_parsed_body(echo: Echo, _client) -> None:
    client, slept = _client(echo)
    assert client.get("/thing/7") == {"id": "7"} and slept == [] and client.sent == 1


def test_a_rate_limit_waits_what_retry_after_asks_then_succeeds(echo: Echo, _client) -> None:
    echo.faults.rate_limited, echo.faults.retry_after = 2, 3
    client, slept = _client(echo)
    assert client.get("/thing/1") == {"id": "1"}
    assert slept == [3.0, 3.0] and client.sent == 3


def test_a_burst_of_5xx_is_retried_with_backoff_and_gives_up_transient(echo: Echo, _client) -> None:
    echo.faults.server_errors = 10
    client, slept = _client(echo, attempts=3)
    with pytest.raises(TransientVendorError) as err:
        client.get("/thing/1")
    assert err.value.status == 503 and err.value.transient and len(slept) == 2
    assert all(0 < s <= 0.02 for s in slept)


def test_a_bad_key_is_permanent_at_once_and_never_named(echo: Echo, _client) -> None:
    client, slept = _client(echo, key="sk-live-DO-NOT-LEAK")
    with pytest.raises(PermanentVendorError) as err:
        client.get("/thing/1")
    assert err.value.status == 401 and not err.value.transient and slept == [] and client.sent == 1
    assert "DO-NOT-LEAK" not in str(err.value) and "Invalid API key" in str(err.value)


def test_a_malformed_body_is_a_classified_error_not_a_crash(echo: Echo, _client) -> None:
    echo.faults.malformed = 1
    client, _ = _client(echo)
    with pytest.raises(MalformedResponseError, match="not JSON"):
        client.get("/thing/1")


def test_validation_errors_carry_the_vendors_words(echo: Echo, _client) -> None:
    client, _ = _client(echo)
    with pytest.raises(PermanentVendorError, match="body.name: field required"):
        client.post("/refuse", {})


def test_a_closed_port_is_a_transient_network_error(clients) -> None:
    client = VendorClient("nobody", "http://127.0.0.1:9", {}, retry=RetryPolicy(attempts=2, base_delay=0.0),
                          sleep=lambda s: None)
    clients.append(client)
    with pytest.raises(TransientVendorError, match="no response: network error"):
        client.get("/")
    assert client.sent == 2


def test_rate_limited_is_its_own_class() -> None:
    assert issubclass(RateLimitedError, TransientVendorError.__mro__[1]) and RateLimitedError.transient


@pytest.mark.parametrize("header,expected", [
    ("5", 5.0), ("0.5", 0.5), ("-3", 0.0), ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),
    ("Wed, 21 Oct 2015 07:28:10 -0000", 10.0), ("soon", None), (None, None),
])
def test_retry_after_reads_seconds_and_http_dates(header: str | None, expected: float | None) -> None:
    now = 1445412480.0  # 2015-10-21 07:28:00 UTC
    assert parse_retry_after(header, now=now) == expected


@pytest.mark.parametrize("body,expected", [
    ({"message": ["a", "b"], "error": "Bad Request"}, "a; b"),
    ({"detail": {"type": "x", "code": "quota", "message": "over quota"}}, "over quota"),
    ({"error": {"message": "model not found", "type": "invalid_request_error"}}, "model not found"),
    ("plain text", "plain text"),
    ({}, "fallback"),
])
def test_vendor_message_reads_each_vendors_error_shape(body, expected: str) -> None:
    assert vendor_message(body, "fallback") == expected
