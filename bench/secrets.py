"""Secret redaction measured on the corpus: how many planted secrets, how many missed, how many false positives.

The corpus lives with the tests (``tests/core/secrets_corpus.py``) so the tests and this figure measure
the same thing; it is loaded by path because ``tests`` is not a package.
"""

from __future__ import annotations

import json
from typing import Any

from .common import Result, load_corpus


def corpus() -> tuple[list[Any], list[Any]]:
    """(planted, look-alikes) from the test corpus."""
    return load_corpus("secrets_corpus")


def run() -> list[Result]:
    from assay.core.redact import redact

    planted, look_alikes = corpus()
    missed = sum(p.secret in json.dumps(redact(p.value), ensure_ascii=False) for p in planted)
    false_positives = sum(redact(v) != v for v in look_alikes)
    return [
        Result("secrets.planted", len(planted), "secrets", None, None, ">= 100", len(planted) >= 100,
               "across transcripts, tool calls, errors, payloads, rationales, world facts, configs"),
        Result("secrets.missed", missed, "secrets", None, None, "0", missed == 0),
        Result("secrets.false_positives", false_positives, "values", None, None, "<= 1", false_positives <= 1,
               f"of {len(look_alikes)} look-alikes (UUIDs, SHAs, base64 images, 'token' as a word, ...)"),
    ]
