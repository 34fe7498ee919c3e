# %% [markdown]
# # Evidence overview
#
# What the lake holds, and what judging concluded, asked of DuckDB through `assay.connect()` (every
# view and column: `docs/reference/query.md`). Open as a notebook (Jupytext percent format: VS Code,
# JupyterLab with Jupytext) or run as a script; it reads the workspace of `ASSAY_HOME` (default
# `./.assay`; `make demo` fills one). The test suite executes it against the demo data.

# %%
import assay

con = assay.connect()

# %% [markdown]
# ## Case runs per team and runner
# Status says whether a case executed, never whether it was any good.

# %%
case_runs = con.sql(
    """SELECT team_id, runner, status, count(*) AS case_runs, round(sum(coalesce(cost_usd, 0)), 3) AS cost_usd
       FROM case_runs GROUP BY ALL ORDER BY ALL"""
).pl()
print(case_runs)

# %% [markdown]
# ## Failure rate per assertion key, over each case run's latest outcome
# `current_results` holds the results of each case run's latest outcome (`latest_outcomes`); `met` is
# null when a result could not be determined: counted apart, never as a pass.

# %%
failures = con.sql(
    """SELECT team_id, assertion_key, evaluator,
              count(*) AS results,
              count(*) FILTER (WHERE met = false) AS failed,
              count(*) FILTER (WHERE met IS NULL) AS undetermined,
              round(count(*) FILTER (WHERE met = false) / count(*), 3) AS failure_rate
       FROM current_results GROUP BY ALL ORDER BY failure_rate DESC, team_id, assertion_key"""
).pl()
print(failures)

# %% [markdown]
# ## Evaluator disagreement: the vendor's guardrail against our own transcript check
# The same behaviour (telling an out-of-area caller plainly) measured twice: by Hamming's guardrail
# (`hamming:guardrail`) and by our `declines_out_of_area` transcript assertion. Different
# evaluators are different measurements; this is where they part.

# %%
disagreement = con.sql(
    """SELECT c.case_key, c.source_ref AS call,
              e.verdict AS vendor_says, r.met AS transcript_check_met
       FROM runner_evaluations e
       JOIN case_runs c USING (case_run_id)
       JOIN current_results r USING (case_run_id)
       WHERE e.name = 'handles_out_of_area' AND r.assertion_key = 'declines_out_of_area'
       ORDER BY call"""
).pl()
print(disagreement)
print("disagree on", disagreement.filter(
    (disagreement["vendor_says"] == "pass") != disagreement["transcript_check_met"]).height, "call(s)")
