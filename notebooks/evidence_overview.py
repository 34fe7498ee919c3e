# %% [markdown]
# # Evidence overview
#
# What the lake holds, and what judging concluded, asked of DuckDB. Open as a notebook (Jupytext
# percent format: VS Code, JupyterLab with Jupytext) or run as a script; it reads the workspace of
# `ASSAY_HOME` (default `./.assay`; `make demo` fills one). The test suite executes it against the
# demo data.

# %%
from assay.core.settings import Settings
from assay.storage.lake import Lake
from assay.storage.query import connect

con = connect(Lake.from_settings(Settings()))

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
# `met` is null when a result could not be determined: counted apart, never as a pass.

# %%
failures = con.sql(
    """WITH latest AS (
         SELECT * FROM assertion_results
         QUALIFY judged_at = max(judged_at) OVER (PARTITION BY case_run_id)
       )
       SELECT team_id, assertion_key, evaluator,
              count(*) AS results,
              count(*) FILTER (WHERE met = false) AS failed,
              count(*) FILTER (WHERE met IS NULL) AS undetermined,
              round(count(*) FILTER (WHERE met = false) / count(*), 3) AS failure_rate
       FROM latest GROUP BY ALL ORDER BY failure_rate DESC, team_id, assertion_key"""
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
       JOIN assertion_results r USING (case_run_id)
       WHERE e.name = 'handles_out_of_area' AND r.assertion_key = 'declines_out_of_area'
       QUALIFY r.judged_at = max(r.judged_at) OVER (PARTITION BY r.case_run_id)
       ORDER BY call"""
).pl()
print(disagreement)
print("disagree on", disagreement.filter(
    (disagreement["vendor_says"] == "pass") != disagreement["transcript_check_met"]).height, "call(s)")
