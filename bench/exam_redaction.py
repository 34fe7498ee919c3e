"""Redaction of what an exam directory holds, measured on the exam corpus: planted secrets that survive
``assay export``'s redaction, and ordinary code it changes.

The corpus lives with the tests (``tests/core/exam_secrets_corpus.py``) so the tests and these figures
measure the same thing; it is loaded by path because ``tests`` is not a package. Each entry goes through
the function export applies to a file of its kind: a patch as a diff, an instruction or a script line by line.
"""

from __future__ import annotations

from typing import Any

from .common import Result, load_corpus

MAX_FALSE_POSITIVE_SHARE = 0.05


def corpus() -> tuple[list[Any], list[Any]]:
    """(planted, look-alikes) from the exam corpus."""
    return load_corpus("exam_secrets_corpus")


def run() -> list[Result]:
    from assay.flows.exam_export import redact_lines

    planted, look_alikes = corpus()
    missed = sum(p.secret in redact_lines(p.text, patch=p.kind == "patch")[0] for p in planted)
    changed = sum(redact_lines(a.text, patch=a.kind == "patch")[0] != a.text for a in look_alikes)
    allowed = int(MAX_FALSE_POSITIVE_SHARE * len(look_alikes))
    return [
        Result("exams.redaction_missed", missed, "secrets", None, None, "0", missed == 0,
               f"of {len(planted)} planted in .env, config.py, settings.js, application.yml, docker-compose.yml "
               "diffs, instructions and shell commands"),
        Result("exams.redaction_false_positives", changed, "look-alikes", None, None,
               f"<= {allowed} (5% of {len(look_alikes)})", changed <= allowed,
               f"{changed} of {len(look_alikes)} look-alikes changed (lockfile hashes, SHAs, UUIDs, base64 fixtures, "
               "tokenize(), os.environ references, type annotations, -p flags)"),
    ]
