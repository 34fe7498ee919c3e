"""The verdict rules as Polars expressions over count columns: one home for both re-score paths.

:func:`assay.transforms.verdicts.run_verdicts` (from atoms) and
:func:`assay.transforms.rescore.counted_run_verdicts` (from per-(run, key) counts) each build one row per
unit (a run, or a case run) holding the columns :func:`count_columns` names, then select
:func:`verdict_exprs`. The rules themselves are described in :mod:`assay.transforms.verdicts`.

The count columns of a unit:

- ``counted``, ``met``, ``nulls``: counted results, met ones, undetermined ones (``met`` null);
- ``case_runs``: case runs judged; ``_null_units``: those with an undetermined counted result;
- ``_null_reason``: the smallest non-empty reason text among the undetermined counted results;
- ``_r{r}_n`` / ``_r{r}_not_met`` / ``_r{r}_nulls`` per counted required key (and, per run,
  ``_r{r}_units`` / ``_r{r}_failed_units``: case runs with a result, with a not-met one);
- ``_g{g}_n`` / ``_g{g}_met`` / ``_g{g}_nulls`` per threshold group that counts anything;
- ``_run_r{r}_n`` and ``_run_g{g}_n`` (:func:`presence_columns`): the same results counted run-wide;
- ``evaluators``: the sorted names of the evaluators behind counted results;
- ``_na`` / ``_na_notes`` (only when the spec's ``applies`` names a key): results left out because their
  runner cannot evaluate them, and one note per (key, runner), sorted; ``_r{r}_seen`` / ``_g{g}_seen``:
  results of the key (group) whether they apply or not, which then decide "no result in this run".
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from assay.core.criteria import CriteriaSpec, UndeterminedAllowance

__all__ = ["GROUP_DTYPE", "VERDICT_COLUMNS", "Plan", "count_columns", "plan", "presence_columns", "verdict_exprs"]

VERDICT_COLUMNS = ("verdict", "reason", "counted", "met", "nulls", "failed_required", "groups", "evaluators",
                   "excluded", "case_runs", "case_runs_counted")
"""The columns every verdict row carries after its key columns. ``counted`` leaves out the ``excluded``
undetermined results (those within the criteria's ``allow_undetermined``); ``nulls`` counts every
undetermined counted result, excluded or not; ``case_runs`` are the case runs judged and
``case_runs_counted`` those with no excluded result."""

GROUP_DTYPE = pl.Struct(
    {"keys": pl.List(pl.String), "ratio": pl.Float64, "min": pl.Float64, "ok": pl.Boolean,
     "met": pl.Int64, "results": pl.Int64}
)
"""One threshold group's outcome: its counted keys, ``met / results`` (null when it has no result
here), its ``min``, and ``ok`` (ratio >= min; null when the group has no result here). ``results``
leaves out excluded undetermined results."""

_RATIO_SLACK = 1e-9  # 0.15 of 20 counted results allows 3, whatever the float rounding of 0.15 * 20


@dataclass(frozen=True)
class Plan:
    """A spec as the columns the arithmetic needs."""

    required: list[str]
    groups: list[tuple[int, list[str], float]]  # (index in the spec, counted keys, min)
    counted: list[str]
    allowance: UndeterminedAllowance | None
    capable: list[str]  # counted keys that count only where their runner can evaluate them


def plan(spec: CriteriaSpec) -> Plan:
    required, groups = spec.counted_required(), spec.counted_groups()
    counted = list(dict.fromkeys([*required, *(k for _, keys, _ in groups for k in keys)]))
    return Plan(required, groups, counted, spec.allow_undetermined, [k for k in spec.capable_only() if k in counted])


def count_columns(p: Plan, units: bool = True) -> list[str]:
    """The integer count columns of a unit (``units``: with the run-level case-run counts of required keys)."""
    cols = ["counted", "met", "nulls"]
    for r in range(len(p.required)):
        cols += [f"_r{r}_{c}" for c in ("n", "not_met", "nulls", *(("units", "failed_units") if units else ()))]
    for g, _, _ in p.groups:
        cols += [f"_g{g}_{c}" for c in ("n", "met", "nulls")]
    if p.capable:
        cols += ["_na", *presence_columns(p)]
    return cols


def presence_columns(p: Plan) -> list[str]:
    """The columns whose run-wide sums (``_run`` + name) decide "no result in this run"."""
    return [_presence(p, f"_r{r}") for r in range(len(p.required))] + [_presence(p, f"_g{g}") for g, _, _ in p.groups]


def _presence(p: Plan, prefix: str) -> str:
    """The count of a required key (``_r{r}``) or group (``_g{g}``) that says whether the run has any result of it:
    with ``applies``, results that do not apply count here (the key was evaluated, it just does not count)."""
    return f"{prefix}_seen" if p.capable else f"{prefix}_n"


def _not_counted(p: Plan) -> pl.Expr | None:
    """The clause saying which results were left out as not applicable, when the spec's ``applies`` names a key."""
    if not p.capable:
        return None
    n = pl.col("_na")
    return pl.when(n > 0).then(pl.format("{} {} not counted: {}", n, _plural(n, "result", "results"),
                                         pl.col("_na_notes").list.join(", ")))


