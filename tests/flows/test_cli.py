"""The command line as a user meets it: real exit codes, real output; through the real entry point as a
process where that is the point (exit codes, imports, the program's own ending)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from command_line import assay

HEAVY = ("polars", "duckdb", "prefect", "pyarrow", "pandera", "sqlalchemy", "alembic")


def imported_by(python, args: list[str], modules: tuple[str, ...],
                home: Path | None = None) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``main(args)`` in a fresh interpreter (``python``: the ``fresh_interpreter`` fixture; in
    ``home``'s workspace, if given); its output, and which of ``modules`` it imported."""
    code = (
        "import json, sys\n"
        "from assay.flows.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"print(json.dumps([m for m in {modules!r} if m in sys.modules]), file=sys.stderr)\n"
    )
    env = None
    if home is not None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
        env.update(ASSAY_HOME=str(home), PREFECT_HOME=str(home / "prefect"))
    proc = python(code, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(proc.stderr.splitlines()[-1])


def test_help_imports_no_heavy_library(fresh_interpreter) -> None:
    proc, imported = imported_by(fresh_interpreter, ["--help"], HEAVY)
    assert "Usage" in proc.stdout and imported == [], (proc.stdout, imported)


def test_a_rescore_as_a_query_imports_no_orchestration_nor_the_write_path(fresh_interpreter, tmp_path: Path) -> None:
    """`assay rescore SUITE --json` reads the catalog and the lake: Prefect, pandera (checked on writes),
    DuckDB, YAML (a --spec file) and rich stay unimported, each a cost on every re-score."""
    from assay.flows.demo import DEMO

    assay("init", home=tmp_path)
    assay("load", str(DEMO / "bundle.yaml"), home=tmp_path)
    args = ["rescore", "acme-plumbing/main-line", "--consumer", "blueprint_ci", "--json"]
    proc, imported = imported_by(fresh_interpreter, args, ("prefect", "pandera", "duckdb", "yaml", "rich"), home=tmp_path)
    assert json.loads(proc.stdout)["runs"] == [] and imported == [], (proc.stdout, imported)


@pytest.mark.parametrize(("args", "status"), [(["init"], 0), (["runs", "list", "--limit", "zero"], 2)])
def test_the_program_ends_after_its_exit_handlers_without_the_teardown(fresh_interpreter, tmp_path: Path,
                                                                       args: list[str], status: int) -> None:
    """`assay` (run_command) skips the interpreter's teardown, 0.15-0.85 s of each command, once every exit
    handler has run; its output and exit status are the command's own."""
    code = (
        "import atexit, os, sys\n"
        "class Probe:  # its own os.write: print and the module's globals are gone by then\n"
        "    def __del__(self, write=os.write):\n        write(1, b'TORN DOWN')\n"
        "probe = Probe()  # freed only by the teardown\n"
        "import assay.flows.cli as cli\n"
        "command = cli.main\n"
        "def main():  # a handler the command registers, as Prefect's services do\n"
        "    atexit.register(lambda: print('HANDLER RAN'))\n"
        "    command()\n"
        "cli.main = main\n"
        f"sys.argv = ['assay', *{args!r}]\n"
        "cli.run_command()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(ASSAY_HOME=str(tmp_path / "home"), PREFECT_HOME=str(tmp_path / "home" / "prefect"), NO_COLOR="1")
    (tmp_path / "home").mkdir()  # a workspace's folder: where none is, every command but init refuses first
    proc = fresh_interpreter(code, env=env)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout.rstrip().endswith("HANDLER RAN") and "TORN DOWN" not in proc.stdout, proc.stdout
    if status:
        assert "Usage" in proc.stderr, proc.stderr
    else:
        listed = assay("runs", "list", "--json", home=tmp_path / "home")  # the catalog it wrote opens and answers
        assert json.loads(listed.stdout)["runs"] == [], listed.stdout


def test_the_program_collects_garbage_less_often_than_python_by_default(fresh_interpreter) -> None:
    """`assay` (run_command) runs its command under the collector thresholds COLLECT_EVERY, not Python's own."""
    from assay.flows.cli import COLLECT_EVERY

    code = (
        "import gc, sys\n"
        "import assay.flows.cli as cli\n"
        "print(gc.get_threshold())\n"
        "cli.main = lambda: print(gc.get_threshold())\n"
        "sys.argv = ['assay']\n"
        "cli.run_command()\n"
    )
    proc = fresh_interpreter(code)
    assert proc.returncode == 0, proc.stderr
    before, during = proc.stdout.splitlines()
    assert before != during, proc.stdout  # Python's default thresholds differ from ours
    assert during == str(COLLECT_EVERY), proc.stdout


@pytest.mark.parametrize("args", [("run",), ("no-such-command",), ("runs", "list", "--limit", "zero")])
def test_a_malformed_command_line_exits_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = assay(*args, home=tmp_path, check=2)
    assert "Usage" in proc.stderr or "Error" in proc.stderr


def test_an_error_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    assay("init", home=tmp_path)
    proc = assay("runs", "show", "nosuchrun", home=tmp_path, check=1)
    assert proc.stderr.startswith("error: no run 'nosuchrun'")
    assert "Traceback" not in proc.stderr
    debug = assay("--debug", "runs", "show", "nosuchrun", home=tmp_path, check=1)
    assert "Traceback" in debug.stderr and "NotFoundError" in debug.stderr


def test_the_real_program_exits_with_the_contracts_codes(assay_process, tmp_path: Path) -> None:
    """Through the installed entry point, as a process: a malformed line 2, an error 1 in one red line, the
    traceback only with --debug, and success 0."""
    assert "Usage" in assay_process("no-such-command", home=tmp_path, check=2).stderr
    assay_process("init", home=tmp_path)
    proc = assay_process("runs", "show", "nosuchrun", home=tmp_path, check=1)
    assert proc.stderr.startswith("error: no run 'nosuchrun'") and "Traceback" not in proc.stderr
    debug = assay_process("--debug", "runs", "show", "nosuchrun", home=tmp_path, check=1)
    assert "Traceback" in debug.stderr and "NotFoundError" in debug.stderr


def test_a_bad_bundle_names_the_file_and_writes_nothing(tmp_path: Path) -> None:
    bundle = tmp_path / "bad.yaml"
    bundle.write_text("schema: assay.bundle/v1\nteams:\n  - id: ../x\n    name: X\n")
    assay("init", home=tmp_path / "home")
    proc = assay("load", str(bundle), home=tmp_path / "home", check=1)
    assert "bad.yaml" in proc.stderr and "teams[0].id" in proc.stderr
    runs = assay("runs", "list", "--json", home=tmp_path / "home")
    assert json.loads(runs.stdout)["runs"] == []


def test_json_documents_carry_schema_revision_and_stability(tmp_path: Path) -> None:
    doc = json.loads(assay("init", "--json", home=tmp_path).stdout)
    assert (doc["schema"], doc["revision"], doc["stability"]) == ("assay.init", 1, "experimental")
    assert doc["catalog"].endswith("catalog.db") and (tmp_path / "catalog.db").exists()
    listing = json.loads(assay("runs", "list", "--json", home=tmp_path).stdout)
    assert listing["schema"] == "assay.runs" and listing["runs"] == []


def test_the_demo_shows_the_three_tiers(tmp_path: Path) -> None:
    doc = json.loads(assay("demo", "--json", home=tmp_path / "fresh").stdout)
    assert doc["schema"] == "assay.demo"
    from assay.core.document_models import validate

    validate(doc)  # the model forbids unknown fields: docs/schemas/assay.demo.json describes this document
    assert [r["status"] for r in doc["runs"]] == ["completed", "completed"]
    tiers = {s["suite"]: s["tier"] for s in doc["plan"]["suites"]}
    assert tiers == {"acme-plumbing/main-line": "re-judge", "northside-hvac/recorded-calls": "re-run",
                     "acme-plumbing/chat-line": "none"}  # the revised bundle leaves chat-repeats out
    assert doc["rejudged"]["evaluated"] == 4 and doc["rejudged"]["outcomes"] == 4
    assert [f["verdict"] for f in doc["rescored"]["flips"]] == ["fail"]
    flipped = {(v["consumer"], v["stamped"], v["verdict"]) for v in doc["verdicts_after"] if v["stamped"] != v["verdict"]}
    assert ("blueprint_ci", "pass", "fail") in flipped
    assert doc["rerun"]["status"] == "completed" and doc["rerun"]["run_id"] not in [r["run_id"] for r in doc["runs"]]
    _the_vendor_chapter(doc["vendors"])
    _the_repeats_chapter(doc["repeated"], doc["repeated_verdicts"])
    _no_rubric_waits_for_a_judge(tmp_path / "fresh")
    again = assay("demo", home=tmp_path / "fresh", check=1)
    assert "already holds runs" in again.stderr and "--reset" in again.stderr


def _the_vendor_chapter(vendors: dict) -> None:
    """One situation on three vendors, side by side, evaluator by evaluator, with a disagreement."""
    assert set(vendors["runs"]) == {"vapi_chat", "elevenlabs_chat", "hamming"}
    assert vendors["runs"]["hamming"] in vendors["collected"]  # asynchronous: finalised by a collect pass
    cells = {(r["assertion_key"], r["runner"]): r for r in vendors["rows"]}
    for runner in vendors["runs"]:
        judged = cells[("offers_referral", runner)]
        assert judged["met"] is True and judged["evaluator"] == "assay:judge:fake-judge-1", judged
    assert cells[("resolves_request", "hamming")]["evaluator"] == "hamming:assertion"
    assert cells[("replies_quickly", "vapi_chat")]["met"] is True
    unsupported = cells[("checks_area_with_tool", "hamming")]
    assert unsupported["met"] is False and 'not supported by runner "hamming"' in unsupported["reason"]
    [disagree] = vendors["disagreements"]
    assert (disagree["ours"], disagree["theirs"], disagree["their_evaluator"]) == (True, False, "elevenlabs:criteria")
    verdicts = {(v["run_id"], v["consumer"]): v["verdict"] for v in vendors["verdicts"]}
    assert verdicts[(vendors["runs"]["vapi_chat"], "publish_gate")] == "pass"


def _the_repeats_chapter(run: dict, verdicts: list[dict]) -> None:
    """Replays: the steady case passes by the sequential test; the case the agent fumbles one call in ten is
    FLAKY at the budget, with its pass rate and bounds, excluded from the run's pass."""
    assert run["case_count"] == 2 and run["case_runs"] == 14 + 30 and (run["repeat"], run["budget"]) == (10, 30)
    by = {v["consumer"]: v for v in verdicts}
    assert (by["blueprint_ci"]["verdict"], by["publish_gate"]["verdict"]) == ("fail", "pass")  # per replay; average
    v = by["nightly_sweep"]
    assert v["verdict"] == v["stamped"] == "pass"
    series = {s["case_key"]: s for s in v["series"]}
    steady, flaky = series["water-heater-outside-area"], series["faucet-in-area"]
    assert (steady["verdict"], steady["how"], steady["at"], steady["passes"]) == ("pass", "sequential", 14, 14)
    assert (flaky["verdict"], flaky["passes"], flaky["runs"]) == ("flaky", 27, 30)
    assert round(flaky["lower"], 2) == 0.77 and round(flaky["upper"], 2) == 0.96
    assert "1 flaky, excluded: faucet-in-area (27 of 30 replays passed" in v["reason"]
    assert "stopped at the escalation budget of 30 replays" in flaky["reason"]


def _no_rubric_waits_for_a_judge(home: Path) -> None:
    """With the demo's judge, every rubric that had evidence to judge was judged (met is null only when the
    call never happened)."""
    from assay.core.settings import Settings
    from assay.flows.workspace import open_workspace
    from assay.storage.query import connect

    ws = open_workspace(Settings(home=home))
    try:
        with connect(ws.lake, catalog=True) as con:
            waiting = con.sql("""SELECT count(*) FROM assertion_results a JOIN latest_outcomes l ON l.outcome_id = a.outcome_id
                                 WHERE a.mechanism = 'rubric' AND a.met IS NULL AND a.evaluator <> 'assay:execution'""").fetchall()[0][0]
            judged = con.sql("SELECT count(*) FROM assertion_results WHERE evaluator LIKE 'assay:judge:%' AND met IS NOT NULL").fetchall()[0][0]
    finally:
        ws.close()
    assert waiting == 0 and judged > 0


def test_rescore_with_a_bad_spec_file_names_it(tmp_path: Path) -> None:
    spec = tmp_path / "candidate.yaml"
    spec.write_text("required: [a]\nthreshold: [{keys: [b], min: 1.5}]\n")
    proc = assay("rescore", "team/suite", "--consumer", "ci", "--spec", str(spec), home=tmp_path / "home", check=1)
    assert "candidate.yaml" in proc.stderr and "threshold.0.min" in proc.stderr


def test_rejudge_without_a_selection_says_how_to_choose(tmp_path: Path) -> None:
    proc = assay("rejudge", home=tmp_path, check=1)
    assert "no runs chosen: give --run RUN (repeatable), --suite TEAM/SUITE or --team TEAM" in proc.stderr


def test_every_command_but_the_worker_takes_json_as_the_readme_says() -> None:
    """The README's promise, checked against the command line itself: each command (sub-commands included)
    takes --json, except `assay worker`, which hands its process over to Prefect's worker."""
    import typer.main

    from assay.flows.cli import app

    def commands(command, path=()):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from commands(sub, (*path, name))
        else:
            yield " ".join(path), command

    found = dict(commands(typer.main.get_command(app)))
    assert {"fake-vendors", "query", "runs list", "server status"} <= set(found)
    assert [name for name, c in found.items() if not any("--json" in p.opts for p in c.params)] == ["worker"]
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    assert "Every command but `assay worker` (which becomes Prefect's worker process and prints its log) takes `--json`" in readme
