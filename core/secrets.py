"""What a secret looks like: the key names and the text patterns :mod:`assay.core.redact` applies.

Two kinds of rule, because secrets reach us in two shapes:

- **Keys.** A mapping key names a secret when its last word (after splitting ``camelCase``, ``-``,
  ``_``, ``.`` and spaces) is one of :data:`SECRET_WORDS` (``accessToken``, ``client_secret``,
  ``x-api-key``, ``passwd``, ``Set-Cookie``), or it is one of the glued forms in :data:`SECRET_KEYS`
  (``apikey``), or ends in one (``PHPSESSID``, ``connect.sid``, ``sessionId``: a session cookie is a
  login, whoever holds it is signed in). ``session_id`` spelt with a separator is the exception: an agent
  harness and this project name a conversation's id so (an exam's source session), not a cookie. ``key`` alone, and ``<word>_key`` where the word says the key
  is an identifier (``case_key``, ``primary_key``, ``public_key``), are not secrets: this project names
  its own identifiers ``*_key``.
- **Text.** :data:`TEXT_RULES` find a secret *inside* free text (a transcript, an error, a log line):
  provider keys by their published prefixes, JWTs, ``Authorization``/``Cookie`` headers, ``Bearer``
  and ``Basic`` credentials, a URL's password, private-key blocks, ``mysql -p…``, password flags (a
  ``password``, ``token`` or ``secret`` option followed by its value), "the password is …" in prose, and
  ``name=value`` / ``name: value`` pairs whose name is a secret key (unless the value is a reference in
  code, ``os.environ["KEY"]``, ``${TOKEN}``, or a type, ``str``).
  Only the secret span is replaced, so the sentence stays readable.

The figures (planted, missed, false positives on a look-alike set) are in ``bench/secrets.py`` and
``docs/decisions/secret-redaction.md``; the corpus is ``tests/core/secrets_corpus.py``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

REDACTED = "[redacted]"

SECRET_WORDS: frozenset[str] = frozenset(
    {
        "key", "token", "secret", "password", "passwd", "pwd", "passphrase", "cookie", "authorization",
        "credential", "credentials", "apikey", "auth", "dsn",
    }
)  # fmt: skip
"""A key whose last word is one of these is secret (``openai_key``, ``refreshToken``, ``x-vapi-secret``)."""

SECRET_KEYS: frozenset[str] = frozenset(
    {
        "apikey", "api_key", "connectionstring", "privatekey", "accesskey", "pgpassword",
        "sessionid", "sessid", "phpsessid", "jsessionid", "connectsid",
    }
)  # fmt: skip
"""Glued keys that are secret as a whole or as the end of a key (compared in lower case, separators removed)."""

IDENTIFIER_PREFIXES: frozenset[str] = frozenset(
    {
        "public", "primary", "foreign", "sort", "partition", "idempotency", "cache", "case", "suite", "assertion",
        "consumer", "team", "dedup", "lookup", "row", "group", "object", "map", "dict", "hash", "join",
    }
)  # fmt: skip
"""``<word>_key`` with one of these words names an identifier, not a credential (``case_key``)."""

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def key_words(key: str) -> list[str]:
    """``"openaiAPIKey"`` -> ``["openai", "api", "key"]``: the words of a key in lower case."""
    return [w.lower() for part in _WORD_SPLIT.split(key) for w in _CAMEL.split(part) if w]


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a secret (see the module docstring)."""
    words = key_words(key)
    if not words:
        return False
    glued = next(("".join(words[i:]) for i in range(len(words)) if "".join(words[i:]) in SECRET_KEYS), None)
    if glued is not None:
        return glued != "sessionid" or "sessionid" in key.lower()  # ``session_id`` names a conversation
    last = words[-1]
    if last not in SECRET_WORDS:
        return False
    if last == "key":  # ``key`` alone is an identifier; so is ``case_key``
        return len(words) > 1 and words[-2] not in IDENTIFIER_PREFIXES
    return True


# --- text rules ----------------------------------------------------------------------------------

