"""Durations as a person reads them: ``23 ms``, ``1.2 s``, ``2 min 5 s``, ``3 h 12 min``.

The one way every command prints a duration (a case run's, a re-score's, a server's uptime), so the
same length of time never reads two ways. Machine-readable documents keep the exact numbers.
"""

from __future__ import annotations

_UNITS = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))


def human_duration(seconds: float) -> str:
    """``seconds`` at the precision a reader needs: under a millisecond to two significant figures, under
    a second in whole ms, under a minute in seconds to one decimal, else the two largest whole units
    (a second of them left out when nought: ``2 h``, not ``2 h 0 min``)."""
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative: {seconds} s")
    ms = seconds * 1000
    if ms < 1:
        return f"{ms:.2g} ms"
    if round(ms) < 1000:
        return f"{round(ms)} ms"
    if round(seconds, 1) < 60:
        return f"{round(seconds, 1):g} s"
    left, parts = round(seconds), []
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count or parts:
            parts.append(f"{count} {unit}")
    largest, *second = parts[:2]
    return " ".join([largest, *(p for p in second if not p.startswith("0 "))])


def human_ms(ms: float) -> str:
    """:func:`human_duration` of a duration given in milliseconds (as case runs record it)."""
    return human_duration(ms / 1000)


__all__ = ["human_duration", "human_ms"]
