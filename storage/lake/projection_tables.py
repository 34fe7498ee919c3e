"""The projected tables: what the ``projections`` flow derives from the evidence, one file set per suite.

Each row belongs to one finalised run, and each table is rewritten run by run (copy on write) by the
incremental projection (:mod:`assay.storage.projection`): a run's rows are replaced whole whenever
anything it is made of changed. Every file holds the runs of one suite, so passes over different suites
never rewrite the same file. The fleet-wide rollups (per team and week, across assertion versions,
evaluator agreement, cost per consumer) are views over these (:mod:`assay.storage.fleet_views`).
"""

from __future__ import annotations

import pyarrow as pa

from .schema import LakeTable, isin, lake_table


def _doc(name: str, kind: pa.DataType, doc: str, *, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable, metadata={"doc": doc})


_STR, _INT, _FLOAT = pa.string(), pa.int64(), pa.float64()
_RUN = [
    _doc("run_id", _STR, "The run."),
    _doc("suite_id", _STR, "The run's suite (`suites.suite_id`)."),
    _doc("suite_key", _STR, "The suite's key within its team."),
    _doc("runner", _STR, "The runner that executed the run."),
    _doc("week", pa.date32(), "Monday of the ISO week the run was created in (UTC): the fleet's period."),
]
_COMPUTED = _doc("computed_at", pa.timestamp("us", tz="UTC"), "When the projection pass that wrote the row ran.")
_EVALUATORS = _doc("evaluators", pa.list_(pa.field("item", _STR, nullable=False)),
                   "The distinct evaluators behind the counted results, sorted.")
_MIXED = _doc("mixed_evaluators", pa.bool_(), "True when more than one evaluator stands behind these figures: "
              "they mix measurements (a vendor's guardrail, our judge, a transcript check).")
_CRITERIA = [
    _doc("consumer_key", _STR, "Whose criteria."),
    _doc("criteria_id", _STR, "The criteria version applied (`criteria.criteria_id`)."),
    _doc("criteria_version", pa.int32(), "Its version number."),
    _doc("is_stamped", pa.bool_(), "This is the version stamped on the run when it started."),
    _doc("is_current", pa.bool_(), "This is the consumer's latest version for the suite (when the pass ran)."),
]
_VERDICT = [
    _doc("verdict", _STR, "pass, fail or error under this criteria version over the current results; null when "
         "nothing was judged.", nullable=True),
    _doc("reason", _STR, "Why, as `assay rescore` says it.", nullable=True),
    _doc("counted", _INT, "Current results the criteria counts, less the undetermined ones it excludes.", nullable=True),
    _doc("met", _INT, "Of those, how many are met.", nullable=True),
    _doc("nulls", _INT, "Counted results that could not be determined.", nullable=True),
]

RUN_VERDICTS = lake_table(
    "run_verdicts",
    1,
    pa.schema([
        *_RUN, *_CRITERIA, *_VERDICT,
        _doc("stamped_verdict", _STR, "The verdict stamped at finalisation (only on the stamped version's row).",
             nullable=True),
        _doc("changed", pa.bool_(), "On the stamped version's row: the verdict now differs from the stamped one."),
        _doc("excluded", _INT, "Undetermined counted results left out under `allow_undetermined`.", nullable=True),
        _doc("case_runs", _INT, "Case runs judged.", nullable=True),
        _doc("case_runs_counted", _INT, "Of those, the ones with no excluded result.", nullable=True),
        _doc("cases", _INT, "Cases in the run's snapshot."),
        _doc("coverage", _FLOAT, "Case runs stored / cases in the run (1.0: every case executed and reported).",
             nullable=True),
        _EVALUATORS, _MIXED, _COMPUTED,
    ]),
    natural_key=["run_id", "consumer_key", "criteria_id"],
    checks={"verdict": [isin(("pass", "fail", "error"))]},
    first_by="computed_at",
    sort_by=["run_id", "consumer_key"],
)
"""Per run, consumer and criteria version (the stamped one and the current one): the verdict over the
current results, with its coverage."""

