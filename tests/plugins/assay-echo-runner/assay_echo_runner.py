"""``echo``: a third-party runner that says each case's situation back, as a one-turn transcript.

It stands for a vendor's runner shipped outside Assay: registered by its own distribution's entry
point (``echo = "assay_echo_runner:EchoRunner"`` in group ``assay.runners``), built only on the
public contract, with its one known gap declared where the conformance kit reads it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core import CaseRun, CaseSpec, Report, Runner, RunJob, Turn, mechanisms_of
from assay.core.runner import Heartbeat

__all__ = ["EchoRunner"]


class EchoRunner(Runner):
    """One case run per case: the agent's one turn is the case's situation, as canonical JSON."""

    name: ClassVar[str] = "echo"
    mechanisms: ClassVar[frozenset[str]] = mechanisms_of("transcript")
    synchronous: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})
    known_gaps: ClassVar[dict[str, str]] = {
        "test_duplicate_reports_change_nothing": (
            "echo names each report with a fresh id, so a retried execution is stored again "
            "instead of being recognised as a duplicate"
        ),
    }

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        for start in range(0, len(job.cases), self.batch_size):
            runs = [self._echo(case) for case in job.cases[start : start + self.batch_size]]
            yield Report.from_case_runs(f"{job.run_id}:{self.name}:{uuid.uuid4().hex}", runs)
            heartbeat()

    @staticmethod
    def _echo(case: CaseSpec) -> CaseRun:
        started_at, began = datetime.now(UTC), time.perf_counter()
        text = json.dumps(case.content.get("situation", {}), sort_keys=True)
        return CaseRun(
            case_id=case.case_id,
            transcript=[Turn(role="agent", text=text, t=0.0)],
            duration_ms=(time.perf_counter() - began) * 1000,
            started_at=started_at,
        )

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        return "config", {"config": {"name": "echo", "prompt": "Say the situation back."}}
