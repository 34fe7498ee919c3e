"""The vocabulary of Assay: record models, the runner contract, mechanisms, errors and settings.

Imports nothing else of ours; other packages import from here.
"""

from .bundle import Bundle, read_bundle
from .criteria import CriteriaSpec, ThresholdGroup
from .documents import document
from .errors import (
    AssayError,
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
from .mechanisms import MECHANISMS, family, mechanisms_of, validate_params
from .runner import (
    CaseSpec,
    DriveResult,
    Lease,
    Ledger,
    Receipt,
    Runner,
    RunJob,
    default_runner_for,
    drive,
    register,
    registered,
    runner_class,
)
from .settings import Settings

__all__ = [
    "AssayError", "BundleError", "ConfigError", "CriteriaError", "EvidenceError", "IdentifierError",
    "ImmutableError", "LeaseError", "NotFoundError", "RunFinalisedError", "RunnerError",
    "SchemaVersionError", "TransientRunnerError",
    "CaseRun", "Evaluation", "Report", "ToolCall", "Turn", "case_run_schema", "evaluation_schema",
    "canonical_json", "content_hash", "identifier", "new_id", "stable_id",
    "MECHANISMS", "family", "mechanisms_of", "validate_params",
    "CaseSpec", "DriveResult", "Lease", "Ledger", "Receipt", "Runner", "RunJob",
    "default_runner_for", "drive", "register", "registered", "runner_class",
    "Settings", "document", "Bundle", "read_bundle", "CriteriaSpec", "ThresholdGroup",
]
