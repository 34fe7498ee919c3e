"""Secrets never reach the lake: redact() replaces them in a copy and leaves everything else alone."""

from __future__ import annotations

import copy
import json
import re

import pytest

from assay.core.redact import REDACTED, SUSPECT_PATTERN, redact

SECRET_KEYS = [
    "authorization", "Authorization", "api_key", "API_KEY", "apikey", "ApiKey", "api-key", "token", "Token",
    "secret", "password", "X-Vapi-Secret", "xi-api-key", "openai_key", "refresh_token", "Stripe_Secret_Key",
    "x-api-key",
]  # fmt: skip
PLAIN_KEYS = ["name", "tokens_used", "keyboard", "monkey", "secretary_name", "passwords_reset_count", "id"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_keys_are_redacted_case_insensitively(key: str) -> None:
    assert redact({key: "s3cr3t-value", "other": 1}) == {key: REDACTED, "other": 1}


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_other_keys_are_kept(key: str) -> None:
    assert redact({key: "value"}) == {key: "value"}


def test_nested_values_are_redacted_and_the_original_is_untouched() -> None:
    payload = {
        "call": {"id": "tcr_1", "headers": [{"Authorization": "Basic abc"}, {"Accept": "json"}]},
        "credentials": {"api_key": {"live": "k1", "test": "k2"}},
        "steps": [[{"token": "t"}], "plain"],
        "count": 3,
        "ok": True,
        "missing": None,
    }
    before = copy.deepcopy(payload)
    out = redact(payload)
    assert out == {
        "call": {"id": "tcr_1", "headers": [{"Authorization": REDACTED}, {"Accept": "json"}]},
        "credentials": REDACTED,
        "steps": [[{"token": REDACTED}], "plain"],
        "count": 3,
        "ok": True,
        "missing": None,
    }
    assert payload == before
    out["call"]["headers"][1]["Accept"] = "changed"
    assert payload["call"]["headers"][1]["Accept"] == "json"  # a copy, not a view


def test_bearer_tokens_are_redacted_wherever_they_sit_and_the_text_around_them_kept() -> None:
    out = redact({"header": "Bearer eyJhbGciOiJIUzI1NiJ9.abc", "log": ["sent Authorization: bearer sk-live-12345678"]})
    assert out == {"header": f"Bearer {REDACTED}", "log": [f"sent Authorization: bearer {REDACTED}"]}
    assert redact("the bearer of bad news") == "the bearer of bad news"


def test_a_null_secret_stays_null_and_tuples_become_lists() -> None:
    out = redact({"password": None, "pair": (1, {"token": "x"})})
    assert out == {"password": None, "pair": [1, {"token": REDACTED}]}


SAMPLES = [
    {"a": 1},
    {"headers": {"X-Api-Key": "k"}},
    {"nested": [{"client_secret": "x"}]},
    {"note": "Bearer abcdefghijkl"},
    {"refresh_token": 5},
    {"ok": "plain text"},
    {"tokens_used": 10},
]


@pytest.mark.parametrize("value", SAMPLES)
def test_the_suspect_pattern_matches_every_value_redact_would_change(value: dict) -> None:
    """Bulk callers skip rows the pattern does not match, so it must never miss a secret."""
    for text in (json.dumps(value), json.dumps(value, separators=(",", ":"))):
        if redact(value) != value:
            assert re.search(SUSPECT_PATTERN, text, re.IGNORECASE), text
