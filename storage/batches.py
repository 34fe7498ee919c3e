"""Batches of runs sized by what they hold, for the passes that read atoms run by run (re-score, projection,
the re-score state's copy): memory follows the largest batch, not the suite."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["BATCH_CASE_RUNS", "packed"]

BATCH_CASE_RUNS = 250_000
"""Case runs per batch of a pass that reads atoms (a larger run is a batch of its own): what it holds at once."""


def packed(sizes: Iterable[tuple[str, int]], limit: int) -> list[list[str]]:
    """The ids of ``sizes`` ((id, size) pairs, in their order) in consecutive batches whose sizes add up to at
    most ``limit``; an id larger than ``limit`` is a batch of its own."""
    out: list[list[str]] = []
    held = 0
    for key, size in sizes:
        if not out or (out[-1] and held + size > limit):
            out.append([])
            held = 0
        out[-1].append(key)
        held += size
    return out
