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
# # Our evaluation against the vendor's
#
# A vendor's runner often judges calls itself (a guardrail, a scorer, a criterion). When a bundle
# says a vendor evaluation measures the same behaviour as one of our assertions
# (`same_behaviour_as: [our_key]` on the `vendor.evaluation` assertion), every case run both judged
# becomes a **pair** in `evaluator_pairs`: our result, the vendor's, and whether they agree.
# `evaluator_agreement` rolls them up per behaviour, vendor evaluation, evaluators and team.
#
# What to look at: the agreement rate (how far the vendor's number can stand in for ours, or the
# reverse), which way the disagreements go, and the disagreeing calls with both reasons side by side,
# which usually show which of the two evaluators is wrong.
#
# Caveats: the two are **different measurements**, never one evaluator checked against the truth. A
# pair where either side could not decide (`met` null: the call failed, the vendor reported an
# error) agrees with nothing and disagrees with nothing: it is left out of the rate (`decided`
# counts the rest), and undetermined is never a pass.
#
# The pairs are projected tables: as fresh as the last `assay project` (the first cell says when runs
# are missing). `PROJECT = True` runs one projection pass first.

# %%
PROJECT = False  # True: bring the projected tables up to date first (writes to the lake, like `assay project`)

import altair as alt
import polars as pl
from analyst import open_lake, table

con = open_lake(project=PROJECT)

# %% [markdown]
# ## Agreement per behaviour, vendor evaluation and team

# %%
agreement = table(con, """SELECT * FROM evaluator_agreement
                          ORDER BY behaviour, vendor_key, team_id, our_evaluator, vendor_evaluator""",
                  "no pair yet: no vendor evaluation in the loaded bundles names one of our behaviours in "
                  "`same_behaviour_as`, or none of their runs is projected")
agreement

# %%
decided, agree = agreement["decided"].sum(), agreement["agree"].sum()
if decided:
    print(f"Over every pair both decided, we agree with the vendors on {agree} of {decided} "
          f"({agree / decided:.0%}); {agreement['pairs'].sum() - decided} pair(s) had an undetermined side.")
else:
    print("No pair where both sides decided: no agreement rate to give.")

# %%
labelled = agreement.with_columns(label=pl.format("{} vs {} ({})", "behaviour", "vendor_key", "team_id"))
alt.Chart(labelled).mark_bar().encode(
    x=alt.X("agreement_rate:Q", title="agreement rate (decided pairs)", scale=alt.Scale(domain=[0, 1])),
    y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=0)),
    tooltip=["behaviour", "vendor_key", "our_evaluator", "vendor_evaluator", "team_id", "pairs", "decided", "agree",
             "disagree", "we_pass_vendor_fails", "we_fail_vendor_passes"],
).properties(width=360, title="How often we agree with the vendor")

# %% [markdown]
# ## The 2x2: our result against the vendor's
#
# Every pair, by what each side said; `undetermined` is a side that could not decide. The diagonal
# (met/met, not met/not met) is agreement. Off it, *we pass, the vendor fails* and *we fail, the vendor
# passes* are the two ways to disagree: a lopsided split means one evaluator is systematically stricter.

# %%
side = {True: "met", False: "not met", None: "undetermined"}
pairs = table(con, """SELECT our_met, vendor_met, count(*) AS pairs FROM evaluator_pairs
                      GROUP BY ALL ORDER BY ALL""", "no pair yet")
said = pairs.with_columns(
    ours=pl.col("our_met").replace_strict(side, default="undetermined", return_dtype=pl.String),
    vendor=pl.col("vendor_met").replace_strict(side, default="undetermined", return_dtype=pl.String),
).select("ours", "vendor", "pairs")
sides = pl.DataFrame({"said": ["met", "not met"] + (
    ["undetermined"] if "undetermined" in set(said["ours"]) | set(said["vendor"]) else [])})
grid = (sides.rename({"said": "ours"}).join(sides.rename({"said": "vendor"}), how="cross")
        .join(said, on=["ours", "vendor"], how="left").with_columns(pl.col("pairs").fill_null(0)))
grid.pivot(on="vendor", index="ours", values="pairs")

# %%
order = ["met", "not met", "undetermined"]
cells = alt.Chart(grid).encode(x=alt.X("vendor:N", title="the vendor says", sort=order),
                               y=alt.Y("ours:N", title="we say", sort=order))
(cells.mark_rect().encode(color=alt.Color("pairs:Q", scale=alt.Scale(scheme="blues")))
 + cells.mark_text(fontSize=16).encode(text="pairs:Q")).properties(width=240, height=180,
                                                                  title="Pairs by our result and the vendor's")

# %% [markdown]
# ## The disagreements, with both reasons
#
# Each case run where both decided and they differ: the case, the call (a recorded call's id, when the
# case ran more than once), what each side said and why. `assay show CALL --run RUN` shows the
# transcript with the deciding lines marked.

# %%
disagreements = table(con, """SELECT p.team_id, p.behaviour, p.vendor_key, p.case_key, c.source_ref AS call,
                                     p.run_id, p.our_met, p.our_reason, p.vendor_met, p.vendor_reason
                              FROM evaluator_pairs p LEFT JOIN case_runs c USING (case_run_id)
                              WHERE NOT p.agree
                              ORDER BY p.team_id, p.behaviour, p.case_key, call""",
                      "no disagreement among the decided pairs")
for row in disagreements.iter_rows(named=True):
    print(f"{row['team_id']} / {row['case_key']} (call {row['call'] or '-'}, run {row['run_id']})\n"
          f"  {row['behaviour']}: we say {side[row['our_met']]}: {row['our_reason'] or '(no reason given)'}\n"
          f"  {row['vendor_key']}: the vendor says {side[row['vendor_met']]}: "
          f"{row['vendor_reason'] or '(no reason given)'}\n")
disagreements
