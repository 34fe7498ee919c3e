"""The one classification of vendor errors, and the retry policy every adapter shares, against a real
HTTP server on loopback."""

from __future__ import annotations

import pytest

from assay.adapters.http import RetryPolicy, VendorClient, parse_retry_after, vendor_message
from assay.core.errors import (
    DeadlineError,
    MalformedResponseError,
    PermanentVendorError,
    RateLimitedError,
    TransientVendorError,
    UnconfirmedCreateError,
)
from assay.fakes.base import FakeVendor


class Echo(FakeVendor):
    name = "echo"

    def setup_routes(self) -> None:
        self.route("GET", "/thing/{id}", lambda r: (200, {"id": r.params["id"]}))
        self.route("POST", "/refuse", lambda r: (422, {"detail": [{"loc": ["body", "name"], "msg": "field required"}]}))
        self.route("POST", "/things", self.create)
        self.route("GET", "/things", self.find)

    def create(self, req) -> tuple[int, dict]:
        """Billable work: each request makes one object, found later by the marker it carried."""
        with self.lock:
            thing = {"id": f"thing-{len(self.objects('thing')) + 1}", "marker": req.json()["marker"]}
            self.objects("thing")[thing["id"]] = thing
        return 201, thing

    def find(self, req) -> tuple[int, list]:
        marker = req.query["marker"][0]
        with self.lock:
            return 200, [t for t in self.objects("thing").values() if t["marker"] == marker]


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
    echo.faults.malformed = 4
    client, _ = _client(echo, attempts=4)
    with pytest.raises(MalformedResponseError, match="not JSON"):
        client.get("/thing/1")
    assert client.sent == 4


@pytest.mark.parametrize("fault", ["malformed", "truncated"])
def test_a_read_cut_short_is_read_again(echo: Echo, _client, fault: str) -> None:
    setattr(echo.faults, fault, 2)
    client, slept = _client(echo, attempts=3)
    assert client.get("/thing/1") == {"id": "1"}
    assert client.sent == 3 and len(slept) == 2


def test_validation_errors_carry_the_vendors_words(echo: Echo, _client) -> None:
    client, _ = _client(echo)
    with pytest.raises(PermanentVendorError, match="body.name: field required"):
        client.post("/refuse", {})


def test_a_closed_port_is_a_transient_network_error(clients) -> None:
    client = VendorClient("nobody", "http://127.0.0.1:9", {}, retry=RetryPolicy(attempts=2, base_delay=0.0),
                          sleep=lambda s: None)
    clients.append(client)
    with pytest.raises(TransientVendorError, match="no response: could not connect"):
        client.get("/")
    assert client.sent == 2


def test_a_create_that_never_connected_is_sent_again(clients) -> None:
    client = VendorClient("nobody", "http://127.0.0.1:9", {}, retry=RetryPolicy(attempts=3, base_delay=0.0),
                          sleep=lambda s: None)
    clients.append(client)
    with pytest.raises(TransientVendorError, match="could not connect"):
        client.post("/things", {"marker": "m"}, creates=True)
    assert client.sent == 3


# -- requests that create billable work ------------------------------------------------------------------

def _created(echo: Echo) -> int:
    return len(echo.live_objects().get("thing", []))


def _finder(client: VendorClient, marker: str):
    def recover():
        found = client.get("/things", params={"marker": marker})
        return found[0] if found else None
    return recover


@pytest.mark.parametrize("fault,value", [("rate_limited", 2), ("server_errors", 2), ("truncated", 1),
                                         ("malformed", 1), ("answer_late", {"POST /things": 0.15})])
def test_a_create_is_never_duplicated_when_it_can_be_looked_up(echo: Echo, clients, fault: str, value) -> None:
    setattr(echo.faults, fault, value)
    echo.faults.retry_after = 0
    client = VendorClient("echo", echo.url, {"authorization": "Bearer k-123"}, timeout=0.05,
                          retry=RetryPolicy(attempts=4, base_delay=0.0), sleep=lambda s: None)
    clients.append(client)
    thing = client.post("/things", {"marker": "run-1:case-1:0"}, creates=True,
                        recover=_finder(client, "run-1:case-1:0"))
    assert thing["marker"] == "run-1:case-1:0"
    assert _created(echo) == 1, echo.live_objects()


@pytest.mark.parametrize("fault,value,made", [("server_errors", 1, 0), ("truncated", 1, 1),
                                              ("answer_late", {"POST /things": 0.15}, 1)])
def test_a_create_that_cannot_be_looked_up_is_an_error_never_resent(echo: Echo, clients, fault: str, value,
                                                                    made: int) -> None:
    setattr(echo.faults, fault, value)
    client = VendorClient("echo", echo.url, {"authorization": "Bearer k-123"}, timeout=0.05,
                          retry=RetryPolicy(attempts=4, base_delay=0.0), sleep=lambda s: None)
    clients.append(client)
    with pytest.raises(UnconfirmedCreateError, match="not sent again: echo may have done"):
        client.post("/things", {"marker": "m"}, creates=True)
    assert client.sent == 1 and _created(echo) == made


def test_a_rate_limited_create_is_sent_again(echo: Echo, _client) -> None:
    echo.faults.rate_limited, echo.faults.retry_after = 2, 1
    client, slept = _client(echo)
    assert client.post("/things", {"marker": "m"}, creates=True)["id"] == "thing-1"
    assert slept == [1.0, 1.0] and _created(echo) == 1


# -- deadlines ---------------------------------------------------------------------------------------------

class Clock:
    """Wall time that moves only when the client sleeps."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_backoff_longer_than_the_time_left_ends_at_the_deadline(echo: Echo, clients) -> None:
    from datetime import UTC, datetime

    clock = Clock()
    echo.faults.rate_limited, echo.faults.retry_after = 5, 30
    client = VendorClient("echo", echo.url, {"authorization": "Bearer k-123"}, sleep=clock.sleep, clock=clock)
    clients.append(client)
    client.until(datetime.fromtimestamp(clock.now + 45, UTC))
    with pytest.raises(DeadlineError, match="timed out after 30 s waiting for echo"):
        client.get("/thing/1")
    assert client.sent == 2 and clock.now == 1_000_030.0  # waited once; the second wait would pass the deadline


def test_a_request_never_outlasts_the_deadline(echo: Echo, clients) -> None:
    from datetime import UTC, datetime, timedelta

    echo.faults.hang = {"GET /thing/*": 0.3}
    client = VendorClient("echo", echo.url, {"authorization": "Bearer k-123"}, timeout=30.0, sleep=lambda s: None)
    clients.append(client)
    client.until(datetime.now(UTC) + timedelta(seconds=0.05))
    with pytest.raises(DeadlineError, match="waiting for echo: the run's deadline passed"):
        client.get("/thing/1")
    assert client.sent == 1


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
