"""Where a key counts, through the real flows: a re-score over stored runs of two runners, ``assay diff``,
and ``assay plan`` (a change of applicability is a re-score, for that consumer alone)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from command_line import assay

from assay.core.criteria import CriteriaSpec
from assay.flows import operations as ops
from assay.flows import rescoring
from assay.flows.demo import DEMO
from assay.flows.drill_diff import diff

MAIN = "acme-plumbing/main-line"
TOOLS = ["checks_service_area_tool", "books_with_tool"]


def test_a_rescore_leaves_out_what_a_runner_cannot_evaluate_and_diff_counts_it_apart(demo_ws) -> None:
    checked = ops.run_to_final(demo_ws, MAIN).run_id  # config_check: evaluates the structural checks
    fixed = ops.run_to_final(demo_ws, MAIN, "fixed").run_id  # fixed: reports only its own evaluations
    spec = CriteriaSpec(required=TOOLS, applies=dict.fromkeys(TOOLS, "capable"))
    runs = {r["run_id"]: r for r in rescoring.rescore(demo_ws, MAIN, "blueprint_ci", spec=spec)["runs"]}
    assert runs[checked]["verdict"] == "pass" and "not counted" not in runs[checked]["reason"]
    assert (runs[fixed]["verdict"], runs[fixed]["reason"]) == ("error", (
        "no counted result decides it; 8 results not counted: `books_with_tool` is not evaluated by fixed, "
        "`checks_service_area_tool` is not evaluated by fixed"))

    keys = {k["assertion_key"]: k for k in diff(demo_ws, checked, fixed)["keys"]}
    assert (keys["books_with_tool"]["a"]["not_applicable"], keys["books_with_tool"]["b"]["not_applicable"]) == (0, 4)
    assert keys["books_with_tool"]["b"]["met"] == 0


def test_a_change_of_applicability_plans_as_a_re_score_and_loads_as_a_new_criteria_version(tmp_path: Path) -> None:
    home, bundle = tmp_path / "home", shutil.copytree(DEMO, tmp_path / "demo") / "bundle.yaml"
    assay("init", home=home)
    assay("load", str(bundle), home=home)
    raw = yaml.safe_load(bundle.read_text())
    raw["teams"][0]["suites"][0]["criteria"]["blueprint_ci"]["applies"] = {"books_with_tool": "capable"}
    changed = bundle.parent / "applies.yaml"
    changed.write_text(yaml.safe_dump(raw, sort_keys=False))

    plan = json.loads(assay("plan", str(changed), "--json", home=home).stdout)
    main = {s["suite"]: s for s in plan["suites"]}[MAIN]
    assert main["tier"] == "re-score"
    assert {c["consumer"]: c["tier"] for c in main["consumers"]} == {
        "blueprint_ci": "re-score", "nightly_sweep": "none", "publish_gate": "none"}

    assay("load", str(changed), home=home)
    assert json.loads(assay("plan", str(changed), "--json", home=home).stdout)["changes"] == []


def test_applies_naming_a_key_the_criteria_does_not_count_is_refused_at_load(tmp_path: Path) -> None:
    home, bundle = tmp_path / "home", shutil.copytree(DEMO, tmp_path / "demo") / "bundle.yaml"
    assay("init", home=home)
    raw = yaml.safe_load(bundle.read_text())
    raw["teams"][0]["suites"][0]["criteria"]["blueprint_ci"]["applies"] = {"mentions_business_hours": "capable"}
    bundle.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = assay("load", str(bundle), home=home, check=None)
    said = out.stdout + out.stderr
    assert out.returncode != 0
    assert "criteria.blueprint_ci" in said and "mentions_business_hours" in said and "capable" in said, said
