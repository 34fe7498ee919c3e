"""The error hierarchy.

One root, :class:`AssayError`. Each class also inherits the builtin it behaves like, carries the
offending values as attributes, and says whether retrying can help (``transient``). Prefect retries
and the command line read these properties; nothing matches on message text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .exit_codes import ExitCode


class AssayError(Exception):
    """Root of every error Assay raises on purpose."""

    transient: bool = False
    """True when the same call may succeed if retried (a lock, a rate limit, a flaky network)."""

    exit_code: int = ExitCode.FAILURE
    """The command line's exit code when this error reaches it (:mod:`.exit_codes`)."""


class ConfigError(AssayError, ValueError):
    """A setting is missing or malformed."""


class BundleError(AssayError, ValueError):
    """A bundle file is malformed. Names the file, the path inside it and what is allowed."""

    def __init__(self, file: str, problems: list[tuple[str, str]]):
        self.file = file
        self.problems = problems
        lines = [f"{file}: {where}: {what}" if where else f"{file}: {what}" for where, what in problems]
        super().__init__("\n".join(lines))


class TemplateError(AssayError, ValueError):
    """Applying a template group cannot go ahead: a team's facts are missing or of the wrong type, or a case
    it would make is not the template's to change. Names the file (or group), each problem and its fix."""

    def __init__(self, file: str, problems: list[str]):
        self.file = file
        self.problems = problems
        super().__init__("\n".join(f"{file}: {what}" for what in problems) + "\nnothing was written")


class LabelsError(AssayError, ValueError):
    """A labelled set for measuring the judge (JSON Lines) is malformed. Names the file, the line and what is wrong."""

    def __init__(self, file: str, problems: list[tuple[int, str]]):
        self.file = file
        self.problems = problems
        super().__init__("\n".join(f"{file}: line {line}: {what}" for line, what in problems))


class LegacyExportError(AssayError, ValueError):
    """A legacy export (``assay legacy import``) is malformed: names the file, each problem's row and
    column, what is allowed and the fix. Nothing was imported."""

    def __init__(self, where: str, problems: list[str]):
        self.where, self.problems = where, problems
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__("\n".join([f"{where}: nothing imported; fix the export and import again", *shown]))


class CallExportError(AssayError, ValueError):
    """A vendor's call export (``assay calls import``), or a drafts file of one, cannot be used: names the
    file, each record and field, what is allowed and the fix. Nothing was written."""

    def __init__(self, file: str, problems: list[str]):
        self.file, self.problems = file, problems
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        super().__init__("\n".join([f"{file}: nothing written", *shown]))


class HistoryError(AssayError, ValueError):
    """An act that needs our own evidence (judging) was asked of imported legacy history."""


class IdentifierError(AssayError, ValueError):
    """A value that becomes part of a path or key is not a valid identifier."""

    def __init__(self, field: str, value: Any, rule: str):
        self.field, self.value, self.rule = field, value, rule
        super().__init__(f"{field} {value!r} is not a valid identifier: {rule}")


class NotFoundError(AssayError, LookupError):
    """A named thing (suite, run, consumer, ...) does not exist.

    Given the ``known`` names, the message also says which are nearest (``nearest``) and lists them
    under ``known_as`` (default: "known suites" for kind "suite"), and ``hint`` follows on a line of its own.
    """

    def __init__(self, kind: str, key: str, hint: str = "", *, known: Iterable[str] | None = None,
                 known_as: str | None = None):
        from .names import listed, nearest

        self.kind, self.key = kind, key
        self.known = list(known) if known is not None else []
        self.nearest = nearest(key, self.known)
        if known is None:
            super().__init__(f"no {kind} {key!r}" + (f"; {hint}" if hint else ""))
            return
        close = f"; did you mean {' or '.join(self.nearest)}?" if self.nearest else ""
        lines = [f"no {kind} {key!r}{close}", f"{known_as or f'known {kind}s'}: {listed(self.known)}"]
        super().__init__("\n".join([*lines, hint] if hint else lines))


class GateError(AssayError, LookupError):
    """A consumer named to gate (or filter) verdicts has no criteria on the runs or suite in question."""

    def __init__(self, option: str, consumers: list[str], where: str, known: list[str]):
        from .names import listed, nearest

        self.option, self.consumers, self.where, self.known = option, consumers, where, known
        names = ", ".join(repr(c) for c in consumers)
        close = list(dict.fromkeys(n for c in consumers for n in nearest(c, known)))
        guess = f"; did you mean {' or '.join(close)}?" if close else ""
        super().__init__(
            f"{option}: {names} has no criteria on {where}, so it has no verdict there{guess}\n"
            f"consumers with criteria there: {listed(known)}\n"
            "name one of them, or load a bundle that gives it criteria"
        )


class AmbiguousError(AssayError, LookupError):
    """A name (a prefix, a call id) matches more than one thing; the message lists them and how to pick one."""


class IncomparableError(AssayError, ValueError):
    """Two things that cannot be compared were asked to be (runs of different suites)."""


class UnknownChoiceError(NotFoundError):
    """A command-line argument outside its fixed set of choices (``assay ls sutes``): a malformed command
    line, so it exits 2 like any other, with the nearest choices and the known ones."""

    exit_code = ExitCode.USAGE


class UsageError(AssayError, ValueError):
    """Options that do not go together (or one missing that another needs): a malformed command line,
    exit 2; the message says which combination works."""

    exit_code = ExitCode.USAGE


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


class UnconfirmedCreateError(VendorError):
    """A request that creates billable work (a chat, a simulation, a test run) failed after it may have
    reached the vendor, and the vendor offers no way to find out: it is not sent again (that could bill
    the work twice). The message says what the vendor may hold and where to look for it."""


class DeadlineError(AssayError, TimeoutError):
    """The run's deadline came while we waited for a vendor (a request, a backoff, a poll); the run ends
    ``timed_out``. ``waited`` is how long the wait had lasted, ``vendor`` whom we waited for."""

    def __init__(self, vendor: str, waited: float):
        self.vendor, self.waited = vendor, waited
        took = f"{waited:.1f}" if waited < 10 else f"{waited:.0f}"
        super().__init__(f"timed out after {took} s waiting for {vendor}: the run's deadline passed")


class ToolMockError(RunnerError, LookupError):
    """A tool call a suite's ``tool_mocks`` cannot answer: no rule covers it, or a rule names a fact the
    case's world lacks. ``tool`` and ``arguments`` are the call's. Makes the case run an ERROR, never a FAIL."""

    def __init__(self, tool: str, arguments: dict[str, Any], message: str):
        self.tool, self.arguments = tool, arguments
        super().__init__(message)


class ConcurrentWriteError(AssayError, RuntimeError):
    """Another writer changed the same lake state first (a judging pass, a compaction); nothing was written."""

    transient = True


class ServerError(AssayError, RuntimeError):
    """The workspace's Prefect server (``assay server``) could not be started or reached."""
