"""The vocabulary of Assay: record models, the runner contract, mechanisms, errors and settings.

Imports nothing else of ours; other packages import from here. Names are imported from their module
on first use (PEP 562), so importing one piece of the vocabulary never builds every model.
"""

from __future__ import annotations

from .lazy import lazy_names

_HOMES: dict[str, str] = {
    "AssayError": "errors",
    "BundleError": "errors",
    "ConcurrentWriteError": "errors",
    "ConfigError": "errors",
    "GateError": "errors",
    "ExitCode": "exit_codes",
    "CriteriaError": "errors",
    "EvidenceError": "errors",
    "IdentifierError": "errors",
    "ImmutableError": "errors",
    "LeaseError": "errors",
    "NotFoundError": "errors",
    "RunFinalisedError": "errors",
    "RunnerError": "errors",
    "SchemaVersionError": "errors",
    "TransientRunnerError": "errors",
    "VendorError": "errors",
    "RateLimitedError": "errors",
    "TransientVendorError": "errors",
    "PermanentVendorError": "errors",
    "MalformedResponseError": "errors",
    "UnconfirmedCreateError": "errors",
    "DeadlineError": "errors",
    "LeaseKeeper": "leases",
    "CaseRun": "evidence",
    "Evaluation": "evidence",
    "Report": "evidence",
    "ToolCall": "evidence",
    "Turn": "evidence",
    "case_run_schema": "evidence",
    "evaluation_schema": "evidence",
    "vendor_reading": "evidence",
    "canonical_json": "ids",
    "content_hash": "ids",
    "identifier": "ids",
    "new_id": "ids",
    "stable_id": "ids",
    "check_line": "callset",
    "explain": "callset",
    "CompiledConfig": "compiled",
    "config_problems": "compiled",
    "read_artefact": "compiled",
    "FAMILY_EVIDENCE": "mechanisms",
    "MECHANISMS": "mechanisms",
    "family": "mechanisms",
    "mechanisms_of": "mechanisms",
    "validate_params": "mechanisms",
    "CaseSpec": "runner",
    "DriveResult": "runner",
    "Heartbeat": "runner",
    "Lease": "runner",
    "Ledger": "runner",
    "Receipt": "runner",
    "Runner": "runner",
    "RunJob": "runner",
    "RunContext": "runner",
    "ScratchBook": "runner",
    "ScratchObject": "runner",
    "drive": "runner",
    "ENTRY_POINT_GROUP": "plugins",
    "RunnerPluginError": "plugins",
    "default_runner_for": "plugins",
    "registered": "plugins",
    "runner_class": "plugins",
    "runner_names": "plugins",
    "Settings": "settings",
    "document": "documents",
    "Bundle": "bundle",
    "read_bundle": "bundle",
    "CriteriaSpec": "criteria",
    "ThresholdGroup": "criteria",
}
"""Each public name and the module of ``assay.core`` it lives in."""

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
