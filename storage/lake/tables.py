"""The lake's table registry: each table's columns (built from :mod:`assay.core.evidence` plus the
ledger columns the lake adds), its natural key and its checks, at the version this build writes.

Adding a table is a few lines: build its Arrow schema, call :func:`~.schema.lake_table`, add it to
``TABLES``. What a table is, and how writes conform and validate, lives in :mod:`.schema`.
"""

from __future__ import annotations

import pyarrow as pa

from assay.core.evidence import CASE_RUN_STATUSES, TURN_ROLES, VERDICTS, case_run_schema, evaluation_schema

from .projection_tables import PROJECTED
from .schema import LakeTable, OlderVersion, isin, lake_table, list_field_isin, score_on_scale


def _str(name: str) -> pa.Field:
    return pa.field(name, pa.string(), nullable=False)


_REPORTED_AT = pa.field("reported_at", pa.timestamp("us", tz="UTC"), nullable=False)

_CASE_RUN_FIELDS = pa.schema([
    *map(_str, ["case_run_id", "run_id", "suite_id", "case_key", "runner", "request_id", "case_snapshot",
                "case_snapshot_hash"]), _REPORTED_AT, *case_run_schema()])
_V1_TURN = pa.struct([("role", pa.string()), ("text", pa.string()), ("t", pa.float64())])
_VENDOR_COST = ("vendor_cost", "vendor_cost_unit")
_V2_CASE_RUN_FIELDS = pa.schema([f for f in _CASE_RUN_FIELDS if f.name not in _VENDOR_COST])

CASE_RUNS = lake_table(
    "case_runs",
    3,
    _CASE_RUN_FIELDS,
    natural_key=["case_run_id"],
    checks={"status": [isin(CASE_RUN_STATUSES)], "transcript": [list_field_isin("role", TURN_ROLES)]},
    older=[
        # v1's turns had no end_t: they read it null (the transcript column is widened on read).
        OlderVersion(1, _V2_CASE_RUN_FIELDS.set(_V2_CASE_RUN_FIELDS.get_field_index("transcript"),
                                                pa.field("transcript", pa.list_(_V1_TURN))),
                     dict.fromkeys(_VENDOR_COST)),
        # v2 had no vendor_cost/vendor_cost_unit: its rows read null (their cost is cost_usd, dollars or nothing).
        OlderVersion(2, _V2_CASE_RUN_FIELDS, dict.fromkeys(_VENDOR_COST)),
    ],
)

_EVALUATION_FIELDS = pa.schema(
    [*map(_str, ["evaluation_id", "case_run_id", "run_id", "request_id"]), _REPORTED_AT, *evaluation_schema()]
)

RUNNER_EVALUATIONS = lake_table(
    "runner_evaluations",
    2,
    _EVALUATION_FIELDS,
    natural_key=["evaluation_id"],
    checks={"verdict": [isin(VERDICTS)]},
    frame_checks=[score_on_scale()],
    # v1 had no met/value: null, not derived (its pass score was not kept, and storage knows no vendor
    # mapping). Judging never reads them: vendor.evaluation maps verdict, score and scale itself.
    older=[OlderVersion(1, pa.schema([f for f in _EVALUATION_FIELDS if f.name not in ("met", "value")]),
                        {"met": None, "value": None})],
)

_JUDGED_AT = pa.field("judged_at", pa.timestamp("us", tz="UTC"), nullable=False)

OUTCOME_TRIGGERS: tuple[str, ...] = ("run", "judge", "rejudge", "import")
"""Why a judging pass happened: after a run, on demand (`assay judge`), a re-judge, or a legacy import
(`assay legacy import`: the opaque legacy verdicts)."""

OUTCOMES = lake_table(
    "outcomes",
    1,
    pa.schema(
        [
            *map(_str, ["outcome_id", "run_id", "case_run_id", "pass_id", "trigger"]),
            _JUDGED_AT,
            pa.field("evaluated", pa.int64(), nullable=False),
            pa.field("carried", pa.int64(), nullable=False),
            ("judge", pa.string()),
        ]
    ),
    natural_key=["outcome_id"],
    checks={"trigger": [isin(OUTCOME_TRIGGERS)]},
    first_by="judged_at",
)

_RESULT_FIELDS = [
    *map(_str, ["result_id", "outcome_id", "run_id", "case_run_id", "case_key"]),
    *map(_str, ["assertion_id", "assertion_key"]),
    pa.field("assertion_version", pa.int32(), nullable=False),
    _str("mechanism"),
    pa.field("met", pa.bool_()),
    pa.field("value", pa.float64()),
    pa.field("reason", pa.string()),
    _str("evaluator"),
    _JUDGED_AT,
]

_EVALUATOR_VERSION = pa.field("evaluator_version", pa.int32(), nullable=False)
_JUDGE_SPEND = [pa.field("judge_tokens_in", pa.int32()), pa.field("judge_tokens_out", pa.int32()),
                pa.field("judge_cost_usd", pa.float64())]