CASE_VERDICTS = lake_table(
    "case_verdicts",
    1,
    pa.schema([
        _doc("run_id", _STR, "The run."), _doc("suite_id", _STR, "The run's suite."),
        _doc("case_run_id", _STR, "The case run."), _doc("case_key", _STR, "Its case."),
        *_CRITERIA, *_VERDICT, _EVALUATORS, _COMPUTED,
    ]),
    natural_key=["case_run_id", "consumer_key", "criteria_id"],
    checks={"verdict": [isin(("pass", "fail", "error"))]},
    first_by="computed_at",
    sort_by=["run_id", "case_run_id"],
)
"""The per-case breakdown of ``run_verdicts``: the same rules applied to each case run's own results."""

BEHAVIOUR_STATS = lake_table(
    "behaviour_stats",
    1,
    pa.schema([
        *_RUN,
        _doc("assertion_key", _STR, "The behaviour."),
        _doc("assertion_version", pa.int32(), "The wording judged (a rewording starts a new version)."),
        _doc("assertion_id", _STR, "That version's id."),
        _doc("mechanism", _STR, "How it was checked."),
        _doc("evaluator", _STR, "Who produced the results (`assay:transcript`, `hamming:guardrail`, ...)."),
        _doc("results", _INT, "Current results of this version by this evaluator in the run."),
        _doc("met", _INT, "Of those, met."),
        _doc("not_met", _INT, "Of those, not met (a failure)."),
        _doc("undetermined", _INT, "Of those, could not be determined (met null): never a pass, never a failure."),
        _COMPUTED,
    ]),
    natural_key=["run_id", "assertion_id", "evaluator"],
    first_by="computed_at",
    sort_by=["run_id", "assertion_key"],
)
"""Per run, assertion version and evaluator: how the current results of a behaviour came out."""

EVALUATOR_PAIRS = lake_table(
    "evaluator_pairs",
    1,
    pa.schema([
        *_RUN,
        _doc("case_run_id", _STR, "The case run both evaluators judged."), _doc("case_key", _STR, "Its case."),
        _doc("behaviour", _STR, "Our assertion's key: the behaviour both measured."),
        _doc("our_evaluator", _STR, "Our evaluator (`assay:judge:<model>`, `assay:transcript`, ...)."),
        _doc("our_met", pa.bool_(), "Our result.", nullable=True),
        _doc("our_reason", _STR, "Why, as our evaluator said.", nullable=True),
        _doc("vendor_key", _STR, "The vendor evaluation's assertion key (a `vendor.evaluation` that names "
             "`behaviour` in `same_behaviour_as`)."),
        _doc("vendor_evaluator", _STR, "The vendor's evaluator (`hamming:guardrail`, `vapi:scorer`, ...)."),
        _doc("vendor_met", pa.bool_(), "The vendor's result, mapped onto met.", nullable=True),
        _doc("vendor_reason", _STR, "The vendor's rationale.", nullable=True),
        _doc("agree", pa.bool_(), "Both decided and agree; null when either could not decide.", nullable=True),
        _COMPUTED,
    ]),
    natural_key=["case_run_id", "behaviour", "vendor_key"],
    first_by="computed_at",
    sort_by=["run_id", "case_run_id"],
)
"""Our evaluation of a behaviour against a vendor's evaluation of the same behaviour on the same case run."""

RUN_COSTS = lake_table(
    "run_costs",
    1,
    pa.schema([
        *_RUN,
        _doc("case_runs", _INT, "Case runs stored."),
        _doc("runner_cost_usd", _FLOAT, "What the runner reported spending (sum of `case_runs.cost_usd`); null "
             "when it reported no cost.", nullable=True),
        _doc("judge_requests", _INT, "Distinct judgements of our judge behind the run's results (a result carried "
             "forward or served from the cache counts once)."),
        _doc("judge_tokens_in", _INT, "Their input tokens."),
        _doc("judge_tokens_out", _INT, "Their output tokens."),
        _doc("judge_cost_usd", _FLOAT, "Their cost; null when no price is configured.", nullable=True),
        _doc("total_cost_usd", _FLOAT, "Runner and judge together (a missing figure counts as 0); null when both "
             "are missing.", nullable=True),
        _COMPUTED,
    ]),
    natural_key=["run_id"],
    first_by="computed_at",
    sort_by=["run_id"],
)
"""Per run: what executing it and judging it cost."""

PROJECTED: dict[str, LakeTable] = {
    t.name: t for t in (RUN_VERDICTS, CASE_VERDICTS, BEHAVIOUR_STATS, EVALUATOR_PAIRS, RUN_COSTS)
}
"""Every projected table, by name, in the order a pass writes them."""
