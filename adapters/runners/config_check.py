"""``config_check``: the runner that executes nothing.

Its run target is a compiled assistant config, ``{"config": {...}}``::

    {"name": "Acme main line",
     "prompt": "You are the receptionist for {{business_name}} ...",
     "variables": {"business_name": "Acme Plumbing & Heating"},
     "tools": [{"name": "check_service_area", "description": "...", ...}],
     "first_message": "Thanks for calling ..."}

``name`` and ``prompt`` are required; ``variables`` (an object), ``tools`` (a list of objects, each with a
``name``) and ``first_message`` (a string) are optional. Other keys a compiler emits (model, voice, ...)
are kept as they are. For every case of the job the runner reports one case run whose artefact is the
config (secrets redacted), with an empty transcript. It judges nothing: whether a clause survived or a
variable resolves is for the ``structural.*`` mechanisms to say afterwards. A malformed config makes
every case run an ERROR naming the field, never a FAIL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from assay.core.errors import RunnerError
from assay.core.evidence import CaseRun, Report
from assay.core.mechanisms import mechanisms_of
from assay.core.redact import redact
from assay.core.runner import CaseSpec, Heartbeat, Runner, RunJob, register


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def config_problems(target: Any) -> list[str]:
    """Everything wrong with a ``config`` run target, each naming the field; empty when it is well-formed."""
    if not isinstance(target, dict) or "config" not in target:
        return ["target: expected {\"config\": {...compiled assistant config...}}"]
    config = target["config"]
    if not isinstance(config, dict):
        return [f"config: expected an object with name, prompt, variables and tools, got {_kind(config)}"]
    problems = []
    for key in ("name", "prompt"):
        if key not in config:
            problems.append(f"config.{key}: missing; a non-empty string is required")
        elif not isinstance(config[key], str) or not config[key].strip():
            problems.append(f"config.{key}: expected a non-empty string, got {_kind(config[key])}")
    variables = config.get("variables", {})
    if not isinstance(variables, dict):
        problems.append(f"config.variables: expected an object of name -> value, got {_kind(variables)}")
    if "first_message" in config and not isinstance(config["first_message"], (str, type(None))):
        problems.append(f"config.first_message: expected a string, got {_kind(config['first_message'])}")
    tools = config.get("tools", [])
    if not isinstance(tools, list):
        return problems + [f"config.tools: expected a list of tools, got {_kind(tools)}"]
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        where = f"config.tools[{i}]"
        if not isinstance(tool, dict):
            problems.append(f"{where}: expected an object with a name, got {_kind(tool)}")
        elif not isinstance(tool.get("name"), str) or not tool["name"].strip():
            problems.append(f"{where}.name: expected a non-empty string, got {_kind(tool.get('name'))}")
        elif tool["name"] in seen:
            problems.append(f"{where}.name: {tool['name']!r} is attached twice; tool names must be unique")
        else:
            seen.add(tool["name"])
        if isinstance(tool, dict) and not isinstance(tool.get("description", ""), str):
            problems.append(f"{where}.description: expected a string, got {_kind(tool['description'])}")
    return problems


@register
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
