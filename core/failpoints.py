"""Failpoints: named steps where a test can make this process die, to prove an invariant survives a crash.

``ASSAY_FAILPOINTS`` (set only by tests) is a comma-separated list of step names. When a process
reaches a listed step, :func:`failpoint` kills it with SIGKILL at once: no ``finally``, no rollback
by Python, no flush, exactly as a machine that loses power or an OOM kill would. Recovery (the reaper,
the vacuum) and a check of the invariant follow in the test. In production the variable is unset and
each call is a dictionary lookup.

The steps, in the order a piece of evidence passes them:

- ``report.staged``: a report's files are written, its catalog transaction has not begun;
- ``report.recorded``: the report's rows and manifest entries are inserted, not committed;
- ``judge.staged`` / ``judge.recorded``: the same two points of a judging pass (outcomes and atoms);
- ``rescore.staged``: materialised verdicts are written, not recorded;
- ``projection.staged`` / ``projection.recorded``: a projection pass's new files, before and inside the
  transaction that swaps them in and moves its mark;
- ``compact.staged`` / ``compact.recorded``: a compaction's new files, before and inside its swap;
- ``vacuum.forgotten``: retired files are dropped from the manifest, not yet deleted;
- ``load.written``: a bundle's rows are inserted, its transaction not committed;
- ``legacy.staged`` / ``legacy.recorded``: a legacy import's files are written, its transaction has not
  begun / its rows and manifest entries are inserted, not committed;
- ``finalise.judged``: a run is judged (its outcomes committed), not yet finalised;
- ``rejudge.run_committed``: a re-judge's pass over one run is committed, the suite's other runs not yet judged;
- ``scratch.intended`` / ``scratch.created``: a runner's scratch object is named in the catalog, not yet
  created at the vendor / created at the vendor, its id not yet recorded.
"""

from __future__ import annotations

import os
import signal

ENV = "ASSAY_FAILPOINTS"

STEPS: tuple[str, ...] = (
    "report.staged", "report.recorded", "judge.staged", "judge.recorded", "rescore.staged",
    "compact.staged", "compact.recorded", "vacuum.forgotten", "scratch.intended", "scratch.created",
    "load.written", "finalise.judged", "projection.staged", "projection.recorded", "legacy.staged", "legacy.recorded",
    "rejudge.run_committed",
)
"""Every named step; a test that names another is refused."""


def failpoint(step: str) -> None:
    """Die here (SIGKILL) if ``ASSAY_FAILPOINTS`` names ``step``."""
    armed = os.environ.get(ENV)
    if not armed:
        return
    names = {name.strip() for name in armed.split(",") if name.strip()}
    unknown = names - set(STEPS)
    if unknown:
        raise ValueError(f"{ENV} names unknown step(s) {sorted(unknown)}; known: {', '.join(STEPS)}")
    if step in names:
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["ENV", "STEPS", "failpoint"]
