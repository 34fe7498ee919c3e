"""`assay query` and `assay.connect()` as a user meets them, on the demo workspace: real processes, real output.

The README's examples run here too, so the docs cannot drift from what the commands do.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from command_line import assay as assay_cli

from assay.core.settings import Settings
from assay.flows import operations as ops
from assay.flows.demo import DEMO, SUITES
from assay.flows.judging import judge_runs, verdicts_for
from assay.flows.workspace import open_workspace
from assay.storage import views

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace where both demo suites ran and were judged, then one run was judged again."""
    home = tmp_path_factory.mktemp("query") / "home"
    ws = open_workspace(Settings(home=home), create=True)
    try:
        ops.load(ws, str(DEMO / "bundle.yaml"))
        run_ids = [ops.start_run(ws, suite).run_id for suite in SUITES]
        for run_id in run_ids:
            ops.execute_run(ws, run_id)
            ops.finish_run(ws, run_id)
        judge_runs(ws, run_ids[:1], trigger="rejudge", force=True)  # a second outcome per case run of one run
    finally:
        ws.close()
    return home


def test_the_views_agree_with_the_polars_reading_of_the_workspace(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import assay

    monkeypatch.setenv("ASSAY_HOME", str(home))
    con = assay.connect()
    ws = open_workspace()
    try:
        run_ids = [r for (r,) in con.sql("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        polars = {(v["run_id"], v["consumer"]): (v["stamped"], v["verdict"]) for v in verdicts_for(ws, run_ids)}
    finally:
        ws.close()
    now = con.sql("SELECT run_id, consumer_key, stamped, verdict FROM verdicts_now").fetchall()
    sql = {(r, c): (s, v) for r, c, s, v in now}
    assert sql == polars and len(sql) == 6
    rule = views.DERIVED["current_results"][0]  # whatever keeps current_results, it holds what the rule says
    kept = con.sql("SELECT result_id FROM current_results").fetchall()
    assert sorted(kept) == sorted(con.sql(rule).select("result_id").fetchall())
    [(case_runs, outcomes, latest)] = con.sql(
        "SELECT (SELECT count(*) FROM case_runs), (SELECT count(*) FROM outcomes),"
        " (SELECT count(*) FROM latest_outcomes)"
    ).fetchall()
    assert case_runs == latest < outcomes  # one run was judged twice; each case run has one latest outcome


def test_a_table_is_readable_at_80_columns(home: Path) -> None:
    out = assay_cli("query", "SELECT * FROM verdicts_now ORDER BY run_id, consumer_key", home=home, columns=80).stdout
    assert max(map(len, out.splitlines())) <= 80
    assert out.count("blueprint_ci") == 2 and out.rstrip().endswith("6 row(s)")


def test_csv_and_json_carry_the_same_rows(home: Path) -> None:
    sql = "SELECT run_id, consumer_key, verdict, spec, changed FROM verdicts_now ORDER BY ALL"
    rows = list(csv.DictReader(io.StringIO(assay_cli("query", sql, "--format", "csv", home=home).stdout)))
    records = json.loads(assay_cli("query", sql, "--format", "json", home=home).stdout)
    assert len(rows) == len(records) == 6
    for row, record in zip(rows, records, strict=True):
        assert row["run_id"] == record["run_id"] and row["verdict"] == record["verdict"]
        assert json.loads(row["spec"]) == record["spec"] and isinstance(record["spec"], dict)
        assert row["changed"] == json.dumps(record["changed"])
    document = json.loads(assay_cli("query", sql, "--json", home=home).stdout)  # the same rows, as a document
    assert (document["schema"], document["row_count"], document["rows"]) == ("assay.query", 6, records)
    assert [c["name"] for c in document["columns"]] == ["run_id", "consumer_key", "verdict", "spec", "changed"]
    assert document["columns"][3]["type"] == "JSON"


def test_json_and_a_bare_format_together_are_a_malformed_command_line(home: Path) -> None:
    proc = assay_cli("query", "SELECT 1", "--json", "--format", "csv", home=home, check=2)
    assert "give one of them" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize(("sql", "first"), [
    ("SELEC * FROM runs", 'error: query failed: Parser Error: syntax error at or near "SELEC"'),
    ("SELECT * FROM no_such_view", "error: query failed: Catalog Error: Table with name no_such_view does not exist!"),
])
def test_bad_sql_is_one_red_line_and_exit_1(home: Path, sql: str, first: str) -> None:
    proc = assay_cli("query", sql, home=home, check=1)
    assert proc.stderr.startswith(first) and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "docs/reference/query.md" in proc.stderr and proc.stdout == ""


def test_an_unknown_format_is_a_malformed_command_line(home: Path) -> None:
    assay_cli("query", "SELECT 1", "--format", "xml", home=home, check=2)


def test_the_readme_examples_run(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = _section("Asking your own questions")
    assert "docs/reference/query.md" in section
    commands = [shlex.split(line)[1:] for line in section.splitlines() if line.startswith("assay query ")]
    assert len(commands) == 2
    outputs = [assay_cli(*args, home=home).stdout for args in commands]
    assert "verdict" in outputs[0] and "row(s)" in outputs[0]
    assert next(csv.reader(io.StringIO(outputs[1]))) == ["run_id", "status", "outcome"]
    assert len(outputs[1].splitlines()) == 3  # the header and the two demo runs

    [python] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    monkeypatch.setenv("ASSAY_HOME", str(home))
    namespace: dict = {}
    exec(compile(python, str(README), "exec"), namespace)  # noqa: S102 - the README's own example
    assert namespace["failures"]["results"].sum() > 0