_TOKEN = r"[A-Za-z0-9\-._~+/]"


def _basic(match: re.Match[str]) -> str:
    """``Basic <base64>`` is a credential only when it decodes to ``user:password``; "basic understanding" is not."""
    try:
        decoded = base64.b64decode(match.group(2), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return match.group(0)
    return f"{match.group(1)} {REDACTED}" if ":" in decoded and decoded.isprintable() else match.group(0)


_SCHEMES = frozenset({"bearer", "basic", "digest", "token", "negotiate"})
"""Words after ``Authorization:`` that name the scheme; the credential after them is the secret."""


_CODE_REFERENCE = re.compile(
    r"\$[{(A-Za-z_]"  # a variable or a command's output: ${DB_PASSWORD}, $(cat .token), $TOKEN
    r"|[A-Za-z_][A-Za-z0-9_.]{2,}[(\[]"  # a call or an index: tokenize(text), os.environ["KEY"], Optional[str]
    r"|(?:[A-Za-z_]+\.)+[A-Za-z_]+$"  # a dotted name without digits: process.env.STRIPE_KEY, settings.PASSWORD
)
"""A value that names where a secret comes from in code, rather than being one."""

_TYPE_NAMES = frozenset({"str", "string", "bytes", "int", "bool", "none", "null", "nil", "undefined", "true", "false"})
"""Values that are a type annotation or a literal (``password: str``, ``token: string | null``), not a secret."""


def _named_value(match: re.Match[str]) -> str:
    """``name=value`` / ``"name": "value"``: the value goes when the name is a secret key, unless it is a
    reference in code (:data:`_CODE_REFERENCE`) or a type name (:data:`_TYPE_NAMES`)."""
    name, value = match.group("name"), match.group("value")
    if not is_secret_key(name) or value.startswith(REDACTED[:-1]) or len(value) < 3 or value.lower() in _SCHEMES:
        return match.group(0)
    if value.lower() in _TYPE_NAMES or _CODE_REFERENCE.match(value):
        return match.group(0)
    return match.group(0)[: match.start("value") - match.start(0)] + REDACTED


@dataclass(frozen=True)
class TextRule:
    """One kind of secret in free text."""

    name: str
    triggers: tuple[str, ...]
    """Lower-case words, one of which the (lower-cased) text must hold for the pattern to be tried: a
    cheap test that keeps the regular expressions off ordinary text."""
    pattern: re.Pattern[str]
    replacement: str | Callable[[re.Match[str]], str]
    """What replaces a match; it keeps the text around the secret (the header name, the scheme, the URL's user)."""


URL_PASSWORD = re.compile(r"(?<=://)([^\s/:@\"'<>]*):(?!\[redacted\])[^\s/@\"'<>]+@")
"""A URL's ``user:password@``; group 1 is the user, kept when the password is masked."""

_NAMED = (
    "key", "token", "secret", "passw", "pwd", "passphrase", "cookie", "authorization", "credential", "auth", "dsn",
    "sess", "connect.sid",
)  # fmt: skip

TEXT_RULES: tuple[TextRule, ...] = (
    TextRule("private key block", ("-----begin",), re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), REDACTED),
    TextRule("authorization header", ("authorization",), re.compile(
        r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"'`]?(?:(?:bearer|basic|digest|token|negotiate)\s+)?)"
        r"(?!\[redacted\])[^\s\"'`,;]+"), rf"\1{REDACTED}"),
    TextRule("cookie header", ("cookie",), re.compile(
        r"(?i)\b((?:set-)?cookie[\"']?\s*:\s*[\"']?)(?!\[redacted\])[^\r\n\"']+"), rf"\1{REDACTED}"),
    TextRule("bearer", ("bearer",), re.compile(
        rf"(?i)\b(bearer)\s+(?=\S*[\d\-._~+/=])(?!\[redacted\]){_TOKEN}{{8,}}=*"), rf"\1 {REDACTED}"),
    TextRule("basic", ("basic",), re.compile(r"(?i)\b(basic)\s+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])"), _basic),
    TextRule("url password", ("://",), URL_PASSWORD, rf"\1:{REDACTED}@"),
    TextRule("jwt", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), REDACTED),
    TextRule("openai/anthropic key", ("sk-",), re.compile(r"\bsk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"), REDACTED),
    TextRule("aws access key id", ("akia", "asia", "abia", "acca"), re.compile(
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), REDACTED),
    TextRule("aws secret access key", ("secret",), re.compile(
        r"(?i)(secret_?access_?key[\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])[A-Za-z0-9/+]{40}"), rf"\1{REDACTED}"),
    TextRule("gcp api key", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z\-_]{35}"), REDACTED),
    TextRule("azure key", ("accountkey", "sharedaccess"), re.compile(
        r"(?i)\b((?:AccountKey|SharedAccessKey|SharedAccessSignature)=)(?!\[redacted\])[^;\s\"']+"), rf"\1{REDACTED}"),
    TextRule("sas signature", ("sig=",), re.compile(r"([?&]sig=)(?!\[redacted\])[^&\s\"']+"), rf"\1{REDACTED}"),
    TextRule("slack token", ("xox",), re.compile(r"\bxox[bpars]-[A-Za-z0-9\-]{10,}"), REDACTED),
    TextRule("github token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), re.compile(
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), REDACTED),
    TextRule("stripe key", ("sk_", "rk_", "whsec_"), re.compile(
        r"\b(?:sk|rk|whsec)_(?:live|test)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}"), REDACTED),
    TextRule("mysql -p password", ("mysql", "mariadb"), re.compile(
        r"(?i)\b((?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;&]*?\s-p)([\"']?)"
        r"(?![$\[]|\[redacted\])[^\s\"']+"), rf"\1\2{REDACTED}"),
    TextRule("password flag", ("password", "passwd", "token", "secret", "api-key"), re.compile(
        r"(?i)(?<![\w-])(--(?:[a-z0-9]+-)*(?:password|passwd|token|secret|api-key)\s+[\"']?)"
        r"(?![$\-]|\[redacted\])[^\s\"']{3,}"), rf"\1{REDACTED}"),
    TextRule("password in prose", ("passw",), re.compile(
        r"(?i)\b(passw(?:or)?d\s+(?:is|was)\s+[\"'`]?)(?=[^\s\"'`]*\d)(?!\[redacted\])[^\s\"'`]{6,}"),
        rf"\1{REDACTED}"),
    TextRule("named value", _NAMED, re.compile(
        r"(?i)(?<![A-Za-z0-9_\-.])(?P<name>[A-Za-z0-9_\-.]*(?:key|token|secret|passw(?:or)?d|pwd|passphrase|cookie"
        r"|authorization|credentials?|auth|dsn|sess(?:ion)?_?id|connect\.sid))[\"']?\s*(?::(?!//)|=)\s*[\"']?"
        r"(?P<value>[^\s\"',;&}\]]+)"),
        _named_value),
)  # fmt: skip
"""The text rules, in the order they are applied."""

KEY_TRIGGERS: tuple[str, ...] = (*sorted(SECRET_WORDS), "connect", "sess")
"""Every secret key holds one of these in lower case (``connect`` for ``connection_string`` and ``connect.sid``,
``sess`` for ``session_id``)."""

SUSPECT_PATTERN = "|".join(
    re.escape(word) for word in sorted({*KEY_TRIGGERS, *(t for rule in TEXT_RULES for t in rule.triggers)})
) + r"|\\u|\\/"
"""A regular expression (use it case-insensitively) that matches the JSON text of every value that
:func:`assay.core.redact.redact` would change, derived from the rules' triggers. ``\\u`` and ``\\/``
are there because JSON may spell a character (a letter of a key, a URL's slash) as an escape."""


__all__ = [
    "KEY_TRIGGERS", "REDACTED", "SECRET_KEYS", "SECRET_WORDS", "SUSPECT_PATTERN", "TEXT_RULES", "URL_PASSWORD",
    "TextRule",
    "is_secret_key", "key_words",
]  # fmt: skip
