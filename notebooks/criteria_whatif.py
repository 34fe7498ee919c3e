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
# # Criteria what-if
#
# Before a consumer adopts new criteria, ask what they would have said about the runs already judged.
# A **candidate spec** (what a consumer's `criteria:` entry holds in a bundle: `required`,
# `threshold`, `ignore`, `allow_undetermined`) is applied to every finalised run in scope, over its
# current results, and compared with the verdict stamped on the run when it was finalised. This is a
# re-score: a query over stored results. Nothing runs, nothing is judged, nothing is written.
#
# What to look at: which teams and consumers would see verdicts **flip**, in which direction
# (pass to fail is a gate that would have stopped something it let through), and on which **keys**:
# the required keys failed and threshold groups missed under one criteria and not the other.
#
# Caveats:
#
# - The candidate replaces each consumer's criteria whole, for every suite in scope. A suite whose
#   assertions lack a key the candidate names is skipped, and listed: the candidate is not its to judge.
# - **Undetermined is never a pass.** Without `allow_undetermined`, one undetermined counted result
#   makes the verdict `error`; with it, up to the allowance is excluded and reported.
# - Runs re-judged since they were stamped are compared over their current results: a flip can
#   come from the new results as well as from the candidate.
#
# To adopt a candidate, put it under the consumer's `criteria:` in the bundle and `assay load` it
# (`assay plan` calls that a re-score). `assay rescore --spec FILE` asks the same questions from the
# command line.

# %%
# The candidate: a spec as YAML text, or the path of a spec file (YAML or JSON) in CANDIDATE_FILE, which wins.
# The default asks: what if every consumer required the demo's out-of-area behaviour and the agent's
# area check, and tolerated half of the counted results being undetermined?
CANDIDATE = """
required: [declines_out_of_area, checks_area_with_tool]
allow_undetermined: {ratio: 0.5}
"""
CANDIDATE_FILE = None
SINCE = None  # a datetime.date: only runs created on or after it
TEAM = None  # a team id: only its runs
CONSUMER = None  # a consumer key: only its stamped verdicts

import altair as alt
import polars as pl
import yaml
from analyst import open_lake, table

from assay.core.criteria import CriteriaSpec
from assay.flows.rescoring import rescore
from assay.flows.selection import read_spec
from assay.flows.whatif import whatif
from assay.flows.workspace import open_workspace

con = open_lake(projected=False)  # a what-if reads the judged results themselves, not the projected tables
spec = read_spec(CANDIDATE_FILE) if CANDIDATE_FILE else CriteriaSpec.model_validate(yaml.safe_load(CANDIDATE))
print("Candidate:", spec.model_dump())
ws = open_workspace()

# %% [markdown]
# ## The criteria in force
#
# Each consumer's latest criteria version per suite, to read the candidate against. The what-if itself
# compares each run with the verdict stamped on it, under the version stamped at its start (maybe older).

# %%
table(con, """SELECT s.team_id, s.suite_key, c.consumer_key, c.version, c.spec
              FROM criteria c JOIN suites s USING (suite_id)
              QUALIFY c.version = max(c.version) OVER (PARTITION BY c.suite_id, c.consumer_key)
              ORDER BY s.team_id, s.suite_key, c.consumer_key""", "no criteria loaded: `assay load` a bundle")

# %% [markdown]
# ## Over history: flips per team, suite and consumer

# %%
answer = whatif(ws, spec, since=SINCE, team=TEAM, consumer=CONSUMER)
for skip in answer["skipped"]:
    print(f"Skipped {skip['suite']}: {skip['why']}")
groups = pl.DataFrame(answer["groups"], schema={
    "team": pl.String, "suite": pl.String, "consumer": pl.String, "runs": pl.Int64, "flips": pl.Int64,
    "pass_to_fail": pl.Int64, "fail_to_pass": pl.Int64, "to_error": pl.Int64, "from_error": pl.Int64})
