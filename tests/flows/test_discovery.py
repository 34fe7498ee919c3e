"""Finding things from the command line: `assay ls`, unknown names that suggest the nearest known ones,
errors that are one line at the boundary (`assay run` included), and `assay --version`.

The command line against one demo workspace (loaded through the CLI), readable at 80 columns; a real
process where what is proven is the process's (its imports, Prefect's logs kept off its terminal).
"""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from command_line import assay as assay_cli
from test_cli import HEAVY, imported_by

from assay.core.settings import Settings
from assay.flows import operations as ops
from assay.flows.demo import DEMO
from assay.flows.workspace import open_workspace

PREFIX = "feedface00"
"""Two runs of the workspace share this id prefix."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo bundle loaded through the CLI, two pending runs whose ids share :data:`PREFIX`, then a third."""
    home = tmp_path_factory.mktemp("discovery") / "home"
    assay_cli("init", home=home)
    assay_cli("load", str(DEMO / "bundle.yaml"), home=home)
    ws = open_workspace(Settings(home=home))
    ids = iter([f"{PREFIX}{1:022d}", f"{PREFIX}{2:022d}", "c0ffee" + "0" * 26])
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("assay.storage.catalog.runs.new_id", lambda: next(ids))
            for _ in range(3):
                ops.start_run(ws, "acme-plumbing/main-line")
    finally:
        ws.close()
    return home


def assay(*args: str, home: Path, check: int | None = 0) -> subprocess.CompletedProcess:
    """The CLI at 80 columns; every line of what it lays out (not a JSON document) fits them, nothing cut."""
    proc = assay_cli(*args, home=home, check=check, columns=80)
    if "--json" not in args:
        assert all(len(line) <= 80 for line in proc.stdout.splitlines()), proc.stdout
    assert "…" not in proc.stdout, proc.stdout
    return proc


def ls_json(*args: str, home: Path) -> dict:
    doc = json.loads(assay("ls", *args, "--json", home=home).stdout)
    assert doc["schema"] == "assay.ls"
    return doc


def test_ls_alone_counts_each_kind_and_draws_the_team_suite_tree(home: Path) -> None:
    out = assay("ls", home=home).stdout
    assert out.startswith("2 team(s), 4 suite(s), 9 case(s), 26 assertion(s) (26 version(s)), 12 criteria, \n"
                          "3 consumer(s)\n"), out
    for name in ("acme-plumbing", "main-line", "chat-line", "chat-repeats", "northside-hvac", "recorded-calls"):
        assert name in out
    assert "consumers: blueprint_ci, nightly_sweep, publish_gate" in out
    doc = ls_json(home=home)
    assert doc["kind"] == "overview" and doc["counts"]["suites"] == 4
    assert [[s["key"] for s in t["suites"]] for t in doc["teams"]] == [["chat-line", "chat-repeats", "main-line"],
                                                                       ["recorded-calls"]]


def test_ls_lists_every_kind_with_versions(home: Path) -> None:
    sizes = {"teams": 2, "suites": 4, "cases": 9, "assertions": 26, "criteria": 12, "consumers": 3}
    for kind, size in sizes.items():
        assert len(ls_json(kind, home=home)[kind]) == size, kind
    assertions = {(a["team"], a["of"], a["key"]): a for a in ls_json("assertions", home=home)["assertions"]}
    guard = assertions["northside-hvac", "water-heater-outside-area", "guardrail_handles_out_of_area"]
    assert (guard["scope"], guard["mechanism"], guard["version"], guard["versions"]) == ("case", "vendor.evaluation", 1, 1)
    assert assertions["acme-plumbing", "main-line", "books_with_tool"]["scope"] == "suite"
    criteria = {(c["suite"], c["consumer"]): c for c in ls_json("criteria", home=home)["criteria"]}
    sweep = criteria["acme-plumbing/main-line", "nightly_sweep"]
    assert (sweep["version"], sweep["versions"]) == (1, 1) and sweep["summary"].startswith("≥ 0.75 of books_with_tool")
    text = assay("ls", "assertions", home=home).stdout
    assert "case northside-hvac/water-heater-outside-area" in text  # a heading per suite or case, ids whole
    assert "guardrail_handles_out_of_area  vendor.evaluation        v1 of 1" in text


def test_ls_narrows_to_a_team_or_a_suite(home: Path) -> None:
    assert [s["suite"] for s in ls_json("suite", "--team", "northside-hvac", home=home)["suites"]] == [
        "northside-hvac/recorded-calls"]
    cases = ls_json("cases", "--suite", "acme-plumbing/main-line", home=home)
    assert (cases["team"], cases["suite"]) == ("acme-plumbing", "acme-plumbing/main-line")
    assert [c["key"] for c in cases["cases"]] == [
        "water-heater-outside-area", "burst-pipe-emergency", "reschedule-appointment", "price-quote-request"]
    own = ls_json("assertions", "--suite", "recorded-calls", home=home)["assertions"]
    assert {a["scope"] for a in own} == {"suite", "case"} and len(own) == 14  # its own and its cases'
    assert {c["consumer"] for c in ls_json("criteria", "--suite", "acme-plumbing/chat-line", home=home)["criteria"]} == {
        "blueprint_ci", "nightly_sweep", "publish_gate"}
    overview = assay("ls", "--team", "acme-plumbing", home=home).stdout
    assert "northside" not in overview.split("consumers:")[0]


