# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Evidence overview
#
# What the lake holds, and what judging concluded, for any workspace: the case runs each team's
# runners reported, how each behaviour's current results came out, why results could not be
# determined, what the vendors' own evaluators said, and where a vendor and we measured the same
# behaviour. Every relation and column is in `docs/reference/query.md`.
#
# The first sections read the evidence itself (the lake tables and the catalog), so they are always
# current; the last reads a projected table, as fresh as the last `assay project`. Nothing here
# writes, unless you set `PROJECT = True` (one projection pass first). Each section says so when its
# table has no rows.

# %%
PROJECT = False  # True: bring the projected tables up to date first (writes to the lake, like `assay project`)
TOP = 25  # how many behaviours and reasons to show at most

import altair as alt
import polars as pl
from analyst import open_lake, table

con = open_lake(project=PROJECT)

# %% [markdown]
# ## Case runs per team, runner and status
#
# A case run is one execution of one case. Its status says whether the case **executed**, never
# whether it was any good: a case run in `error` is a case that did not execute (the call failed, the
# vendor refused), so it has no results to judge, and a verdict counting on it is `error`.

# %%
case_runs = table(con, """SELECT team_id, runner, status, count(*) AS case_runs,
                                 round(sum(coalesce(cost_usd, 0)), 3) AS cost_usd
                          FROM case_runs GROUP BY ALL ORDER BY ALL""", "no case run in the lake yet")
case_runs

# %%
alt.Chart(case_runs).mark_bar().encode(
    x=alt.X("sum(case_runs):Q", title="case runs"),
    y=alt.Y("team_id:N", title="team"),
    color=alt.Color("status:N", scale=alt.Scale(domain=["executed", "error"], range=["#4c9a2a", "#ff9f1c"])),
    row=alt.Row("runner:N", title="runner"),
    tooltip=["team_id", "runner", "status", "case_runs", "cost_usd"],
).properties(width=320, title="Case runs per team and runner")

# %%
table(con, """SELECT team_id, run_id, case_key, source_ref AS call, runner, error
              FROM case_runs WHERE status <> 'executed' ORDER BY team_id, run_id, case_key, call""",
      "every case run executed")

# %% [markdown]
# ## Each behaviour's current results
#
# `current_results` holds the results of each case run's latest outcome (`latest_outcomes`): a
# re-judge replaces them, the older ones stay in `assertion_results`. `met` is null when a result
# could not be determined: counted apart, **never a pass** and never a failure. Failure rate is
# failed / decided. A behaviour judged by more than one evaluator has a row per evaluator: they are
# different measurements, never added together here.

# %%
failures = table(con, """SELECT team_id, assertion_key, evaluator, count(*) AS results,
                                count(*) FILTER (WHERE met) AS met,
                                count(*) FILTER (WHERE NOT met) AS failed,
                                count(*) FILTER (WHERE met IS NULL) AS undetermined,
                                round(count(*) FILTER (WHERE NOT met) / nullif(count(met), 0), 3) AS failure_rate
                         FROM current_results GROUP BY ALL
                         ORDER BY failure_rate DESC NULLS LAST, team_id, assertion_key, evaluator""",
                 "nothing has been judged yet")
failures

# %%
shown = failures.head(TOP).with_columns(behaviour=pl.format("{} ({}, {})", "assertion_key", "team_id", "evaluator"))
outcomes = shown.unpivot(index=["behaviour", "evaluator"], on=["met", "failed", "undetermined"],
                         variable_name="result", value_name="count")
alt.Chart(outcomes).mark_bar().encode(
    x=alt.X("sum(count):Q", title="current results", stack="normalize"),
    y=alt.Y("behaviour:N", title=None, sort=shown["behaviour"].to_list(), axis=alt.Axis(labelLimit=0)),
    color=alt.Color("result:N", scale=alt.Scale(domain=["met", "failed", "undetermined"],
                                                range=["#4c9a2a", "#d62728", "#999999"])),
    tooltip=["behaviour", "evaluator", "result", "count"],
).properties(width=360, title=f"Current results: the {shown.height} behaviour(s) and evaluator(s) failing most")

# %% [markdown]
# ## Why results could not be determined
#
# The most frequent reasons given for an undetermined result: a case run that did not execute, a
# judge that is not configured or could not decide, a vendor that reported an error. Many results
# undetermined for one reason is usually one thing to fix.

# %%
table(con, f"""SELECT evaluator, coalesce(reason, '(no reason given)') AS reason, count(*) AS results,
                      count(DISTINCT team_id) AS teams, list_sort(list_distinct(list(assertion_key)))[:5] AS some_keys
               FROM current_results WHERE met IS NULL GROUP BY ALL
               ORDER BY results DESC, evaluator, reason LIMIT {int(TOP)}""",
      "every current result was determined")

# %% [markdown]
# ## What the vendors' own evaluators said
#
# `runner_evaluations` keeps a runner's own judgments of each case run on the vendor's scale (a
# guardrail's pass or fail, a 0-100 score), with `met` as read through `docs/vendor-mappings.md`
# (null: the vendor could not say). They are evidence, not our verdicts: a consumer counts one only
# through an assertion of the `vendor.evaluation` mechanism.

# %%
vendor = table(con, """SELECT team_id, evaluator, name, count(*) AS evaluations,
                              count(*) FILTER (WHERE met) AS met, count(*) FILTER (WHERE NOT met) AS not_met,
                              count(*) FILTER (WHERE met IS NULL) AS undetermined, round(avg(value), 3) AS mean_value
                       FROM runner_evaluations GROUP BY ALL ORDER BY team_id, evaluator, name""",
               "no runner reported evaluations of its own")
vendor

# %% [markdown]
# ## Where a vendor and we measured the same behaviour
#
# A `vendor.evaluation` assertion that declares `same_behaviour_as: [our_key]` pairs the vendor's
# result with ours on every case run both judged (`evaluator_pairs`, a projected table; the
# `judge_vs_vendor` notebook goes further). Rows where `agree` is false are where they part.

# %%
pairs = table(con, """SELECT p.team_id, p.behaviour, p.vendor_key, p.case_key, c.source_ref AS call,
                             p.our_evaluator, p.our_met, p.vendor_evaluator, p.vendor_met, p.agree
                      FROM evaluator_pairs p LEFT JOIN case_runs c USING (case_run_id)
                      ORDER BY p.team_id, p.behaviour, p.case_key, call""",
              "no pair: no vendor evaluation names one of our behaviours in `same_behaviour_as`, "
              "or no such run is projected yet (`assay project`)")
print(f"{pairs.height} pair(s); they disagree on {pairs.filter(pl.col('agree').not_()).height}, "
      f"{pairs['agree'].null_count()} with an undetermined side.")
pairs
