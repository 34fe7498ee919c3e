"""The derived views of :func:`assay.storage.query.connect`: the SQL home of "latest outcome" and "verdict now".

- ``latest_outcomes``: one row per case run, its latest outcome (greatest ``judged_at``, ties broken by
  the greatest ``outcome_id``). The SQL form of :func:`assay.transforms.verdicts.latest_outcomes`, as
  ``current_results`` is of :func:`~assay.transforms.verdicts.latest`; tests keep each pair in agreement.
- ``current_results``: the atoms (``assertion_results`` rows) of those outcomes -- unless the lake keeps a
  ``current_results`` table of its own (written by each judging pass), which then takes the name.
- ``verdicts_now``: per run and consumer, the criteria version stamped at the run's start, the verdict
  stamped at finalisation, and the verdict the current results give under that same criteria -- the
  rules of :mod:`assay.transforms.verdicts` (error, then fail, then pass), verdict and counts only: the
  reason text is written by ``assay verdicts``.

``criteria_terms`` (the counted keys of each criteria version) is what ``verdicts_now`` joins against.
The fleet rollups (``verdict_counts``, ``fleet_weekly``, ``behaviour_teams``, ...) and the table macro
``common_failures`` come from :mod:`.fleet_views`; the turn-level voice metrics (``turns``, ``turn_metrics``,
``turn_metrics_daily``) from :mod:`.voice_views`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from assay.core.criteria import CriteriaSpec

from .fleet_views import FLEET, MACROS
from .voice_views import VOICE

if TYPE_CHECKING:
    import duckdb

__all__ = ["CRITERIA_TERMS", "DERIVED", "criteria_terms", "install"]

CRITERIA_TERMS = pa.schema(
    [
        pa.field("criteria_id", pa.string(), nullable=False),
        pa.field("term", pa.string(), nullable=False,
                 metadata={"doc": "`required` (one key) or `threshold` (a group)."}),
        pa.field("term_index", pa.int32(), nullable=False,
                 metadata={"doc": "The term's number: the required key's, or the group's index in the spec."}),
        pa.field("assertion_key", pa.string(), nullable=False, metadata={"doc": "A key the term counts."}),
        pa.field("min", pa.float64(), metadata={"doc": "The group's lowest passing met-ratio, inclusive; null for a "
                                                        "required key."}),
        pa.field("allow_count", pa.int64(), metadata={"doc": "The criteria's `allow_undetermined.count` (the same on "
                                                             "each of its rows); null when not given."}),
        pa.field("allow_ratio", pa.float64(), metadata={"doc": "Its `allow_undetermined.ratio`; null when not given."}),
    ]
)
"""One row per counted key of a criteria version and the term that counts it."""

_LATEST_OUTCOMES = """
SELECT * FROM outcomes
QUALIFY row_number() OVER (PARTITION BY case_run_id ORDER BY judged_at DESC, outcome_id DESC) = 1
"""

_CURRENT_RESULTS = "SELECT * FROM assertion_results WHERE outcome_id IN (SELECT outcome_id FROM latest_outcomes)"

_VERDICTS_NOW = """
WITH stamped AS (
  SELECT rc.run_id, rc.consumer_key, r.suite_id, r.team_id, rc.criteria_id, rc.version AS criteria_version,
         c.spec, rc.verdict AS stamped, rc.verdict_reason AS stamped_reason
  FROM run_criteria rc JOIN criteria c USING (criteria_id) JOIN runs r USING (run_id)
), judged AS (
  SELECT DISTINCT run_id FROM current_results
), counted AS (
  SELECT s.run_id, s.consumer_key, count(*) AS counted, count(*) FILTER (WHERE x.met) AS met,
         count(*) FILTER (WHERE x.met IS NULL) AS nulls, any_value(k.allow_count) AS allow_count,
         any_value(k.allow_ratio) AS allow_ratio
  FROM stamped s
  JOIN (SELECT DISTINCT criteria_id, assertion_key, allow_count, allow_ratio FROM criteria_terms) k USING (criteria_id)
  JOIN current_results x ON x.run_id = s.run_id AND x.assertion_key = k.assertion_key
  GROUP BY s.run_id, s.consumer_key
), allowed AS (  -- within the allowance, undetermined results are excluded
  SELECT *, nulls > 0 AND nulls <= coalesce(allow_count, counted * allow_ratio + CAST(1e-9 AS DOUBLE), 0) AS within
  FROM counted
), terms AS (
  SELECT s.run_id, s.consumer_key, t.term, t.term_index, any_value(t.min) AS min,
         count(x.assertion_key) AS results, count(*) FILTER (WHERE x.met) AS met,
         count(*) FILTER (WHERE NOT x.met) AS not_met, count(x.assertion_key) FILTER (WHERE x.met IS NULL) AS nulls
  FROM stamped s
  JOIN criteria_terms t USING (criteria_id)
  LEFT JOIN current_results x ON x.run_id = s.run_id AND x.assertion_key = t.assertion_key
  GROUP BY s.run_id, s.consumer_key, t.term, t.term_index
), rules AS (
  SELECT t.run_id, t.consumer_key, bool_or(t.results = 0) AS missing,
         bool_or(coalesce(a.within, false) AND t.results > 0 AND t.results = t.nulls) AS only_excluded,
         bool_or(CASE t.term WHEN 'required' THEN t.not_met > 0
                 ELSE CAST(t.met AS DOUBLE) / (t.results - CASE WHEN a.within THEN t.nulls ELSE 0 END) < t.min END)
           AS failing
  FROM terms t LEFT JOIN allowed a USING (run_id, consumer_key) GROUP BY t.run_id, t.consumer_key
), now AS (
  SELECT s.*,
         CASE WHEN j.run_id IS NULL THEN NULL
              WHEN (coalesce(n.nulls, 0) > 0 AND NOT n.within) OR coalesce(r.missing, false)
                   OR coalesce(r.only_excluded, false) THEN 'error'
              WHEN coalesce(r.failing, false) THEN 'fail'
              ELSE 'pass' END AS verdict,
         CASE WHEN j.run_id IS NOT NULL THEN coalesce(n.counted, 0) - CASE WHEN n.within THEN n.nulls ELSE 0 END
              END AS counted,
         CASE WHEN j.run_id IS NOT NULL THEN coalesce(n.met, 0) END AS met,
         CASE WHEN j.run_id IS NOT NULL THEN coalesce(n.nulls, 0) END AS nulls
  FROM stamped s
  LEFT JOIN judged j USING (run_id)
  LEFT JOIN allowed n USING (run_id, consumer_key)
  LEFT JOIN rules r USING (run_id, consumer_key)
)
SELECT *, coalesce(stamped <> verdict, false) AS changed FROM now
"""

_CORE: dict[str, tuple[str, str, dict[str, str]]] = {
    "latest_outcomes": (
        _LATEST_OUTCOMES,
        "One row per judged case run: its latest outcome, the one with the greatest `judged_at`, ties broken "
        "by the greatest `outcome_id` (in Polars: `assay.transforms.verdicts.latest_outcomes`, and `latest` for "
        "atoms). Every column of `outcomes`.",
        {},
    ),
    "current_results": (
        _CURRENT_RESULTS,
        "The atoms of each case run's latest outcome: the `assertion_results` rows whose `outcome_id` is in "
        "`latest_outcomes`. Every column of `assertion_results`. Count and filter these, never all of "
        "`assertion_results` (which holds every judging pass).",
        {},
    ),
    "verdicts_now": (
        _VERDICTS_NOW,
        "Per run and consumer: the criteria version stamped at the run's start, the verdict stamped at "
        "finalisation, and the verdict the current results give under that criteria now (the rules of "
        "`assay verdicts`: error, then fail, then pass). They differ only after a re-judge. The reason text "
        "of the verdict now is not computed here: `assay verdicts RUN` gives it.",
        {
            "criteria_id": "The criteria version stamped at the run's start (`criteria.criteria_id`).",
            "criteria_version": "Its version number.",
            "stamped": "The verdict stamped when the run was finalised (pass, fail, error); null before.",
            "stamped_reason": "Why, as stamped.",
            "verdict": "The verdict now, from `current_results`; null when the run has no current results.",
            "counted": "Current results the criteria counts, less the undetermined ones it excludes (null when not "
                       "judged).",
            "met": "Of those, how many are met.",
            "nulls": "Of those, how many could not be determined (more than the criteria's `allow_undetermined` "
                     "makes the verdict error; within it they are excluded).",
            "changed": "True when the verdict now differs from the stamped one (false when either is null).",
        },
    ),
}

DERIVED: dict[str, tuple[str, str, dict[str, str]]] = {**_CORE, **FLEET, **VOICE}
"""Each derived view: its SQL, what it is, and its columns' meaning (a view that repeats a table's
columns documents them there). The fleet rollups over the projected tables are :mod:`.fleet_views`'."""


