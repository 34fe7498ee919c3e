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
# # Fleet overview
#
# How the fleet is doing: every team's verdicts, per day and consumer; the behaviours that fail in
# more than one team; how one behaviour fared across its rewordings; and what it all cost.
#
# Everything here reads the **projected tables** and their rollup views through `assay.connect()`
# (every relation and column: `docs/reference/query.md`). They are as fresh as the last
# `assay project`; the first cell says when runs are missing from them. The notebook only reads,
# unless you set `PROJECT = True`, which runs one projection pass first (what `assay project` does).
#
# Two rules hold throughout:
#
# - **Undetermined is never a pass.** A result whose `met` is null (the call failed, the judge
#   could not decide) is counted apart, in `undetermined`; `met_rate` is met / (met + not met).
# - **Mixed evaluators are different measurements.** Where `mixed_evaluators` is true, the figures
#   add up results of more than one evaluator (our transcript check, our judge, a vendor's
#   guardrail...); read `evaluators` before comparing them with anything.

# %%
PROJECT = False  # True: bring the projected tables up to date first (writes to the lake, like `assay project`)

import altair as alt
import polars as pl
from analyst import open_lake, row, table

con = open_lake(project=PROJECT)

# %% [markdown]
# ## Verdicts per day, team and consumer
#
# `verdict_counts` has one row per day, team, suite and consumer. `pass`, `fail` and `error` are
# the verdicts **now**: each consumer's current criteria over each run's current results. The
# `stamped_*` columns are the verdicts stamped when the runs were finalised, under the criteria
# version of their start: what the gates said at the time. Where they differ, a re-judge or a new
# criteria version has changed the answer since. `error` means no verdict was possible (a case that
# did not execute, a counted result that could not be determined): it is not a failure of the
# agent, and never a pass.

# %%
verdicts = table(con, "SELECT * FROM verdict_counts ORDER BY date, team_id, suite_key, consumer_key",
                 "no finalised run is projected yet")
verdicts

# %%
by_verdict = verdicts.unpivot(index=["date", "team_id", "suite_key", "consumer_key"],
                              on=["pass", "fail", "error", "not_judged"], variable_name="verdict", value_name="count")
alt.Chart(by_verdict.filter(pl.col("count") > 0)).mark_bar().encode(
    x=alt.X("date:O", title="day"),
    y=alt.Y("sum(count):Q", title="runs"),
    color=alt.Color("verdict:N", scale=alt.Scale(domain=["pass", "fail", "error", "not_judged"],
                                                 range=["#4c9a2a", "#d62728", "#ff9f1c", "#999999"])),
    column=alt.Column("consumer_key:N", title="consumer"),
    row=alt.Row("team_id:N", title="team"),
    tooltip=["date", "team_id", "suite_key", "consumer_key", "verdict", "count"],
).properties(width=160, height=120, title="Verdicts now, per day, team and consumer")

# %% [markdown]
# The runs whose verdict changed since it was stamped, and why it reads as it does now
# (`run_verdicts`, on the stamped version's row):

# %%
changed = table(con, """SELECT team_id, suite_key, consumer_key, run_id, stamped_verdict, verdict, reason
                        FROM run_verdicts WHERE changed ORDER BY team_id, suite_key, consumer_key, run_id""",
                "no stamped verdict has changed since its run was finalised")
changed

# %% [markdown]
# ## Behaviours failing across teams
#
# `behaviour_teams` has one row per behaviour (assertion key) and week: in how many teams it
# failed at least once (`teams_failing`), out of the teams that measured it. Over any period,
# the table macro `common_failures(min_teams, since, until)` answers "which behaviours failed in at
# least `min_teams` teams": with forty teams failing the same behaviour, the fix is probably in a
# shared template or the platform, not in any one team's prompt. Set the period and the minimum
# below; by default, every week in the data and one team.

# %%
MIN_TEAMS = 1
SINCE, UNTIL = row(con, "SELECT min(week), max(week) + 7 FROM behaviour_stats")  # [since, until)
common = table(con, "SELECT * FROM common_failures(?, ?, ?)", params=[MIN_TEAMS, SINCE, UNTIL],
               what=f"no behaviour failed in {MIN_TEAMS} team(s) or more between {SINCE} and {UNTIL}"
               if SINCE else "no behaviour has a result yet")
common

# %% [markdown]
# Each behaviour's met rate per team (`fleet_weekly`, all weeks together): red where it fails, grey
# where nothing was decided (every result undetermined), blank where the team does not measure it.
# Hover for the counts and the evaluators.

