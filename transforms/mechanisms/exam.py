"""``exam.*``: checks on a coding-agent replay, read from its case run's artefact.

A runner never decides: after the agent stopped it ran the exam's outcome probes in the replay's workspace
and recorded them, with the files changed and a summary of the session, as the case run's artefact
(:mod:`.exam_artefact` reads it, once per distinct artefact). These mechanisms decide from that record:

- outcome: ``exam.command_passes``, ``exam.verify``, ``exam.file_changed``, ``exam.file_contains`` read the
  probe of the same check (and command, path, text); without one, or when the probe could not tell (it
  timed out, or ``verify.sh`` exited other than 0 or 1), the assertion is undetermined, never met;
- trajectory: ``exam.files_within`` matches every changed path (deleted ones too) against the allowed
  globs; ``exam.cap`` and ``exam.band`` bound what the session used;
- profile: ``exam.profile`` records a measure and is always met (diagnostic only).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import polars as pl

from assay.core.files import inside
from assay.core.mechanisms import (Band, Cap, CommandPasses, ExamMeasure, FileChanged, FileContains, FilesWithin,
                                   Profile, Verify)

from .evidence import Evidence
from .exam_artefact import glob_regex, read_replays
from .helpers import decide, either, number, words
from .registry import mechanism

EVALUATOR = "assay:exam"
NOT_RUN = "the runner did not run the exam's outcome probes"
NOT_CALIBRATED = "not calibrated: the band is set from the exam's own baseline replays (assay calibrate)"
SHOWN = 3
"""How many files outside the allowed globs a reason names."""
LABELS: dict[str, str] = {"turns": "turns", "cost_usd": "cost (USD)", "wall_seconds": "wall time (seconds)"}
"""Each measure as a reason names it."""
UNRECORDED: dict[str, str] = {"turns": "the replay recorded no turns",
                              "cost_usd": "the replay recorded no cost: the harness reported none",
                              "wall_seconds": "the replay recorded no wall time"}
"""Why a measure is missing (turns: also when the replay kept no transcript)."""


def _per_artefact(evidence: Evidence, rows: pl.Series, compute: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.DataFrame:
    """Compute once per distinct artefact, then pick each case run's result."""
    table, index = evidence.memo("exam.artefacts", lambda: read_replays(evidence.column("artefact")))
    return compute(table)[index.gather(rows)]


Reason = Callable[[pl.Expr, pl.Expr], pl.Expr]
"""A reason from the probe's exit code and output."""


def _command_untold(what: str) -> Reason:
    """Why a command's probe has no verdict: an exit code other than 0 or 1 (verify.sh), or it did not finish."""
    return lambda code, output: (
        pl.when(code.is_not_null()).then(words(f"{what} exited ", code, ": the check itself failed"))
        .otherwise(words(f"{what} did not finish: ", either(output.str.split("\n").list.last(), "no output"))))


def _file_untold(path: str) -> Reason:
    """Why a file's probe has no verdict (the path leaves the workspace)."""
    return lambda code, output: words(f'no verdict on "{path}": ', either(output, "no output"))


def _probe_outcome(evidence: Evidence, rows: pl.Series, check: str, matches: pl.Expr, absent: str, untold: Reason,
                   failed: Reason, value: bool) -> pl.DataFrame:
    """met = the first matching probe's ``held``; null without one (``absent``, or the runner's reason for
    running none) or when the probe could not tell (``untold``); ``failed`` is the reason when not met."""
    e = pl.element()
    found = pl.col("probes").list.eval(e.filter((e.struct.field("check") == check) & matches))
    code, output = pl.col("_probe").struct.field("exit_code"), pl.col("_probe").struct.field("output")
    no_verdict = untold(code, output)
    reason_null = (pl.when(pl.col("workspace_problem").is_not_null()).then(pl.col("workspace_problem"))
                   .when(~pl.col("_found")).then(either(pl.col("probes_skipped"), absent))
                   .otherwise(no_verdict))

    def compute(table: pl.DataFrame) -> pl.DataFrame:
        table = table.with_columns(_found=found.list.len() > 0, _probe=found.list.first())
        readable = pl.col("workspace_problem").is_null()
        held = pl.when(readable).then(pl.col("_probe").struct.field("held"))
        measured = pl.when(readable).then(code.cast(pl.Float64)) if value else pl.lit(None, pl.Float64)
        return decide(table, held, measured, reason_null, failed(code, output), EVALUATOR)

    return _per_artefact(evidence, rows, compute)


def _exited(what: str, meaning: str = "") -> Reason:
    return lambda code, output: words(f"{what} exited ", either(code.cast(pl.String), "without an exit code"), meaning)


@mechanism("exam.command_passes", version=1)
def command_passes(evidence: Evidence, rows: pl.Series, p: CommandPasses, judge: str | None) -> pl.DataFrame:
    """The probe of ``p.command`` exited 0; value = its exit code."""
    shown = f"`{p.command}`"
    matches = pl.element().struct.field("command") == p.command
    return _probe_outcome(evidence, rows, "command_passes", matches, f"no probe ran {shown}: {NOT_RUN}",
                          _command_untold(shown), _exited(shown), value=True)


@mechanism("exam.verify", version=1)
def verify(evidence: Evidence, rows: pl.Series, p: Verify, judge: str | None) -> pl.DataFrame:
    """The exam's ``verify.sh`` exited 0 (1: the work does not hold); value = its exit code."""
    absent = f"no probe ran verify.sh: the exam has none, or {NOT_RUN}"
    return _probe_outcome(evidence, rows, "verify", pl.lit(True), absent, _command_untold("verify.sh"),
                          _exited("verify.sh", ": the work does not hold"), value=True)


