"""The error hierarchy.

One root, :class:`AssayError`. Each class also inherits the builtin it behaves like, carries the
offending values as attributes, and says whether retrying can help (``transient``). Prefect retries
and the command line read these properties; nothing matches on message text.
"""

from __future__ import annotations

from typing import Any


class AssayError(Exception):
    """Root of every error Assay raises on purpose."""

    transient: bool = False
    """True when the same call may succeed if retried (a lock, a rate limit, a flaky network)."""

    exit_code: int = 1
    """The command line's exit code when this error reaches it."""


class ConfigError(AssayError, ValueError):
    """A setting is missing or malformed."""


class BundleError(AssayError, ValueError):
    """A bundle file is malformed. Names the file, the path inside it and what is allowed."""

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file = file
        self.problems = problems
        lines = [f"{file}: {where}: {what}" if where else f"{file}: {what}" for where, what in problems]
        super().__init__("\n".join(lines))


class LabelsError(AssayError, ValueError):
    """A labelled set for measuring the judge (JSON Lines) is malformed. Names the file, the line and what is wrong."""

    def __init__(self, file: str, problems: list[tuple[int, str]]):
        self.file = file
        self.problems = problems
        super().__init__("\n".join(f"{file}: line {line}: {what}" for line, what in problems))


class IdentifierError(AssayError, ValueError):
    """A value that becomes part of a path or key is not a valid identifier."""

    def __init__(self, field: str, value: Any, rule: str):
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"{field} {value!r} is not a valid identifier: {rule}")


class NotFoundError(AssayError, LookupError):
    """A named thing (suite, run, consumer, ...) does not exist."""

    def __init__(self, kind: str, key: str, hint: str = ""):
        self.kind, self.key = kind, key
        super().__init__(f"no {kind} {key!r}" + (f"; {hint}" if hint else ""))


class ImmutableError(AssayError, RuntimeError):
    """An in-place change to a row that may only gain new versions."""


class LeaseError(AssayError, RuntimeError):
    """The caller does not hold the run's lease (never had it, it expired, or another owner won)."""

    def __init__(self, run_id: str, owner: str, reason: str):
        self.run_id, self.owner, self.reason = run_id, owner, reason
        super().__init__(f"run {run_id}: {owner!r} does not hold the lease: {reason}")


class RunFinalisedError(LeaseError):
    """The run is finalised; nothing may change it."""


class CriteriaError(AssayError, ValueError):
    """A criteria spec cannot be resolved against the suite's assertions."""


class SchemaVersionError(AssayError, ValueError):
    """A stored file or document carries a schema version this build does not know."""

    def __init__(self, where: str, found: Any, known: list[Any]):
        self.where, self.found, self.known = where, found, known
        super().__init__(
            f"{where}: schema version {found!r} is not one this build of Assay reads "
            f"(known: {', '.join(map(str, known))}); upgrade Assay or rewrite the file"
        )


class EvidenceError(AssayError, ValueError):
    """Evidence handed to the lake does not match its schema."""


class RunnerError(AssayError, RuntimeError):
    """A runner could not execute a case. Becomes an ERROR case run, never a FAIL."""


class TransientRunnerError(RunnerError):
    """A runner failure that may go away on retry (rate limit, timeout, 5xx)."""

    transient = True


class VendorError(RunnerError):
    """A vendor (or our judge's endpoint) answered with an error, classified once for every adapter.

    ``vendor_message`` is the vendor's own words; ``status`` the HTTP status (None for a network
    failure). The message never carries a key, a header or a request body. A vendor error becomes an
    ERROR case run or a null result with this message, never a FAIL.
    """

    def __init__(self, vendor: str, status: int | None, vendor_message: str, *, retry_after: float | None = None):
        self.vendor, self.status, self.vendor_message, self.retry_after = vendor, status, vendor_message, retry_after
        where = f"HTTP {status}" if status is not None else "no response"
        super().__init__(f"{vendor}: {where}: {vendor_message}")


class RateLimitedError(VendorError):
    """The vendor asked us to slow down (429); ``retry_after`` says for how long, when it said."""

    transient = True


class TransientVendorError(VendorError):
    """A failure that may go away on retry: 5xx, a timeout, a dropped connection."""

    transient = True


class PermanentVendorError(VendorError):
    """A failure retrying cannot fix: a bad key (401/403), an unknown object (404), a refused request (4xx)."""


class MalformedResponseError(PermanentVendorError):
    """The vendor answered 2xx with a body that is not the documented shape."""


class ConcurrentWriteError(AssayError, RuntimeError):
    """Another writer changed the same lake state first (a judging pass, a compaction); nothing was written."""

    transient = True
