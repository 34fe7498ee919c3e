"""A re-score over 100 M atoms completes on this machine: ``lake.rescore_100m`` (see :mod:`.lake`).

Its own benchmark because its lake takes many minutes to write the first time (it is kept under
``bench/.work``), so ``python -m bench lake`` stays quick to repeat.
"""

from __future__ import annotations

from .common import Result
from .lake import rescore_100m


def run() -> list[Result]:
    return rescore_100m()