def _path_matches(path: str) -> pl.Expr:
    """The probe's path is ``path`` as given or normalised (the runner records the normalised form)."""
    forms = list(dict.fromkeys([path, inside(path) or path]))
    return pl.element().struct.field("path").is_in(forms)


@mechanism("exam.file_changed", version=1)
def file_changed(evidence: Evidence, rows: pl.Series, p: FileChanged, judge: str | None) -> pl.DataFrame:
    """The work created or changed ``p.path``."""
    return _probe_outcome(evidence, rows, "file_changed", _path_matches(p.path),
                          f'no probe checked "{p.path}": {NOT_RUN}', _file_untold(p.path),
                          lambda code, output: words(f'the work left "{p.path}" ', either(output, "unchanged")),
                          value=False)


@mechanism("exam.file_contains", version=1)
def file_contains(evidence: Evidence, rows: pl.Series, p: FileContains, judge: str | None) -> pl.DataFrame:
    """After the work, the file at ``p.path`` contains ``p.text``."""
    matches = _path_matches(p.path) & (pl.element().struct.field("text") == p.text)
    return _probe_outcome(evidence, rows, "file_contains", matches,
                          f'no probe looked for "{p.text}" in "{p.path}": {NOT_RUN}', _file_untold(p.path),
                          lambda code, output: words(f'"{p.path}" does not contain "{p.text}" (',
                                                     either(output, "not found"), ")"),
                          value=False)


@mechanism("exam.files_within", version=1)
def files_within(evidence: Evidence, rows: pl.Series, p: FilesWithin, judge: str | None) -> pl.DataFrame:
    """Every file the work changed matches one of ``p.allow``; value = how many do not."""
    e = pl.element()
    allowed = functools.reduce(operator.or_, [e.str.contains(glob_regex(g)) for g in p.allow])
    outside = pl.col("changed").list.eval(e.filter(~allowed))
    n = outside.list.len().cast(pl.Int64)
    problem = pl.coalesce("workspace_problem", "changed_problem")
    globs = ", ".join(f'"{g}"' for g in p.allow)
    more = pl.when(n > SHOWN).then(words(" and ", n - SHOWN, " more")).otherwise(pl.lit(""))
    failure = words(n, f" changed file(s) outside {globs}: ", outside.list.head(SHOWN).list.join(", "), more)
    return _per_artefact(evidence, rows, lambda a: decide(
        a, pl.when(problem.is_null()).then(n == 0), pl.when(problem.is_null()).then(n.cast(pl.Float64)), problem,
        failure, EVALUATOR))


def _measure(measure: ExamMeasure) -> tuple[pl.Expr, pl.Expr]:
    """The measure (null while the session cannot be read), and why it is null."""
    unknown = pl.col("session_problem")
    why = UNRECORDED[measure]
    missing = (pl.when(pl.col("transcript").eq_missing(False)).then(pl.lit(f"{why}: it kept no transcript"))
               .otherwise(pl.lit(why))) if measure == "turns" else pl.lit(why)
    readable = unknown.is_null()
    return pl.when(readable).then(pl.col(measure)), pl.when(readable).then(missing).otherwise(unknown)


@mechanism("exam.cap", version=1)
def cap(evidence: Evidence, rows: pl.Series, p: Cap, judge: str | None) -> pl.DataFrame:
    """The replay used at most ``p.max`` of ``p.measure``; value = what it used."""
    used, why = _measure(p.measure)
    failure = f"the replay's {LABELS[p.measure]} exceeded the cap of {number(p.max)}"
    return _per_artefact(evidence, rows, lambda a: decide(a, used <= p.max, used, why, failure, EVALUATOR))


@mechanism("exam.band", version=1)
def band(evidence: Evidence, rows: pl.Series, p: Band, judge: str | None) -> pl.DataFrame:
    """``p.measure`` lies within ``p.center`` ± ``p.k`` × ``p.spread``; undetermined until calibrated."""
    if p.center is None or p.spread is None:
        return pl.DataFrame({"met": pl.repeat(None, rows.len(), dtype=pl.Boolean, eager=True)}).select(
            "met", value=pl.lit(None, pl.Float64), reason=pl.lit(NOT_CALIBRATED), evaluator=pl.lit(EVALUATOR))
    low, high = p.center - p.k * p.spread, p.center + p.k * p.spread
    used, why = _measure(p.measure)
    failure = f"the replay's {LABELS[p.measure]} is outside the calibrated band [{number(low)}, {number(high)}]"
    return _per_artefact(evidence, rows, lambda a: decide(
        a, (used >= low) & (used <= high), used, why, failure, EVALUATOR))


@mechanism("exam.profile", version=1)
def profile(evidence: Evidence, rows: pl.Series, p: Profile, judge: str | None) -> pl.DataFrame:
    """Diagnostic only: always met once the session can be read; value = the measure (``tool_mix``: how many
    distinct tools were called; null when the replay did not record it)."""
    readable = pl.col("session_problem").is_null()
    return _per_artefact(evidence, rows, lambda a: decide(
        a, pl.when(readable).then(pl.lit(True)), pl.when(readable).then(pl.col(p.measure)),
        pl.col("session_problem"), "", EVALUATOR))


__all__ = ["NOT_CALIBRATED", "band", "cap", "command_passes", "file_changed", "file_contains", "files_within",
           "profile", "verify"]
