"""``fixed``: a runner that returns fixed verdicts and executes nothing.

It exists to prove the runner contract without touching any other runner: every case gets one case run
(executed, empty transcript, no artefact) carrying one runner evaluation named ``fixed`` with the
configured verdict (and score). It accepts any run target and ignores it. Its evaluations are
evidence like a vendor's: whether they satisfy an assertion is for ``vendor.evaluation`` to say.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from assay.core.errors import RunnerError
from assay.core.evidence import VERDICTS, CaseRun, Evaluation, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.runner import CaseSpec, Heartbeat, Runner, RunJob


class FixedRunner(Runner):
    """Reports ``verdict`` (or ``verdicts[case_key]``) for every case, with an optional ``score``."""

    name: ClassVar[str] = "fixed"
    mechanisms: ClassVar[frozenset[str]] = mechanisms_of("vendor")
    synchronous: ClassVar[bool] = True
    target_kinds: ClassVar[frozenset[str]] = frozenset({"config", "call_set"})

    def __init__(self, verdict: str = "pass", verdicts: dict[str, str] | None = None, score: float | None = None):
        self.verdict = verdict
        self.verdicts = dict(verdicts or {})
        self.score = score
        for where, value in [("verdict", verdict), *((f"verdicts[{k!r}]", v) for k, v in self.verdicts.items())]:
            if value not in VERDICTS:
                raise ValueError(f"fixed runner: {where} is {value!r}; use one of {', '.join(VERDICTS)}")

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        unknown = sorted(set(self.verdicts) - set(job.case_by_key()))
        if unknown:
            raise RunnerError(
                f"fixed runner: verdicts name case keys that are not in run {job.run_id}: {', '.join(unknown)}; "
                f"the run's cases are: {', '.join(sorted(job.case_by_key())) or 'none'}"
            )
        for batch_no, start in enumerate(range(0, len(job.cases), self.batch_size)):
            runs = [
                CaseRun(
                    case_id=case.case_id,
                    source_ref=case.source_ref,
                    evaluations=[
                        Evaluation(
                            name="fixed",
                            evaluator="fixed",
                            verdict=self.verdicts.get(case.case_key, self.verdict),  # type: ignore[arg-type]
                            score=self.score,
                        )
                    ],
                )
                for case in job.cases[start : start + self.batch_size]
            ]
            yield Report.from_case_runs(f"{job.run_id}:{self.name}:{batch_no}", runs)

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        return "config", {"config": {"name": "fixed example", "prompt": "Nothing runs; the verdicts are fixed."}}