# %%
per_team = table(con, """SELECT assertion_key, team_id, CAST(sum(results) AS BIGINT) AS results,
                            CAST(sum(met) AS BIGINT) AS met, CAST(sum(not_met) AS BIGINT) AS not_met,
                            CAST(sum(undetermined) AS BIGINT) AS undetermined,
                            sum(met) / nullif(sum(met) + sum(not_met), 0) AS met_rate,
                            list_sort(list_distinct(flatten(list(evaluators)))) AS evaluators,
                            bool_or(mixed_evaluators) AS mixed_evaluators
                     FROM fleet_weekly GROUP BY ALL ORDER BY assertion_key, team_id""",
                 "no behaviour has a result yet")
cells = alt.Chart(per_team.with_columns(pl.col("evaluators").list.join(", "))).encode(
    x=alt.X("team_id:N", title="team"),
    y=alt.Y("assertion_key:N", title="behaviour", sort=alt.EncodingSortField("met_rate", order="ascending"),
            axis=alt.Axis(labelLimit=0)),
    tooltip=["assertion_key", "team_id", "results", "met", "not_met", "undetermined", "met_rate", "evaluators",
             "mixed_evaluators"],
)
(cells.mark_rect(color="#bbbbbb").transform_filter("datum.met_rate === null")
 + cells.mark_rect().encode(color=alt.Color("met_rate:Q", title="met rate",
                                            scale=alt.Scale(domain=[0, 1], scheme="redyellowgreen")))
 ).properties(title="Met rate per behaviour and team (undetermined results left out)")

# %% [markdown]
# ## One behaviour across its assertion versions
#
# Rewording an assertion starts a new version; the key keeps the history. `behaviour_trend` has one
# row per key, version and week, so a rewording shows as a new line rather than as a jump in the old
# one. By default the behaviour shown is the one with the most versions (then the most failures);
# set `BEHAVIOUR` to see another. A run re-judged after a rewording counts under the new version.

# %%
BEHAVIOUR = None  # an assertion key; None: the one with the most versions, then the most failures
if BEHAVIOUR is None:
    (BEHAVIOUR,) = row(con, """SELECT assertion_key FROM behaviour_trend GROUP BY assertion_key
                               ORDER BY count(DISTINCT assertion_version) DESC, sum(not_met) DESC,
                                        assertion_key""") or (None,)
trend = table(con, "SELECT * FROM behaviour_trend WHERE assertion_key = ? ORDER BY assertion_version, week",
              params=[BEHAVIOUR],
              what=f"no result of the behaviour {BEHAVIOUR}" if BEHAVIOUR else "no behaviour to show")
if BEHAVIOUR:
    print(f"Behaviour: {BEHAVIOUR}, {trend['assertion_version'].n_unique()} version(s)")
trend

# %%
alt.Chart(trend.with_columns(pl.col("evaluators").list.join(", "))).mark_line(point=alt.OverlayMarkDef(size=80)).encode(
    x=alt.X("week:T", title="week", timeUnit="yearmonthdate"),
    y=alt.Y("met_rate:Q", title="met rate", scale=alt.Scale(domain=[0, 1])),
    color=alt.Color("assertion_version:N", title="version"),
    tooltip=["assertion_version", "week", "teams", "runs", "results", "met", "not_met", "undetermined", "met_rate",
             "evaluators"],
).properties(width=420, title=f"{BEHAVIOUR}: met rate per week and assertion version")

# %% [markdown]
# ## Costs
#
# `runner_costs`: what the runners reported spending and what our judge spent, per team, week and
# runner. A null is "not reported" (a structural check costs nothing to run; a runner may not report
# its cost; no judge price configured), not zero. `consumer_costs` charges each consumer the full
# cost of every run it reads: runs serve every consumer at once, so the consumers' figures overlap
# and never add up to the fleet's total.

# %%
costs = table(con, "SELECT * FROM runner_costs ORDER BY team_id, week, runner", "no run is projected yet")
costs

# %%
spent = costs.unpivot(index=["team_id", "week", "runner"], on=["runner_cost_usd", "judge_cost_usd"],
                      variable_name="spent_on", value_name="usd").drop_nulls("usd")
if spent.is_empty():
    print("No cost was reported by any runner, nor priced for the judge.")
alt.Chart(spent).mark_bar().encode(
    x=alt.X("team_id:N", title="team"),
    y=alt.Y("sum(usd):Q", title="US dollars"),
    color=alt.Color("spent_on:N", title="spent on"),
    tooltip=["team_id", "week", "runner", "spent_on", "usd"],
).properties(width=240, title="Cost per team: runners and judge")

# %%
table(con, """SELECT consumer_key, team_id, CAST(sum(runs) AS BIGINT) AS runs,
                     CAST(sum(case_runs) AS BIGINT) AS case_runs,
                     sum(total_cost_usd) AS total_cost_usd
              FROM consumer_costs GROUP BY ALL ORDER BY consumer_key, team_id""", "no run is projected yet")
