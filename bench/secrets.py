"""Secret redaction measured on the corpus: how many planted secrets, how many missed, how many false positives.

The corpus lives with the tests (``tests/core/secrets_corpus.py``) so the tests and this figure measure
the same thing; it is loaded by path because ``tests`` is not a package.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from .common import Result

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "core" / "secrets_corpus.py"


def corpus() -> tuple[list[Any], list[Any]]:
    """(planted, look-alikes) from the test corpus."""
    spec = importlib.util.spec_from_file_location("secrets_corpus", CORPUS)
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault("secrets_corpus", importlib.util.module_from_spec(spec))
    if not hasattr(module, "PLANTED"):
        spec.loader.exec_module(module)
    return module.PLANTED, module.LOOK_ALIKES


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
