"""The analyst notebooks: each runs top to bottom on a real Jupyter kernel against the demo data, draws
its charts as Vega-Lite documents and finds what the demo holds; each committed ``.ipynb`` is its
``.py`` source's pair, without outputs; ``make notebooks`` installs them and opens JupyterLab on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from assay.flows import operations as ops
from assay.flows.demo import DEMO, REVISED, SUITES
from assay.flows.projection_flows import project_all
from assay.flows.workspace import open_workspace

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "notebooks"
NOTEBOOKS = sorted(p.stem for p in FOLDER.glob("*.ipynb"))
VEGA_LITE = "application/vnd.vegalite.v5+json"

# The last cell the test adds to each notebook: what it found, as JSON on the last line of its output.
PROBES = {
    "fleet_overview": """print(json.dumps({
    "failing": {r["assertion_key"]: r["failing_teams"] for r in common.iter_rows(named=True)},
    "behaviour": BEHAVIOUR, "versions": sorted(trend["assertion_version"].unique().to_list()),
    "met_rate": dict(zip(trend["assertion_version"].to_list(), trend["met_rate"].to_list())),
    "verdicts": verdicts.select("team_id", "consumer_key", "runs", "pass", "fail", "error").to_dicts(),
}))""",
    "judge_vs_vendor": """print(json.dumps({
    "agree": int(agree), "decided": int(decided),
    "grid": {f"{r['ours']}/{r['vendor']}": r["pairs"] for r in grid.iter_rows(named=True)},
    "disagreements": disagreements.select("case_key", "call", "our_met", "our_reason", "vendor_met").to_dicts(),
}))""",
    "criteria_whatif": """print(json.dumps({
    "skipped": [s["suite"] for s in answer["skipped"]],
    "groups": groups.select("suite", "consumer", "runs", "flips", "from_error").to_dicts(),
    "flips": flips.select("consumer", "stamped", "verdict").to_dicts(),
    "one": [SUITE, ONE_CONSUMER, one.select("stamped", "verdict").to_dicts()],
}))""",
    "evidence_overview": """print(json.dumps({
    "case_runs": int(case_runs["case_runs"].sum()), "teams": sorted(set(failures["team_id"])),
    "statuses": sorted(set(case_runs["status"])), "pairs": pairs.height,
    "disagree": pairs.filter(pl.col("agree").not_()).height, "vendor_rows": vendor.height,
}))""",
}


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's two suites run once, then the revised bundle loaded and the first suite run again (a second
    assertion version of ``out_of_area_clause`` and a second criteria version), and everything projected."""
    home = tmp_path_factory.mktemp("notebooks") / "home"
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("ASSAY_")]:
            mp.delenv(key)  # the kernel sees ASSAY_HOME alone: so does the demo it reads
        mp.setenv("ASSAY_HOME", str(home))
        ws = open_workspace(create=True)
        try:
            ops.load(ws, str(DEMO / "bundle.yaml"))
            for suite in SUITES:
                ops.run_to_final(ws, suite)
            ops.load(ws, str(REVISED))
            ops.run_to_final(ws, SUITES[0])
            project_all(ws)
        finally:
            ws.close()
    return home


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``python3`` kernelspec that starts this interpreter (the venv's), whatever ``python`` is on PATH."""
    from ipykernel.kernelspec import install

    prefix = tmp_path_factory.mktemp("kernels")
    install(prefix=str(prefix), kernel_name="python3")
    assert json.loads((prefix / "share/jupyter/kernels/python3/kernel.json").read_text())["argv"][0] == sys.executable
    return prefix / "share" / "jupyter"


def execute(name: str, home: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    for key in [k for k in os.environ if k.startswith("ASSAY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.setenv("JUPYTER_PATH", str(kernels))
    notebook = jupytext.read(FOLDER / f"{name}.py")
    notebook.cells.append(nbformat.v4.new_code_cell("import json\n" + PROBES[name]))
    NotebookClient(notebook, kernel_name="python3", timeout=300,
                   resources={"metadata": {"path": str(FOLDER)}}).execute()
    return notebook


def outputs(notebook: nbformat.NotebookNode) -> list[dict]:
    return [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]


def probed(notebook: nbformat.NotebookNode) -> dict:
    text = "".join(out.get("text", "") for out in notebook.cells[-1].outputs if out["output_type"] == "stream")
    return json.loads(text.strip().splitlines()[-1])


def test_there_are_notebooks_and_each_is_probed() -> None:
    assert set(NOTEBOOKS) == set(PROBES)
    sources = {p.stem for p in FOLDER.glob("*.py") if "formats: ipynb,py:percent" in p.read_text()}
    assert sources == set(NOTEBOOKS)  # every notebook source has its .ipynb, and the reverse


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_ipynb_is_its_sources_pair_without_outputs(name: str) -> None:
    source, paired = jupytext.read(FOLDER / f"{name}.py"), jupytext.read(FOLDER / f"{name}.ipynb")
    assert source.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert paired.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert paired.metadata["kernelspec"]["name"] == "python3"
    assert [(c.cell_type, c.source) for c in paired.cells] == [(c.cell_type, c.source) for c in source.cells], (
        f"notebooks/{name}.ipynb and .py differ: run `jupytext --sync notebooks/{name}.py`")
    raw = json.loads((FOLDER / f"{name}.ipynb").read_text())
    code = [c for c in raw["cells"] if c["cell_type"] == "code"]
    assert code
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), (
        f"notebooks/{name}.ipynb holds outputs: `jupyter nbconvert --clear-output --inplace notebooks/{name}.ipynb`")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_runs_on_a_kernel_against_the_demo(
    name: str, demo_home: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = execute(name, demo_home, kernels, monkeypatch)
    shown = outputs(notebook)
    assert not [o for o in shown if o["output_type"] == "error"]
    assert not [o for o in shown if o["output_type"] == "stream" and o["name"] == "stderr"], "warnings or errors"
    charts = [o for o in shown if VEGA_LITE in o.get("data", {})]
    expected = {"fleet_overview": 4, "judge_vs_vendor": 2, "criteria_whatif": 3, "evidence_overview": 2}[name]
    assert len(charts) == expected
    assert all(o["data"][VEGA_LITE]["datasets"] for o in charts)  # the data travels inside the chart
    # drawn offline: no chart is an HTML page that loads Vega from elsewhere
    assert not [o for o in shown if "<script" in "".join(o.get("data", {}).get("text/html", ""))]
    found = probed(notebook)
    if name == "fleet_overview":
        assert found["failing"]["every_variable_resolves"] == ["acme-plumbing"]
        assert found["behaviour"] == "out_of_area_clause" and found["versions"] == [1, 2]
        assert found["met_rate"] == {"1": 1.0, "2": 0.0}
        hvac = [v for v in found["verdicts"] if v["team_id"] == "northside-hvac"]
        assert {v["consumer_key"] for v in hvac} == {"blueprint_ci", "publish_gate", "nightly_sweep"}
        assert all(v["runs"] == v["error"] == 1 for v in hvac)  # the call that did not execute: no verdict possible
    elif name == "judge_vs_vendor":
        assert (found["agree"], found["decided"]) == (2, 3)
        assert found["grid"] == {"met/met": 1, "met/not met": 0, "not met/met": 1, "not met/not met": 1}
        [row] = found["disagreements"]
        assert (row["our_met"], row["vendor_met"]) == (False, True) and row["our_reason"]
    elif name == "criteria_whatif":
        assert found["skipped"] == ["acme-plumbing/main-line"]
        assert [(g["consumer"], g["runs"], g["flips"], g["from_error"]) for g in found["groups"]] == [
            ("blueprint_ci", 1, 1, 1), ("nightly_sweep", 1, 1, 1), ("publish_gate", 1, 1, 1)]
        assert {(f["stamped"], f["verdict"]) for f in found["flips"]} == {("error", "fail")}
        assert found["one"] == ["northside-hvac/recorded-calls", "blueprint_ci",
                                [{"stamped": "error", "verdict": "fail"}]]
    else:
        assert found["case_runs"] == 20 and found["teams"] == ["acme-plumbing", "northside-hvac"]
        assert found["statuses"] == ["error", "executed"]
        assert (found["pairs"], found["disagree"]) == (3, 1) and found["vendor_rows"] >= 1


def test_evidence_overview_says_so_on_an_empty_workspace(
    tmp_path: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "empty"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    subprocess.run([sys.executable, "-m", "assay.flows.cli", "init"], env={**env, "ASSAY_HOME": str(home)},
                   capture_output=True, check=True, timeout=120)
    notebook = execute("evidence_overview", home, kernels, monkeypatch)
    text = "".join(o.get("text", "") for o in outputs(notebook) if o["output_type"] == "stream")
    assert "No finalised run yet" in text
    assert "No rows: no case run in the lake yet." in text
    assert "No rows: nothing has been judged yet." in text
    assert probed(notebook)["case_runs"] == 0


def test_make_notebooks_installs_the_extra_and_opens_jupyterlab_on_the_demo_home(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_HOME", "MAKEFLAGS", "MAKELEVEL")}
    dry = subprocess.run(["make", "-n", "-B", "notebooks"], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout
    assert "pip install" in dry and ".[notebooks]" in dry
    assert "ipykernel install --sys-prefix" in dry  # the kernel runs the venv's Python
    launch = dry[dry.index("${ASSAY_HOME:-"):]
    assert launch.startswith("${ASSAY_HOME:-.assay/demo-home}")  # the demo's home unless ASSAY_HOME names one
    assert 'ASSAY_HOME="$home" exec .venv/bin/jupyter lab$root notebooks' in launch


@pytest.mark.parametrize(("uid", "command"), [("0", "lab --allow-root notebooks"), ("1000", "lab notebooks")])
def test_make_notebooks_allows_root_only_as_root(tmp_path: Path, uid: str, command: str) -> None:
    """JupyterLab refuses root without ``--allow-root``: the target adds it for root and for no one else."""
    venv, shims, home = tmp_path / "venv", tmp_path / "shims", tmp_path / "home"
    for folder in (venv / "bin", shims, home):
        folder.mkdir(parents=True)
    for script, body in ((venv / "bin" / "jupyter", 'echo "jupyter $*"'), (shims / "id", f"echo {uid}")):
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")},
           "ASSAY_HOME": str(home), "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}
    # -o: the installed stamp counts as made, so only the launch runs (on the stand-in jupyter)
    done = subprocess.run(["make", "-s", "-o", f"{venv}/.notebooks-installed", "notebooks", f"VENV={venv}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.splitlines() == [f"ASSAY_HOME={home}", f"jupyter {command}"]