def _fmt_min(value: float) -> str:
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def _fmt_ratio(ratio: pl.Expr) -> pl.Expr:
    """``ratio`` as text with two decimals, truncated (0.749 shows 0.74, never 0.75)."""
    hundredths = (ratio * 100 + 1e-9).floor().cast(pl.Int64)
    return pl.concat_str(
        (hundredths // 100).cast(pl.String), pl.lit("."), (hundredths % 100).cast(pl.String).str.zfill(2)
    )


def _plural(n: pl.Expr, one: str, many: str) -> pl.Expr:
    return pl.when(n == 1).then(pl.lit(one)).otherwise(pl.lit(many))


def _clauses(parts: list[pl.Expr]) -> pl.Expr:
    if not parts:
        return pl.lit(None, dtype=pl.String)
    joined = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _within(p: Plan) -> pl.Expr:
    """True where the unit's undetermined counted results are few enough to be excluded."""
    nulls, a = pl.col("nulls"), p.allowance
    if a is None:
        return pl.lit(False)
    if a.count is not None:
        return (nulls > 0) & (nulls <= a.count)
    return (nulls > 0) & (nulls <= pl.col("counted") * float(a.ratio or 0.0) + _RATIO_SLACK)


def _coverage(p: Plan, excluded: pl.Expr, case_runs_counted: pl.Expr) -> pl.Expr | None:
    """The clause saying what was counted, only when the spec allows undetermined results."""
    if p.allowance is None:
        return None
    cause = pl.col("_null_reason").fill_null("no reason recorded")
    nulls, total = pl.col("nulls"), pl.col("case_runs")
    counted = pl.format("{} of {} case {} counted", case_runs_counted, total, _plural(total, "run", "runs"))
    allowed = p.allowance.allowed()
    return (
        pl.when(excluded > 0).then(pl.format("{}; {} undetermined {} excluded (allowed: {}), e.g. {}", counted, excluded,
                                             _plural(excluded, "result", "results"), pl.lit(allowed), cause))
        .when(nulls > 0).then(pl.format("more than the {} allowed, e.g. {}", pl.lit(allowed), cause))
        .otherwise(counted)
    )


def verdict_exprs(p: Plan, run_level: bool) -> list[pl.Expr]:
    """Verdict columns (:data:`VERDICT_COLUMNS`) from a unit's count columns."""
    errors: list[pl.Expr] = []
    fails: list[pl.Expr] = []
    passes: list[pl.Expr] = []
    broken: list[pl.Expr] = []
    failing: list[pl.Expr] = []
    failed_keys: list[pl.Expr] = []
    groups: list[pl.Expr] = []

    nulls, within = pl.col("nulls"), _within(p)
    excluded = pl.when(within).then(nulls).otherwise(0).cast(pl.Int64)
    broken.append((nulls > 0) & ~within)
    errors.append(pl.when((nulls > 0) & ~within).then(
        pl.format("{} counted {} not be determined", nulls, _plural(nulls, "result could", "results could"))
    ))

    unit = "run" if run_level else "case run"

    def absent(prefix: str, what: str) -> None:
        n, undetermined = pl.col(f"{prefix}_n"), pl.col(f"{prefix}_nulls")
        nothing, only_excluded = pl.col(f"_run{_presence(p, prefix)}") == 0, within & (n > 0) & (n == undetermined)
        broken.extend([nothing, only_excluded])
        errors.append(pl.when(nothing).then(pl.lit(f"{what} has no result in this run")))
        errors.append(pl.when(only_excluded).then(pl.format(
            f"{what} has no determined result in this {unit} ({{}} undetermined {{}} excluded)", n,
            _plural(n, "result", "results"))))

    for r, key in enumerate(p.required):
        absent(f"_r{r}", f"required key {key}")
        results = pl.col(f"_r{r}_n") - pl.when(within).then(pl.col(f"_r{r}_nulls")).otherwise(0)
        bad = pl.col(f"_r{r}_not_met") > 0
        failing.append(bad)
        failed_keys.append(pl.when(bad).then(pl.lit(key)))
        if run_level:
            detail = pl.format(" in {} of {} case runs", pl.col(f"_r{r}_failed_units"), pl.col(f"_r{r}_units"))
        else:
            detail = pl.when(results > 1).then(
                pl.format(" in {} of {} results", pl.col(f"_r{r}_not_met"), results)
            ).otherwise(pl.lit(""))
        fails.append(pl.when(bad).then(pl.concat_str(pl.lit(f"required {key} not met"), detail)))
    if p.required:
        determined = (pl.col(f"_r{r}_n") - pl.when(within).then(pl.col(f"_r{r}_nulls")).otherwise(0) > 0
                      for r in range(len(p.required)))
        passes.append(pl.when(pl.any_horizontal(determined)).then(pl.lit("every required result met")))
    for g, keys, low in p.groups:
        met = pl.col(f"_g{g}_met")
        n = pl.col(f"_g{g}_n") - pl.when(within).then(pl.col(f"_g{g}_nulls")).otherwise(0)
        label = f"group {g} ({', '.join(keys)})"
        absent(f"_g{g}", f"threshold {label}")
        ratio = pl.when(n > 0).then(met / n)
        ok = ratio >= low  # null where the group has no (determined) result here
        failing.append(ok.not_().fill_null(False))
        shown = pl.format("{} {} {} ({} of {} met)", _fmt_ratio(ratio), pl.when(ok).then(pl.lit(">=")).otherwise(
            pl.lit("<")), pl.lit(_fmt_min(low)), met, n)
        fails.append(pl.when(ok.not_()).then(pl.concat_str(pl.lit(label + " "), shown)))
        passes.append(pl.when(ok).then(pl.concat_str(pl.lit(label + " "), shown)))
        groups.append(pl.struct(
            keys=pl.lit(keys, dtype=pl.List(pl.String)), ratio=ratio, min=pl.lit(low, dtype=pl.Float64), ok=ok,
            met=met, results=n.cast(pl.Int64),
        ))

    if p.capable:  # every result left out: nothing decides the verdict
        unapplied = (pl.col("counted") == 0) & (pl.col("_na") > 0)
        broken.append(unapplied)
        errors.append(pl.when(unapplied).then(pl.lit("no counted result decides it")))
    is_error = pl.any_horizontal(broken)
    is_fail = pl.any_horizontal(failing) if failing else pl.lit(False)
    counted = (pl.col("counted") - excluded).cast(pl.Int64)
    case_runs_counted = (pl.col("case_runs") - pl.when(within).then(pl.col("_null_units")).otherwise(0)).cast(pl.Int64)
    tail = [c for c in (_coverage(p, excluded, case_runs_counted), _not_counted(p)) if c is not None]
    pass_reason = pl.when(counted == 0).then(_clauses([pl.lit("no counted results"), *tail])).otherwise(
        _clauses([pl.format("{} counted {}", counted, _plural(counted, "result", "results")), *passes, *tail])
    )
    verdict = pl.when(is_error).then(pl.lit("error")).when(is_fail).then(pl.lit("fail")).otherwise(pl.lit("pass"))
    reason = (pl.when(is_error).then(_clauses([*errors, *tail])).when(is_fail).then(_clauses([*fails, *tail]))
              .otherwise(pass_reason))
    empty_keys = pl.lit([], dtype=pl.List(pl.String))
    return [
        verdict.alias("verdict"),
        reason.alias("reason"),
        counted.alias("counted"),
        pl.col("met"),
        nulls,
        (pl.concat_list(failed_keys).list.drop_nulls() if failed_keys else empty_keys).alias("failed_required"),
        # through a fixed-width array: concat_list of structs costs 12x as much (60 ms for 20,000 runs)
        (pl.concat_arr(groups).arr.to_list() if groups else pl.lit([], dtype=pl.List(GROUP_DTYPE))).alias("groups"),
        pl.col("evaluators").fill_null(empty_keys),
        excluded.alias("excluded"),
        pl.col("case_runs").cast(pl.Int64),
        case_runs_counted.alias("case_runs_counted"),
    ]
