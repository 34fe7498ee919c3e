"""Talking HTTP to vendors: one classification of their errors, one retry policy, for every adapter.

Every runner that calls a vendor, and our judge, goes through :class:`VendorClient`:

- :func:`classify` turns a response into the error it means: 429 is :class:`RateLimitedError`
  (carrying ``Retry-After``), 408/425/5xx and network failures are :class:`TransientVendorError`,
  any other 4xx is :class:`PermanentVendorError`, and a 2xx whose body is not JSON is
  :class:`MalformedResponseError`. The message is the vendor's own words (``message``, ``error`` or
  ``detail``), never a header, a key or our request body.
- :meth:`VendorClient.request` retries what is transient with capped exponential backoff and jitter,
  waits what ``Retry-After`` asks (capped), and raises the classified error when attempts run out.
  Permanent errors are raised at once, except a body cut short on a read (``GET``), which is read again.
- A request that **creates** billable work (``creates=True``: a chat, a simulation, a test run) is never
  sent twice blindly. A 429 or a connection that never opened left nothing at the vendor and is
  retried; after any other failure (a read timeout, a connection dropped after sending, a 5xx) the
  vendor may have done the work, so the caller's ``recover`` looks for it by the marker the request
  carried (the vendor's documented list endpoint) and only a vendor that holds nothing is asked again;
  with no way to look, the failure is an :class:`~assay.core.errors.UnconfirmedCreateError` saying what
  the vendor may hold.
- With a **deadline** (:meth:`VendorClient.until`, the run's), no wait outlasts it: a request's timeout
  and a backoff are capped by the time left, and a wait the deadline cut short is a
  :class:`~assay.core.errors.DeadlineError` ("timed out after N s waiting for VAPI").

A vendor error becomes an ERROR case run or a null result carrying that message; never a FAIL.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from assay.core.errors import (
    ConfigError,
    DeadlineError,
    MalformedResponseError,
    PermanentVendorError,
    RateLimitedError,
    TransientVendorError,
    UnconfirmedCreateError,
    VendorError,
)

TRANSIENT_STATUSES = frozenset({408, 425, 500, 502, 503, 504})
"""Statuses that retrying may fix (besides 429, which is a rate limit)."""

_MESSAGE_LIMIT = 500


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def vendor_message(body: Any, fallback: str) -> str:
    """The vendor's own words from an error body: VAPI ``message``/``error``, ElevenLabs ``detail``, else the text."""
    text: Any = None
    if isinstance(body, Mapping):
        detail = body.get("detail")
        if isinstance(detail, Mapping):
            text = detail.get("message") or detail.get("code")
        elif isinstance(detail, list) and detail:  # 422: [{loc, msg, type}]
            text = "; ".join(
                f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" if isinstance(d, Mapping) else str(d)
                for d in detail
            )
        elif isinstance(detail, str):
            text = detail
        text = text or body.get("message") or body.get("error")
        if isinstance(text, list):
            text = "; ".join(map(str, text))
        if isinstance(text, Mapping):
            text = text.get("message") or json.dumps(text, sort_keys=True)
    elif isinstance(body, str) and body.strip():
        text = body.strip()
    text = str(text) if text else fallback
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def classify(vendor: str, response: httpx.Response) -> VendorError | None:
    """The error a response means, or None if it is a success with a JSON body (or no body)."""
    status = response.status_code
    if 200 <= status < 300:
        if not response.content or status == 204:
            return None
        try:
            response.json()
        except ValueError:
            return MalformedResponseError(vendor, status, f"the body is not JSON ({_snippet(response.text)})")
        return None
    message = vendor_message(_body(response), response.reason_phrase or "error")
    if status == 429:
        return RateLimitedError(vendor, status, message, retry_after=parse_retry_after(response.headers.get("retry-after")))
    if status in TRANSIENT_STATUSES:
        return TransientVendorError(vendor, status, message, retry_after=parse_retry_after(response.headers.get("retry-after")))
    return PermanentVendorError(vendor, status, message)


