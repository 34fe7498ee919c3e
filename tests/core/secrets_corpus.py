"""A corpus of planted secrets and of ordinary text that merely looks like one.

:data:`PLANTED` places credentials in every field that enters the record (keys of mappings at any
depth, free text, URLs, headers, tool arguments and results, transcripts, world facts, configs,
errors, rationales, provider payloads), each with the exact secret string that must not survive
redaction. :data:`LOOK_ALIKES` are values that resemble a credential but are not one (UUIDs, git
SHAs, base64 images, ``sk-`` in prose, "token" as a word, hex colours, ZIP codes): redaction should
leave them alone, and every change it makes to one is counted as a false positive.

The secrets are made up, built from a seeded generator so the corpus is the same on every run and no
real-looking key is committed verbatim. Used by ``tests/core/test_secret_rules.py`` and ``bench/secrets.py``.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass
from typing import Any

_rng = random.Random(20261130)
_ALNUM = string.ascii_letters + string.digits


def _s(n: int, alphabet: str = _ALNUM) -> str:
    body = "".join(_rng.choice(alphabet) for _ in range(n))
    return body[:-1] + _rng.choice(string.digits)  # at least one digit, as real keys have


@dataclass(frozen=True)
class Planted:
    """One secret placed in a value of one field."""

    field: str
    """Where it sits: transcript, tool_arguments, tool_result, error, artefact, provider_payload,
    rationale, raw, world, config, meta."""
    value: Any
    """The JSON value holding it."""
    secret: str
    """The exact text that must not survive redaction."""


def _key_formats() -> list[tuple[str, str]]:
    """(format, secret) pairs: the common credential formats, each made up."""
    upper = string.ascii_uppercase + string.digits
    return [
        ("openai", "sk-" + _s(48)),
        ("openai project", "sk-proj-" + _s(64, _ALNUM + "_-")),
        ("anthropic", "sk-ant-api03-" + _s(80, _ALNUM + "_-")),
        ("aws access key id", "AKIA" + _s(16, upper)),
        ("aws session key id", "ASIA" + _s(16, upper)),
        ("gcp api key", "AIza" + _s(35, _ALNUM + "-_")),
        ("slack bot", "xoxb-" + _s(12, string.digits) + "-" + _s(24)),
        ("slack user", "xoxp-" + _s(12, string.digits) + "-" + _s(24)),
        ("github classic", "ghp_" + _s(36)),
        ("github fine-grained", "github_pat_" + _s(22) + "_" + _s(59)),
        ("github app", "ghs_" + _s(36)),
        ("stripe secret", "sk_live_" + _s(24)),
        ("stripe restricted", "rk_live_" + _s(24)),
        ("stripe test", "sk_test_" + _s(24)),
        ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + _s(20) + "." + _s(43, _ALNUM + "_-")),
    ]


KEY_FORMATS = _key_formats()

_PRIVATE_KEY = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _s(64) + "\n" + _s(64) + "\n-----END PRIVATE KEY-----\n"
)
_RSA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + _s(60) + "\n-----END RSA PRIVATE KEY-----"
_AWS_SECRET = _s(40, _ALNUM + "/+")
_AZURE_KEY = _s(86) + "=="


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def _planted() -> list[Planted]:
    p: list[Planted] = []
    # Every provider format in free text of several fields.
    for name, key in KEY_FORMATS:
        p.append(Planted("transcript", f"Sure, my {name} credential is {key}, can you check it?", key))
        p.append(Planted("error", f"vendor said 401: invalid credential {key} (request req_123)", key))
        p.append(Planted("tool_result", {"output": f"found config line KEY={key} in .env", "ok": True}, key))
        p.append(Planted("provider_payload", {"messages": [{"content": f"use {key} for the call"}]}, key))
    # Secret-like keys in any casing, at any depth.
    keyed = [
        "accessToken", "refresh_token", "privateKey", "clientSecret", "openaiKey", "passwd", "cookie", "x-api-key",
        "Authorization", "API_KEY", "apiKey", "client-secret", "X-Vapi-Secret", "xi-api-key", "sessionToken",
        "id_token", "OPENAI_API_KEY", "stripeSecretKey", "db.password", "Set-Cookie", "aws_secret_access_key",
        "webhookSecret", "pwd", "passphrase", "credentials", "connectionString", "dsn", "AUTH_TOKEN",
    ]  # fmt: skip
    for depth, key in enumerate(keyed):
        secret = "v" + _s(14)
        value: Any = {key: secret, "note": "plain"}
        for level in range(depth % 4):
            value = {f"level{level}": [value]}
        p.append(Planted("artefact" if depth % 2 else "raw", value, secret))
    # Tool-call arguments under secret keys and in plain ones.
    for i in range(6):
        secret = "sk-" + _s(40)
        p.append(Planted("tool_arguments", {"api_key": secret} if i % 2 else {"query": f"call with {secret}"}, secret))
    # Headers and credentials in free text.
    for i in range(5):
        token = _s(32)
        p.append(Planted("transcript", f"I sent Authorization: Bearer {token} and it failed", token))
        user_pass = _basic(f"user{i}", "pw" + _s(10))
        p.append(Planted("error", f"GET /v1 with Authorization: Basic {user_pass} -> 403", user_pass))
        p.append(Planted("rationale", f"The agent read out the header 'basic {user_pass}' to the caller.", user_pass))
        cookie = _s(24)
        p.append(Planted("provider_payload", {"log": f"Cookie: session={cookie}; theme=dark"}, cookie))
    # URL userinfo.
    for scheme in ("postgresql", "postgresql+psycopg", "mysql", "redis", "amqp", "https", "mongodb+srv"):
        password = "Pw" + _s(12)
        p.append(Planted("config", {"server": {"url": f"{scheme}://svc_user:{password}@db.internal:5432/app"}},
                         password))
    # Private keys, AWS and Azure.
    p.append(Planted("world", {"service_account": {"type": "service_account", "private_key": _PRIVATE_KEY}},
                     _PRIVATE_KEY.splitlines()[1]))
    p.append(Planted("tool_result", f"here is the key:\n{_RSA_KEY}\nkeep it safe", _RSA_KEY.splitlines()[1]))
    p.append(Planted("error", f"boto: aws_secret_access_key={_AWS_SECRET} rejected", _AWS_SECRET))
    p.append(Planted("transcript", f'config says "SecretAccessKey": "{_AWS_SECRET}"', _AWS_SECRET))
    azure = f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={_AZURE_KEY};EndpointSuffix=core.windows.net"
    p.append(Planted("config", {"storage": azure}, _AZURE_KEY))
    sas = _s(43) + "%3D"
    p.append(Planted("tool_arguments", {"url": f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig={sas}"}, sas))
    # Name=value pairs in free text and query strings; world facts; config prompts.
    for name in ("password", "api_key", "client_secret", "access_token", "refreshToken"):
        secret = _s(18)
        p.append(Planted("transcript", f"The caller read out {name}={secret} over the phone.", secret))
        p.append(Planted("tool_arguments", {"url": f"https://api.example.invalid/v1/items?{name}={secret}&limit=5"},
                         secret))
    for i in range(4):
        secret = "sk-" + _s(48)
        p.append(Planted("world", {"account": {"notes": [f"backup key {secret}"], "plan": "pro"}}, secret))
        p.append(Planted("config", {"prompt": f"You are a helpful agent. Internal key: {secret}."}, secret))
    return p


PLANTED: list[Planted] = _planted()

_PNG = base64.b64encode(bytes(range(256)) * 3).decode()
LOOK_ALIKES: list[Any] = [
    "case 123e4567-e89b-12d3-a456-426614174000 ran twice",
    {"run_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "case_key": "booking", "suite_key": "main"},
    "fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (short 9fceb02)",
    {"sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    f"data:image/png;base64,{_PNG}",
    {"image": _PNG[:200]},
    "We use sk-learn style estimators; see the sk- prefix discussion.",
    "Each token costs a fraction of a cent, and the tokens add up.",
    {"tokens_in": 1200, "tokens_out": 300, "max_tokens": 4096, "token_count": 17},
    "The agent should never say the word token or password to the caller.",
    "Brand colours: #ff00aa, #1A2B3C and #000.",
    {"zip": "94103", "postcode": "SW1A 1AA", "phone": "+1 415 555 0100"},
    "The bearer of this letter is our plumber.",
    "A basic understanding of billing is required.",
    "Please describe the Authorization process for refunds",
    {"key": "booking-confirmation", "keyboard": "qwerty", "monkey": "business"},
    {"primary_key": "case_id", "assertion_key": "greets", "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5"},
    "Open https://docs.example.invalid/guide?page=2&sort=asc for details.",
    "Mail support@example.invalid or call between 9:00 and 17:00.",
    {"secretary_name": "Ann", "passwords_reset_count": 2, "auth_method": "oauth"},
    "Version v2.3.1-rc.4+build.567, build id 20261130T120000Z.",
    "AKIA is not a key by itself, nor is ASIA in a sentence about Asia.",
    {"sentence": "The key to success is preparation.", "idea": "key: keep it simple"},
    "ticket JIRA-12345, order #A1B2C3D4E5, invoice INV-2026-0042",
    {"ssh_fingerprint": "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"},
    "The eye-catching eyJ prefix is typical of JWTs, but this sentence has none.",
    {"hash": "$argon2id$v=19$m=65536,t=3,p=4"},
    "Set the timeout: 30 seconds; retries = 3.",
    {"url": "postgresql://db.internal:5432/app", "docs": "https://user@example.invalid/path"},
    "She said: 'my password is something I never share'.",
    # Known false positives, kept so the count stays honest: a pagination cursor and an auth mode
    # sit under secret-looking keys, and key names alone cannot tell them from credentials.
    {"next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA3", "auth": "none"},
]
"""Ordinary values that resemble credentials; redaction should change none of them."""


__all__ = ["KEY_FORMATS", "LOOK_ALIKES", "PLANTED", "Planted"]
