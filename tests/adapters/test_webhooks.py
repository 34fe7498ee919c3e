"""Webhook signatures: a good one is accepted and parsed; tampered, stale, missing or malformed ones are refused."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from assay.adapters.webhooks import (
    WebhookSignatureError,
    sign_elevenlabs,
    sign_vapi,
    verify_elevenlabs,
    verify_vapi,
)
from assay.core.errors import AssayError

SECRET = "wsec_0123456789abcdef"
BODY = json.dumps({"type": "post_call_transcription", "data": {"agent_id": "agent_1"}}).encode()
NOW = 1_800_000_000


def _independent_hmac(message: bytes) -> str:
    return hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()


# ------------------------------------------------------------------------------------------ ElevenLabs

def test_elevenlabs_good_signature_returns_the_parsed_body() -> None:
    header = f"t={NOW},v0={_independent_hmac(f'{NOW}.'.encode() + BODY)}"
    assert sign_elevenlabs(BODY, SECRET, NOW) == header
    assert verify_elevenlabs({"ElevenLabs-Signature": header}, BODY, SECRET, 1800, now=NOW + 60) == json.loads(BODY)
    # header names are case-insensitive, as HTTP says
    assert verify_elevenlabs({"elevenlabs-signature": header}, BODY, SECRET, 1800, now=NOW)["data"]["agent_id"] == "agent_1"


@pytest.mark.parametrize("tamper", ["body", "secret", "timestamp"])
def test_elevenlabs_tampered_requests_are_refused(tamper: str) -> None:
    header = sign_elevenlabs(BODY, SECRET, NOW)
    body, secret = BODY, SECRET
    if tamper == "body":
        body = BODY.replace(b"agent_1", b"agent_2")
    elif tamper == "secret":
        secret = "another-secret"
    else:
        header = header.replace(f"t={NOW}", f"t={NOW + 5}")
    with pytest.raises(WebhookSignatureError, match="does not match") as info:
        verify_elevenlabs({"ElevenLabs-Signature": header}, body, secret, 1800, now=NOW)
    assert SECRET not in str(info.value) and header.split("v0=")[1] not in str(info.value)
    assert isinstance(info.value, AssayError) and isinstance(info.value, ValueError)


def test_elevenlabs_stale_signature_is_refused_even_when_it_matches() -> None:
    header = sign_elevenlabs(BODY, SECRET, NOW)
    assert verify_elevenlabs({"ElevenLabs-Signature": header}, BODY, SECRET, 1800, now=NOW + 1799)
    with pytest.raises(WebhookSignatureError, match=r"1801s old; at most 1800s"):
        verify_elevenlabs({"ElevenLabs-Signature": header}, BODY, SECRET, 1800, now=NOW + 1801)
    with pytest.raises(WebhookSignatureError, match="in the future"):
        verify_elevenlabs({"ElevenLabs-Signature": header}, BODY, SECRET, 1800, now=NOW - 4000)


@pytest.mark.parametrize(
    "headers,match",
    [
        ({}, "no ElevenLabs-Signature header"),
        ({"ElevenLabs-Signature": ""}, "no ElevenLabs-Signature header"),
        ({"ElevenLabs-Signature": "v0=abcdef"}, "malformed"),
        ({"ElevenLabs-Signature": f"t={NOW}"}, "malformed"),
        ({"ElevenLabs-Signature": "t=yesterday,v0=abcdef"}, "malformed"),
    ],
)
def test_elevenlabs_missing_or_malformed_header_is_refused(headers: dict[str, str], match: str) -> None:
    with pytest.raises(WebhookSignatureError, match=match):
        verify_elevenlabs(headers, BODY, SECRET, 1800, now=NOW)


def test_elevenlabs_signed_body_that_is_not_json_is_refused() -> None:
    body = b"not json"
    with pytest.raises(WebhookSignatureError, match="not JSON"):
        verify_elevenlabs({"ElevenLabs-Signature": sign_elevenlabs(body, SECRET, NOW)}, body, SECRET, 1800, now=NOW)


# ------------------------------------------------------------------------------------------ VAPI

def test_vapi_hmac_good_signature_seconds_or_milliseconds() -> None:
    for stamp, now in ((NOW, NOW + 10), (NOW * 1000, NOW + 10)):
        signature = sign_vapi(BODY, SECRET, stamp)
        assert signature == _independent_hmac(f"{stamp}.".encode() + BODY)
        headers = {"x-signature": signature, "x-timestamp": str(stamp)}
        assert verify_vapi(headers, BODY, SECRET, 1800, now=now) == json.loads(BODY)


def test_vapi_hmac_tampered_stale_and_missing_timestamp_are_refused() -> None:
    headers = {"x-signature": sign_vapi(BODY, SECRET, NOW), "x-timestamp": str(NOW)}
    with pytest.raises(WebhookSignatureError, match="does not match"):
        verify_vapi(headers, BODY + b" ", SECRET, 1800, now=NOW)
    with pytest.raises(WebhookSignatureError, match="old"):
        verify_vapi(headers, BODY, SECRET, 1800, now=NOW + 3600)
    with pytest.raises(WebhookSignatureError, match="x-timestamp"):
        verify_vapi({"x-signature": headers["x-signature"]}, BODY, SECRET, 1800, now=NOW)


def test_vapi_shared_secret_header() -> None:
    assert verify_vapi({"X-Vapi-Secret": SECRET}, BODY, SECRET, now=NOW) == json.loads(BODY)
    with pytest.raises(WebhookSignatureError, match="does not match") as info:
        verify_vapi({"X-Vapi-Secret": SECRET + "x"}, BODY, SECRET, now=NOW)
    assert SECRET not in str(info.value)
    with pytest.raises(WebhookSignatureError, match="neither x-signature"):
        verify_vapi({}, BODY, SECRET, now=NOW)
