"""Signed webhooks: proving a vendor's callback came from the vendor before a byte of it is trusted.

A webhook is a POST from the internet to us; anyone who learns the URL can send one. Both vendors that
call back sign the raw body with a secret shared at setup, so the check is done on the **raw bytes as
received** (re-serialising parsed JSON changes them), in constant time, and the body is parsed only
once the signature holds:

- ElevenLabs (post-call webhooks): ``ElevenLabs-Signature: t=<unix seconds>,v0=<hex HMAC-SHA256(secret,
  "<t>.<raw body>")>``. A timestamp older than the tolerance (ElevenLabs documents 30 minutes) is
  refused, so a captured request cannot be replayed later.
- VAPI (server messages): either ``x-signature`` = hex HMAC-SHA256(secret, ``"<x-timestamp>.<raw body>"``)
  with ``x-timestamp`` (milliseconds or seconds since the epoch) within the tolerance, or the older
  shared-secret header ``X-Vapi-Secret`` equal to the secret.

A refusal raises :class:`WebhookSignatureError`, whose message says which header is missing or wrong
and never repeats the secret or the signature.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from assay.core.errors import AssayError


class WebhookSignatureError(AssayError, ValueError):
    """A webhook's signature is missing, malformed, wrong or too old: the request must be refused (HTTP 401)."""

    def __init__(self, vendor: str, reason: str):
        self.vendor, self.reason = vendor, reason
        super().__init__(f"{vendor} webhook refused: {reason}")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def _hmac_hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _check_age(vendor: str, sent_at: float, tolerance_seconds: float, now: float | None) -> None:
    now = time.time() if now is None else now
    age = now - sent_at
    if age > tolerance_seconds:
        raise WebhookSignatureError(vendor, f"the signature is {age:.0f}s old; at most {tolerance_seconds:.0f}s "
                                            "is accepted (a replay, or a clock out of step)")
    if age < -tolerance_seconds:
        raise WebhookSignatureError(vendor, f"the signature is dated {-age:.0f}s in the future; "
                                            "check the clocks of both sides")


def _parse(vendor: str, body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise WebhookSignatureError(vendor, "the signature holds but the body is not JSON") from None


def sign_elevenlabs(body: bytes, secret: str, timestamp: int) -> str:
    """The ``ElevenLabs-Signature`` header value for ``body`` at ``timestamp`` (for fakes and tests)."""
    return f"t={timestamp},v0={_hmac_hex(secret, f'{timestamp}.'.encode() + body)}"


def verify_elevenlabs(headers: Mapping[str, str], body: bytes, secret: str, tolerance_seconds: float = 1800.0,
                      now: float | None = None) -> Any:
    """The parsed JSON body of an ElevenLabs webhook whose ``ElevenLabs-Signature`` holds; else raises."""
    vendor = "elevenlabs"
    header = _header(headers, "ElevenLabs-Signature")
    if not header:
        raise WebhookSignatureError(vendor, "no ElevenLabs-Signature header; expected 't=<unix>,v0=<hex>'")
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(key, []).append(value)
    timestamps, signatures = parts.get("t", []), parts.get("v0", [])
    if len(timestamps) != 1 or not signatures or not timestamps[0].isdigit():
        raise WebhookSignatureError(vendor, "the ElevenLabs-Signature header is malformed; expected "
                                            "'t=<unix seconds>,v0=<hex HMAC-SHA256>'")
    expected = _hmac_hex(secret, f"{timestamps[0]}.".encode() + body)
    if not any(hmac.compare_digest(expected, s.strip().lower()) for s in signatures):
        raise WebhookSignatureError(vendor, "the signature does not match the body (a wrong secret, or a body "
                                            "changed on the way)")
    _check_age(vendor, float(timestamps[0]), tolerance_seconds, now)
    return _parse(vendor, body)


def sign_vapi(body: bytes, secret: str, timestamp: int) -> str:
    """The ``x-signature`` header value for ``body`` sent with ``x-timestamp: <timestamp>`` (for fakes and tests)."""
    return _hmac_hex(secret, f"{timestamp}.".encode() + body)


def verify_vapi(headers: Mapping[str, str], body: bytes, secret: str, tolerance_seconds: float = 1800.0,
                now: float | None = None) -> Any:
    """The parsed JSON body of a VAPI server message signed with ``x-signature`` (HMAC) or carrying
    ``X-Vapi-Secret``; else raises. The HMAC form is preferred when both are present."""
    vendor = "vapi"
    signature = _header(headers, "x-signature")
    if signature is not None:
        stamp = _header(headers, "x-timestamp")
        if not stamp or not stamp.strip().isdigit():
            raise WebhookSignatureError(vendor, "x-signature without a numeric x-timestamp header")
        expected = _hmac_hex(secret, f"{stamp.strip()}.".encode() + body)
        if not hmac.compare_digest(expected, signature.strip().lower().removeprefix("sha256=")):
            raise WebhookSignatureError(vendor, "the x-signature does not match the body (a wrong secret, or a "
                                                "body changed on the way)")
        sent_at = float(stamp)
        _check_age(vendor, sent_at / 1000 if sent_at > 1e11 else sent_at, tolerance_seconds, now)
        return _parse(vendor, body)
    shared = _header(headers, "x-vapi-secret")
    if shared is None:
        raise WebhookSignatureError(vendor, "neither x-signature (with x-timestamp) nor X-Vapi-Secret is present")
    if not hmac.compare_digest(shared.encode(), secret.encode()):
        raise WebhookSignatureError(vendor, "X-Vapi-Secret does not match the configured secret")
    return _parse(vendor, body)


__all__ = ["WebhookSignatureError", "sign_elevenlabs", "sign_vapi", "verify_elevenlabs", "verify_vapi"]