if groups.is_empty():
    print("No finalised run in scope carries a stamped verdict the candidate can judge: widen the scope "
          "(SINCE, TEAM, CONSUMER) or name keys the suites have.")
print(f"{answer['runs']} run(s) in scope; {groups['flips'].sum()} verdict(s) would flip.")
groups

# %%
directions = groups.with_columns(
    other=pl.col("flips") - pl.col("pass_to_fail") - pl.col("fail_to_pass") - pl.col("to_error") - pl.col("from_error"),
).unpivot(index=["team", "suite", "consumer"], on=["pass_to_fail", "fail_to_pass", "to_error", "from_error", "other"],
          variable_name="direction", value_name="count").filter(pl.col("count") > 0)
alt.Chart(directions).mark_bar().encode(
    x=alt.X("sum(count):Q", title="verdicts that would flip"),
    y=alt.Y("consumer:N", title="consumer"),
    color=alt.Color("direction:N", title="from -> to"),
    row=alt.Row("team:N", title="team"),
    tooltip=["team", "suite", "consumer", "direction", "count"],
).properties(width=320, title="Flips per team and consumer, by direction")

# %% [markdown]
# ## Which runs flip, and on which keys
#
# `keys`: the keys that decide one of the two verdicts and not the other (a required key failed, the
# keys of a threshold group missed). The keys that come up most are where the candidate and today's
# criteria really differ.

# %%
flips = pl.DataFrame(answer["flips"], schema={
    "run_id": pl.String, "team": pl.String, "suite": pl.String, "consumer": pl.String, "created_at": pl.String,
    "stamped": pl.String, "verdict": pl.String, "reason": pl.String, "keys": pl.List(pl.String)})
flips

# %%
by_key = flips.explode("keys").drop_nulls("keys").group_by("keys", "team").len("flips").rename({"keys": "key"})
alt.Chart(by_key).mark_bar().encode(
    x=alt.X("sum(flips):Q", title="flips the key takes part in"),
    y=alt.Y("key:N", title="key", sort="-x", axis=alt.Axis(labelLimit=0)),
    color=alt.Color("team:N", title="team"),
    tooltip=["key", "team", "flips"],
).properties(width=320, title="Keys behind the flips")

# %% [markdown]
# ## One suite and consumer, run by run
#
# The same candidate over one suite's history for one consumer: every run's verdict under it next to
# the stamped one, with the reason and how many case runs it counted. By default, the suite and
# consumer of the first flip above (else of the first group); set `SUITE` and `ONE_CONSUMER` to choose.

# %%
SUITE, ONE_CONSUMER = None, None  # e.g. "acme-plumbing/main-line", "publish_gate"
first = (flips if flips.height else groups).head(1)
if SUITE is None and first.height:
    SUITE, ONE_CONSUMER = first["suite"][0], first["consumer"][0]
if SUITE is None:
    print("No suite to show: the what-if above judged none.")
    one = pl.DataFrame()
else:
    scored = rescore(ws, SUITE, ONE_CONSUMER, spec=spec)
    one = pl.DataFrame(scored["runs"], infer_schema_length=None)
    print(f"{SUITE}, {ONE_CONSUMER}: {len(scored['runs'])} run(s), {len(scored['flips'])} flip(s) under the candidate.")
one

# %%
pairs = (one.group_by("stamped", "verdict").len("runs").fill_null("none") if one.height
         else pl.DataFrame(schema={"stamped": pl.String, "verdict": pl.String, "runs": pl.UInt32}))
order = ["pass", "fail", "error", "none"]
cells = alt.Chart(pairs).encode(x=alt.X("verdict:N", title="under the candidate", sort=order),
                                y=alt.Y("stamped:N", title="stamped", sort=order))
(cells.mark_rect().encode(color=alt.Color("runs:Q", scale=alt.Scale(scheme="oranges")))
 + cells.mark_text(fontSize=16).encode(text="runs:Q")).properties(
    width=200, height=160, title=f"{SUITE} / {ONE_CONSUMER}: stamped verdict against the candidate's")

# %%
ws.close()
