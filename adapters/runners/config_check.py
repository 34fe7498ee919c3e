"""``config_check``: the runner that executes nothing.

Its run target is a compiled assistant config, ``{"config": {...}}``: the shape is
:class:`assay.core.compiled.CompiledConfig` (``name`` and ``prompt`` required; ``variables``, ``tools``
and ``first_message`` optional; other keys a compiler emits are kept as they are). For every case of
the job the runner reports one case run whose artefact is the config (secrets redacted), with an empty
transcript. It judges nothing: whether a clause survived or a variable resolves is for the
``structural.*`` mechanisms to say afterwards. A malformed config makes every case run an ERROR naming
the field (:func:`assay.core.compiled.config_problems`), never a FAIL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.compiled import config_problems
from assay.core.errors import RunnerError
from assay.core.evidence import CaseRun, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.redact import redact
from assay.core.runner import CaseSpec, Heartbeat, Runner, RunJob


class ConfigCheckRunner(Runner):
    """Reads a compiled assistant config; one case run per case, the config as its artefact."""

    name: ClassVar[str] = "config_check"
    mechanisms: ClassVar[frozenset[str]] = mechanisms_of("structural")
    synchronous: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config"})

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        if job.target_kind not in self.target_kinds:
            raise RunnerError(
                f"runner {self.name!r} reads a compiled config; run {job.run_id} targets a {job.target_kind!r}"
            )
        for batch_no, start in enumerate(range(0, len(job.cases), self.batch_size)):
            runs = [self._case_run(case, job.target) for case in job.cases[start : start + self.batch_size]]
            yield Report.from_case_runs(f"{job.run_id}:{self.name}:{batch_no}", runs)

    @staticmethod
    def _case_run(case: CaseSpec, target: Any) -> CaseRun:
        started_at = datetime.now(UTC)
        began = time.perf_counter()
        problems = config_problems(target)
        config = target.get("config") if isinstance(target, dict) else None
        artefact = redact(config) if isinstance(config, dict) else None
        return CaseRun(
            case_id=case.case_id,
            source_ref=case.source_ref,
            status="error" if problems else "executed",
            error=("compiled config is malformed: " + "; ".join(problems)) if problems else None,
            artefact=artefact,
            duration_ms=(time.perf_counter() - began) * 1000,
            started_at=started_at,
        )

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        config = {
            "name": "Example main line",
            "prompt": "You answer calls for {{business_name}}. Ask for the caller's ZIP code and check the "
            "service area with check_service_area before booking.",
            "variables": {"business_name": "Example Plumbing"},
            "tools": [{"name": "check_service_area", "description": "Is a ZIP code inside the service area?"}],
            "first_message": "Thanks for calling Example Plumbing.",
        }
        return "config", {"config": config}


__all__ = ["ConfigCheckRunner", "config_problems"]