def _snippet(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient vendor error is retried."""

    attempts: int = 5
    """Tries in all, the first included."""
    base_delay: float = 0.25
    """The first backoff, doubled after each failure (with jitter)."""
    max_delay: float = 8.0
    """No single backoff is longer."""
    max_retry_after: float = 60.0
    """A ``Retry-After`` longer than this is capped (a vendor asking for an hour gets our cap)."""

    def delay(self, attempt: int, error: VendorError, rng: random.Random) -> float:
        """Seconds to wait before try ``attempt + 1``: what the vendor asked, else backoff with jitter."""
        if error.retry_after is not None:
            return min(error.retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return backoff * (0.5 + rng.random() / 2)


class _Unsent(TransientVendorError):
    """A request that never left us (the connection was not opened): sending it again duplicates nothing."""


def maybe_done(error: VendorError) -> bool:
    """Whether the vendor may have done what a request that failed with ``error`` asked: after a timeout, a
    connection dropped after sending, a 5xx, or a 2xx whose body was cut short. Not after a rate limit
    (refused at the door), a connection that never opened, or a refusal (4xx)."""
    if isinstance(error, MalformedResponseError):
        return True
    return error.transient and not isinstance(error, (RateLimitedError, _Unsent))


Recover = Callable[[], Any]
"""Looks for what a creating request made, by the marker it carried: the object, or None if the vendor holds none."""


class VendorClient:
    """An httpx client for one vendor: base URL, auth headers, timeouts, classification and retries.

    Thread-safe (httpx's client is); ``in_flight`` and ``peak_in_flight`` count concurrent requests,
    so a caller can prove a concurrency bound holds. ``sent`` counts requests actually sent.
    ``label`` is the vendor's name in messages (``VAPI``; :class:`VendorApi` sets it).
    """

    def __init__(
        self,
        vendor: str,
        base_url: str,
        headers: Mapping[str, str],
        *,
        timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.vendor = vendor
        self.label = vendor
        self.retry = retry
        self.timeout = timeout
        self._sleep = sleep
        self._clock = clock
        self._rng = random.Random()
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=dict(headers), timeout=timeout,
                                  transport=transport)
        self._lock = threading.Lock()
        self._bound = threading.local()  # each thread's deadline: one client may serve several runs at once
        self.in_flight = 0
        self.peak_in_flight = 0
        self.sent = 0

    def __enter__(self) -> "VendorClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def until(self, deadline_at: datetime | None) -> None:
        """Stop every later wait of this thread at ``deadline_at`` (the run's; naive means UTC); None lifts it.
        Per thread, so the threads of a collect pass, each polling its own run, keep their own deadlines."""
        if deadline_at is not None and deadline_at.tzinfo is None:
            deadline_at = deadline_at.replace(tzinfo=timezone.utc)
        self._bound.deadline = deadline_at.timestamp() if deadline_at is not None else None

    def time_left(self) -> float | None:
        """Seconds until this thread's deadline (never negative), or None without one."""
        deadline = getattr(self._bound, "deadline", None)
        return None if deadline is None else max(0.0, deadline - self._clock())

    def _send_once(self, method: str, path: str, timeout: float, **kwargs: Any) -> httpx.Response:
        with self._lock:
            self.in_flight += 1
            self.sent += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return self._http.request(method, path, timeout=timeout, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise _Unsent(self.vendor, None, f"could not connect: {type(exc).__name__}") from None
        except httpx.TimeoutException as exc:
            raise TransientVendorError(self.vendor, None, f"timed out: {type(exc).__name__}") from None
        except httpx.TransportError as exc:
            raise TransientVendorError(self.vendor, None, f"network error: {type(exc).__name__}") from None
        finally:
            with self._lock:
                self.in_flight -= 1

    def request(self, method: str, path: str, *, json_body: Any = None, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str] | None = None, creates: bool = False,
                recover: Recover | None = None, where: str | None = None) -> Any:
        """Send, retrying what is safe to retry (see the module docstring); the parsed JSON body (None when empty).

        ``creates`` marks a request that makes billable work at the vendor; ``recover`` (with it) finds
        that work by the marker the request carried, when a failure leaves unknown whether it was done;
        without a way to find it, ``where`` tells a person where to look (``"in Hamming's dashboard"``).
        """
        began = self._clock()
        for attempt in range(1, self.retry.attempts + 1):
            left = self.time_left()
            if left is not None and left <= 0:
                raise DeadlineError(self.label, self._clock() - began)
            capped = left is not None and left < self.timeout
            try:
                response = self._send_once(method, path, left if capped else self.timeout, json=json_body,
                                           params=params, headers=headers)
                error = classify(self.vendor, response)
            except VendorError as exc:
                if capped and exc.status is None and self.time_left() == 0:  # the deadline, not the vendor, cut it
                    raise DeadlineError(self.label, self._clock() - began) from None
                error, response = exc, None
            if error is None:
                return response.json() if response is not None and response.content and response.status_code != 204 else None
            uncertain = creates and maybe_done(error)
            if uncertain:
                found = self._recovered(error, recover, where)
                if found is not None:
                    return found
            reread = method == "GET" and isinstance(error, MalformedResponseError)  # a body cut short: read again
            if not (error.transient or reread or uncertain) or attempt == self.retry.attempts:
                raise error
            self._wait(self.retry.delay(attempt, error, self._rng), began)
        raise AssertionError("unreachable")  # pragma: no cover

    def _recovered(self, error: VendorError, recover: Recover | None, where: str | None) -> Any:
        """What a creating request that failed with ``error`` made, found by ``recover``; None if the vendor
        holds nothing (sending again is safe). Raises when nobody can tell."""
        why = "offers no way to look it up"
        if recover is not None:
            try:
                return recover()
            except VendorError as exc:
                why = f"looking it up failed ({exc})"
        look = f"; look {where}" if where else ""
        raise UnconfirmedCreateError(self.vendor, error.status, f"{error.vendor_message}; not sent again: {self.label} "
                                     f"may have done (and billed) the work without answering, and {why}{look}")

    def _wait(self, seconds: float, began: float) -> None:
        """Sleep before the next try, unless the deadline comes first."""
        left = self.time_left()
        if left is not None and seconds >= left:
            raise DeadlineError(self.label, self._clock() - began)
        self._sleep(seconds)

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, json_body=body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)


class VendorApi:
    """A vendor's endpoints over one :class:`VendorClient`. A refused key (401/403) becomes a
    :class:`ConfigError` naming the setting that holds it — never the key — and deleting what is already
    gone (404) counts as deleted. Subclasses name the vendor and the setting, and add the endpoints."""

    label: str = "the vendor"
    """The vendor's name in messages (``VAPI``)."""
    key_setting: str = "ASSAY_<VENDOR>_API_KEY"

    def __init__(self, client: VendorClient):
        self.client = client
        client.label = self.label

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "VendorApi":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Any = None, params: Mapping[str, Any] | None = None, *,
              creates: bool = False, recover: Recover | None = None, where: str | None = None) -> Any:
        """One request; ``creates``, ``recover`` and ``where`` as for :meth:`VendorClient.request`."""
        try:
            return self.client.request(method, path, json_body=body, params=params, creates=creates, recover=recover,
                                       where=where)
        except PermanentVendorError as exc:
            if exc.status in (401, 403):
                raise ConfigError(f"{self.label} refused the key (HTTP {exc.status}: {exc.vendor_message}); "
                                  f"check {self.key_setting}") from None
            raise

    def _delete(self, path: str) -> None:
        try:
            self._call("DELETE", path)
        except PermanentVendorError as exc:
            if exc.status != 404:  # already gone counts as deleted
                raise


__all__ = ["TRANSIENT_STATUSES", "Recover", "RetryPolicy", "VendorApi", "VendorClient", "classify", "maybe_done",
           "parse_retry_after", "vendor_message"]