def criteria_terms(criteria: pa.Table) -> pa.Table:
    """The counted keys of every criteria version in ``criteria`` (catalog rows: criteria_id, spec as JSON text).

    A required key is its own term (``term_index`` numbers the required keys); a threshold group's keys share
    one (``term_index`` is the group's index in the spec, ``min`` its ratio). Ignored keys are never counted,
    even when a group names them; a key listed twice counts once per term.
    """
    rows: list[tuple[str, str, int, str, float | None, int | None, float | None]] = []
    for criteria_id, text in zip(criteria["criteria_id"].to_pylist(), criteria["spec"].to_pylist(), strict=True):
        spec = CriteriaSpec.model_validate(json.loads(text))
        a = spec.allow_undetermined
        allow = (a.count, a.ratio) if a is not None else (None, None)
        rows += [(criteria_id, "required", i, key, None, *allow) for i, key in enumerate(spec.counted_required())]
        rows += [(criteria_id, "threshold", g, key, low, *allow) for g, keys, low in spec.counted_groups()
                 for key in keys]
    return pa.Table.from_pylist([dict(zip(CRITERIA_TERMS.names, r, strict=True)) for r in rows], schema=CRITERIA_TERMS)


def install(con: "duckdb.DuckDBPyConnection", terms: pa.Table, *, provided: Iterable[str] = ()) -> None:
    """Register ``terms`` as ``criteria_terms`` and create the derived views over the existing relations.

    A view (or macro) named in ``provided`` is not created: the lake already keeps that relation as a table of its
    own (the lake's ``current_results``, maintained by every judging pass, is this view's rule, kept).
    """
    con.register("_criteria_terms", terms)
    con.execute("CREATE TABLE criteria_terms AS SELECT * FROM _criteria_terms")
    con.unregister("_criteria_terms")
    for name, (sql, _, _) in DERIVED.items():
        if name not in set(provided):
            con.execute(f'CREATE VIEW "{name}" AS {sql}')
    for name, sql in MACROS.items():
        if name not in set(provided):
            con.execute(sql)
