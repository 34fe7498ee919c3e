"""Unknown names: the nearest known ones and a short list of what is known.

Every lookup by name (a suite, a team, a consumer, a runner, a kind of thing to list) says the same
two things when the name is not there: what it probably meant and what exists.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

SHOWN = 8
"""At most this many known names are listed; the rest are counted ("and 3 more")."""


def _score(name: str, known: str) -> float:
    """How alike two names are (0..1); a ``team/suite`` name is also compared by its last part."""
    parts = {known, known.rsplit("/", 1)[-1]} if "/" not in name else {known}
    return max(difflib.SequenceMatcher(None, name, part).ratio() for part in parts)


def nearest(name: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The known names closest to ``name``, closest first: those scoring at least ``cutoff`` and within
    0.1 of the best, and those that start with ``name``; failing these, those that share a word with it
    (``ci-gate``: ``blueprint_ci``, ``publish_gate``). None when nothing is close."""
    names = list(dict.fromkeys(known))
    scored = sorted(((_score(name, k), k) for k in names), key=lambda p: -p[0])
    best = scored[0][0] if scored else 0.0
    close = [k for score, k in scored if score >= cutoff and score >= best - 0.1]
    if name:
        close += [k for k in names if k not in close and k.startswith(name)]
    if name and not close:
        words = _words(name)
        close = [k for k in names if words & _words(k)]
    return close[:n]


def _words(name: str) -> set[str]:
    """The words of an identifier (``ci-gate``: ci, gate), two letters or more."""
    return {w for w in re.split(r"[-_/.\s]+", name.lower()) if len(w) >= 2}


def listed(names: Iterable[str], limit: int = SHOWN) -> str:
    """``a, b, c`` or ``a, b, c and 4 more``; ``none`` when empty."""
    names = list(dict.fromkeys(names))
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")