ASSERTION_RESULTS = lake_table(
    "assertion_results",
    3,
    pa.schema([*_RESULT_FIELDS, _EVALUATOR_VERSION, *_JUDGE_SPEND]),
    natural_key=["result_id"],
    first_by="judged_at",
    sort_by=["run_id", "case_run_id", "assertion_key"],
    older=[
        # v1 had no evaluator_version: every evaluator of that build was at version 1.
        OlderVersion(1, pa.schema(_RESULT_FIELDS), {"evaluator_version": 1, **{f.name: None for f in _JUDGE_SPEND}}),
        # v2 had no judge spend: no build before v3 called a judge.
        OlderVersion(2, pa.schema([*_RESULT_FIELDS, _EVALUATOR_VERSION]), {f.name: None for f in _JUDGE_SPEND}),
    ],
)
"""The atom: one row per (outcome, assertion version); ``result_id`` is derived from that pair.
``evaluator_version`` is the version of the mechanism's evaluator that produced (or first produced, when
carried forward) the result: a fixed evaluator bumps it, and re-judging then re-evaluates its results.
``judge_tokens_in``, ``judge_tokens_out`` and ``judge_cost_usd`` are what our judge spent to reach a
rubric result (cost null when no price is configured; all null for other mechanisms and when no
request was answered). They belong to the judgement: a result carried forward or served from the judge
cache keeps the figures of the request that produced it, so summing them over outcomes counts a
judgement once per outcome that holds it; what a judging pass actually sent it reports itself."""

def _int(name: str) -> pa.Field:
    return pa.field(name, pa.int64(), nullable=False)


_CURRENT_FIELDS = [
    *map(_int, ["run", "case_run", "key"]),
    pa.field("met", pa.bool_()),
    _int("evaluator_code"),
    *map(_str, ["run_id", "case_run_id", "case_key", "assertion_key", "evaluator", "outcome_id", "result_id"]),
    _JUDGED_AT,
]

CURRENT_RESULTS = lake_table(
    "current_results",
    2,
    pa.schema([*_CURRENT_FIELDS, pa.field("reason", pa.string())]),
    natural_key=["result_id"],
    first_by="judged_at",
    sort_by=["run", "case_run", "key"],
    # v1 kept no reason: its rows read null (a verdict that excludes one says "no reason recorded").
    older=[OlderVersion(1, pa.schema(_CURRENT_FIELDS), {"reason": None})],
)
"""State kept for the re-score tier: the atoms of each case run's **latest** outcome only. Each judging
pass rewrites the files of the runs it judged (copy on write, in the pass's own transaction), so no
reader resolves "latest" itself. The first five columns are all a re-score reads: ``run``,
``case_run`` and ``key`` are 64-bit codes of the run id, case-run id and assertion key
(:func:`assay.core.ids.id_code`, :func:`~assay.core.ids.name_code`), ``evaluator_code`` the evaluator's
(its name is in the catalog's ``lake_names``); ``reason`` (v2) says why an undetermined result was
not determined, for a verdict that excludes it; the text columns serve every other reader.
``assertion_results`` keeps every atom of every outcome, for history."""

_CODES = pa.list_(pa.field("item", pa.int64(), nullable=False))
_COUNT_FIELDS = [
    *map(_int, ["run", "key", "n", "met", "nulls", "not_met", "units", "failed_units"]),
    pa.field("evaluators", _CODES, nullable=False),
    _str("run_id"),
    pa.field("computed_at", pa.timestamp("us", tz="UTC"), nullable=False),
]
_UNDETERMINED_FIELDS = [pa.field("null_case_runs", _CODES), pa.field("null_reason", pa.string()),
                        pa.field("case_runs", pa.int64())]

RUN_KEY_COUNTS = lake_table(
    "run_key_counts",
    2,
    pa.schema([*_COUNT_FIELDS, *_UNDETERMINED_FIELDS]),
    natural_key=["run", "key"],
    first_by="computed_at",
    sort_by=["run", "key"],
    # v1 rows were summarised without them: they read null, and a re-score that meets a null
    # ``case_runs`` computes its verdicts from the stored atoms instead (the next judging pass of the
    # run rewrites its rows at v2).
    older=[OlderVersion(1, pa.schema(_COUNT_FIELDS), {f.name: None for f in _UNDETERMINED_FIELDS})],
)
"""State kept for the re-score tier, one row per (run, assertion key) of the current results: how many
results, met, undetermined and not met, the case runs with a result and with a failure, the
evaluator codes, and (v2) the case-run codes with an undetermined result, the smallest reason text of
one, and the run's case runs judged (the same on every row of the run). A verdict under any criteria
is arithmetic over these rows (:func:`assay.transforms.rescore.counted_run_verdicts`); each judging pass rewrites the rows of the
runs it judged, in its own transaction, from ``current_results``."""

VERDICTS = lake_table(
    "verdicts",
    1,
    pa.schema(
        [
            *map(_str, ["verdict_id", "run_id", "suite_id", "consumer_key", "criteria", "spec_hash", "verdict"]),
            ("reason", pa.string()),
            *(pa.field(n, pa.int64(), nullable=False) for n in ("counted", "met", "nulls")),
            pa.field("computed_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    ),
    natural_key=["verdict_id"],
    checks={"verdict": [isin(("pass", "fail", "error"))]},
    first_by="computed_at",
)
"""A materialised re-score: one verdict per (run, consumer, criteria spec); ``verdict_id`` derives from the three."""

TABLES: dict[str, LakeTable] = {
    t.name: t for t in (CASE_RUNS, RUNNER_EVALUATIONS, OUTCOMES, ASSERTION_RESULTS, CURRENT_RESULTS, RUN_KEY_COUNTS,
                        VERDICTS)
} | PROJECTED
"""Every lake table this build knows, by name: the evidence, what judging concluded, and the projections."""