@pytest.mark.parametrize(("args", "first", "known"), [
    (("ls", "sutes"), "no kind 'sutes'; did you mean suites?",
     "known kinds: teams, suites, cases, assertions, criteria, consumers"),
    (("ls", "--team", "acme"), "no team 'acme'; did you mean acme-plumbing?", "known teams: acme-plumbing, northside-hvac"),
    (("ls", "cases", "--suite", "main-lin"), "no suite 'main-lin'; did you mean acme-plumbing/main-line?",
     "known suites: acme-plumbing/chat-line, acme-plumbing/chat-repeats, acme-plumbing/main-line, "
     "northside-hvac/recorded-calls"),
    (("rescore", "acme-plumbing/main-lin", "--consumer", "publish_gate"),
     "no suite 'acme-plumbing/main-lin'; did you mean acme-plumbing/main-line?", "known suites: "),
    (("rescore", "acme-plumbing/main-line", "--consumer", "ci-gate"),
     "no criteria on suite acme-plumbing/main-line for consumer 'ci-gate'; did you mean blueprint_ci or publish_gate?",
     "consumers with criteria here: blueprint_ci, nightly_sweep, publish_gate"),
    (("runs", "list", "--team", "northside"), "no team 'northside'; did you mean northside-hvac?", "known teams: "),
])
def test_an_unknown_name_suggests_the_nearest_and_lists_the_known(
    home: Path, args: tuple[str, ...], first: str, known: str
) -> None:
    malformed = args[:2] == ("ls", "sutes")  # a kind outside the fixed choices is a bad command line
    err = assay(*args, home=home, check=2 if malformed else 1).stderr.splitlines()
    assert err[0] == f"error: {first}", err
    assert err[1].startswith(f"  {known}"), err
    assert all(line.startswith("  ") for line in err[1:]) and "Traceback" not in "\n".join(err)


def test_a_run_id_prefix_finds_one_run_or_lists_the_candidates(home: Path) -> None:
    ambiguous = assay("runs", "show", PREFIX, home=home, check=1).stderr
    assert ambiguous.startswith(f"error: run id prefix '{PREFIX}' names 2 runs: ")
    assert f"{PREFIX}{2:022d}" in ambiguous and f"{PREFIX}{1:022d}" in ambiguous
    short = assay("runs", "show", "c0ff", home=home, check=1).stderr
    assert short == f"error: run id prefix 'c0ff' is too short: give 6+ characters (it starts c0ffee{'0' * 26})\n"
    one = json.loads(assay("runs", "show", "c0ffee", "--json", home=home).stdout)
    assert one["run"]["run_id"] == "c0ffee" + "0" * 26
    missing = assay("runs", "show", "0123456789", home=home, check=1).stderr.splitlines()
    assert missing[0] == "error: no run '0123456789'"
    assert missing[1] == f"  newest runs: c0ffee{'0' * 26}, {PREFIX}{2:022d}, {PREFIX}{1:022d}", missing


def test_verdicts_without_runs_names_its_own_options(home: Path) -> None:
    err = assay("verdicts", home=home, check=1).stderr
    assert err.startswith("error: no runs chosen: give a RUN (`assay verdicts RUN`) or --suite TEAM/SUITE")
    assert "--run" not in err and "--team" not in err


def test_run_of_an_unknown_suite_is_one_error(home: Path) -> None:
    proc = assay("run", "acme-plumbing/main-lin", home=home, check=1)
    lines = proc.stderr.splitlines()
    assert lines[0] == "error: no suite 'acme-plumbing/main-lin'; did you mean acme-plumbing/main-line?", proc.stderr
    assert all(line.startswith("  ") for line in lines[1:]), proc.stderr  # only the message's own lines
    assert "Traceback" not in proc.stderr and "prefect" not in proc.stderr.lower()
    debug = assay("--debug", "run", "acme-plumbing/main-lin", home=home, check=1)
    assert "Traceback" in debug.stderr and "NotFoundError" in debug.stderr
    assert "error: no suite 'acme-plumbing/main-lin'" in debug.stderr


def test_a_process_keeps_prefect_s_logs_off_its_terminal(home: Path, assay_process) -> None:
    """Prefect's log level is set before Prefect is imported, which only a fresh process shows."""
    proc = assay_process("run", "acme-plumbing/main-lin", home=home, columns=80, check=1)
    assert proc.stderr.startswith("error: no suite 'acme-plumbing/main-lin'"), proc.stderr
    assert "Traceback" not in proc.stderr and "prefect" not in proc.stderr.lower()


def test_version_prints_the_package_version(home: Path) -> None:
    proc = assay("--version", home=home)
    assert proc.stdout == f"assay {version('assay')}\n" and proc.stderr == ""


def test_version_imports_nothing_heavy(fresh_interpreter) -> None:
    proc, imported = imported_by(fresh_interpreter, ["--version"], HEAVY)
    assert proc.stdout == f"assay {version('assay')}\n" and imported == [], (proc.stdout, imported)
