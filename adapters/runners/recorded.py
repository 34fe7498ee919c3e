"""``recorded``: replay a call set (a file of recorded calls) as case runs and vendor evaluations.

The run target is ``{"call_set": {"path": "<absolute path>", "sha256": "<hex of its bytes>"}}``; the
file format is defined in :mod:`assay.core.callset`. Nothing is executed: each line becomes one case run
(``source_ref`` = its ``call_id``) and its evaluations become runner evaluations, kept on the vendor's
own scale and read as met + value by the one vendor mapping. The runner never maps them onto our
assertions and never decides pass or fail.

The file must still be the one that was loaded (its sha256 is checked), and it is validated whole
before the first report, so a bad line means nothing is reported at all.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from assay.core.errors import RunnerError
from assay.core.evidence import CaseRun, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.runner import CaseSpec, Heartbeat, Runner, RunJob

from .callset import file_sha256, load_call_set

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _call_set_target(job: RunJob) -> tuple[Path, str]:
    spec = job.target.get("call_set") if isinstance(job.target, dict) else None
    shape = '{"call_set": {"path": "<absolute path>", "sha256": "<64 hex digits>"}}'
    if job.target_kind != "call_set" or not isinstance(spec, dict):
        raise RunnerError(f"run {job.run_id}: runner 'recorded' replays a call set; expected the target {shape}")
    path, sha = spec.get("path"), spec.get("sha256")
    if not isinstance(path, str) or not Path(path).is_absolute():
        raise RunnerError(f"run {job.run_id}: target call_set.path must be an absolute file path, got {path!r}")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha.lower()):
        raise RunnerError(f"run {job.run_id}: target call_set.sha256 must be 64 hex digits, got {sha!r}")
    return Path(path), sha.lower()


def _same_file(path: Path, actual: str, expected: str) -> None:
    if actual != expected:
        raise RunnerError(
            f"call set {path} changed since it was loaded (sha256 is {actual}, the run expects {expected}); "
            "reload the bundle to replay the file as it is now"
        )


class RecordedRunner(Runner):
    """Replays recorded calls; evidence for transcript, timing, tool, vendor and rubric mechanisms."""

    name: ClassVar[str] = "recorded"
    # A call set's turns carry t and end_t (the recording's clock): every timing.* mechanism can read them.
    mechanisms: ClassVar[frozenset[str]] = mechanisms_of("transcript", "timing", "tool", "vendor", "rubric")
    synchronous: ClassVar[bool] = True
    repeats: ClassVar[bool] = False  # a recorded call happened once
    target_kinds: ClassVar[frozenset[str]] = frozenset({"call_set"})

    def execute(self, job: RunJob, heartbeat: Heartbeat) -> Iterator[Report]:
        import pyarrow as pa
        import pyarrow.compute as pc

        path, expected = _call_set_target(job)
        if not path.is_file():
            raise RunnerError(f"call set {path} does not exist (run {job.run_id}); reload the bundle that names it")
        before = path.stat()
        # The file is hashed while DuckDB parses it (both release the GIL); a changed file is refused
        # before anything is reported, and before any complaint about its lines.
        with ThreadPoolExecutor(max_workers=1) as pool:
            hashing = pool.submit(file_sha256, path)
            try:
                calls = load_call_set(path, {case.case_key: case.case_id for case in job.cases})
            except RunnerError:
                _same_file(path, hashing.result(), expected)
                raise
            actual = hashing.result()
        _same_file(path, actual, expected)
        after = path.stat()
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
            raise RunnerError(f"call set {path} changed while it was being read; reload the bundle and run again")
        heartbeat()

        case_runs, offsets = calls.case_runs, calls.evaluation_offsets
        covered = set(pc.unique(case_runs["case_id"]).to_pylist())
        missing = [
            CaseRun(
                case_id=case.case_id, status="error", error=f"no recorded call for case {case.case_key!r} in {path}"
            )
            for case in job.cases
            if case.case_id not in covered
        ]
        if missing:
            case_runs = pa.concat_tables([case_runs, Report.from_case_runs("", missing).case_runs])
            offsets = offsets + [offsets[-1]] * len(missing)

        meta = {"call_set": str(path), "sha256": actual, "providers": calls.providers}
        for batch_no, start in enumerate(range(0, case_runs.num_rows, self.batch_size)):
            stop = min(start + self.batch_size, case_runs.num_rows)
            yield Report(
                request_id=f"{job.run_id}:{self.name}:{batch_no}",
                case_runs=case_runs.slice(start, stop - start),
                evaluations=calls.evaluations.slice(offsets[start], offsets[stop] - offsets[start]),
                meta=dict(meta),
            )

    @classmethod
    def example_target(cls, workdir: Path, cases: Sequence[CaseSpec]) -> tuple[str, dict[str, Any]]:
        workdir.mkdir(parents=True, exist_ok=True)
        path = (workdir / "example-call-set.jsonl").resolve()
        lines = []
        for i, case in enumerate(cases):
            for n in range(2 if i == 0 else 1):
                lines.append(_example_call(f"call-{i:03d}-{n}", case.case_key, i + n))
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        return "call_set", {"call_set": {"path": str(path), "sha256": file_sha256(path)}}


_EXAMPLE_TURNS = (  # role, text, t, end_t
    ("agent", "Thanks for calling, how can I help?", 0.0, 2.1),
    ("caller", "My water heater is leaking. I'm at 60614.", 2.5, 5.2),
    ("agent", "Let me check that ZIP code for you.", 6.0, 7.9),
)


def _example_call(call_id: str, case_key: str, i: int) -> dict[str, Any]:
    tool = {"name": "check_service_area", "arguments": {"zip": "60614"}, "result": {"in_area": True}, "t": 7.1}
    return {
        "call_id": call_id, "case": case_key, "started_at": f"2026-11-20T15:{i % 60:02d}:05Z",
        "duration_ms": 61_000 + i, "cost_usd": 0.12,
        "transcript": [{"role": role, "text": text, "t": t, "end_t": end} for role, text, t, end in _EXAMPLE_TURNS],
        "tool_calls": [tool],
        "evaluations": [{"name": "greets_caller", "evaluator": "example:guardrail", "verdict": "pass"}],
        "provider": "example", "provider_ref": f"ex-{call_id}",
        "provider_payload": {"id": f"ex-{call_id}", "api_key": "not-a-real-key"},
    }  # fmt: skip
