"""The vocabulary of Assay: record models, the runner contract, mechanisms, errors and settings.

Imports nothing else of ours; other packages import from here.
"""

from .bundle import Bundle, read_bundle
from .criteria import CriteriaSpec, ThresholdGroup
from .documents import document
from .errors import (
    AssayError,
    ConcurrentWriteError,
    BundleError,
    ConfigError,
    CriteriaError,
    EvidenceError,
    IdentifierError,
    ImmutableError,
    LeaseError,
    NotFoundError,
    RunFinalisedError,
    RunnerError,
    SchemaVersionError,
    TransientRunnerError,
)
from .evidence import CaseRun, Evaluation, Report, ToolCall, Turn, case_run_schema, evaluation_schema
from .ids import canonical_json, content_hash, identifier, new_id, stable_id
from .callset import check_line, explain
from .compiled import CompiledConfig, config_problems, read_artefact
from .mechanisms import FAMILY_EVIDENCE, MECHANISMS, family, mechanisms_of, validate_params
from .plugins import ENTRY_POINT_GROUP, RunnerPluginError, default_runner_for, registered, runner_class, runner_names
from .runner import CaseSpec, DriveResult, Heartbeat, Lease, Ledger, Receipt, Runner, RunJob, drive
from .settings import Settings

__all__ = [
    "AssayError", "BundleError", "ConcurrentWriteError", "ConfigError", "CriteriaError", "EvidenceError", "IdentifierError",
    "ImmutableError", "LeaseError", "NotFoundError", "RunFinalisedError", "RunnerError",
    "SchemaVersionError", "TransientRunnerError",
    "CaseRun", "Evaluation", "Report", "ToolCall", "Turn", "case_run_schema", "evaluation_schema",
    "canonical_json", "content_hash", "identifier", "new_id", "stable_id",
    "check_line", "explain", "CompiledConfig", "config_problems", "read_artefact",
    "FAMILY_EVIDENCE", "MECHANISMS", "family", "mechanisms_of", "validate_params",
    "CaseSpec", "DriveResult", "Heartbeat", "Lease", "Ledger", "Receipt", "Runner", "RunJob", "drive",
    "ENTRY_POINT_GROUP", "RunnerPluginError", "default_runner_for", "registered", "runner_class", "runner_names",
    "Settings", "document", "Bundle", "read_bundle", "CriteriaSpec", "ThresholdGroup",
]
