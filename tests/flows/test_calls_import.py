"""Production calls become tests, through the real CLI: `assay calls import` of each vendor's export into the
demo's call-set suite, replayed by `assay run`; drafts reviewed, accepted into a bundle, counted only once loaded.
The README's subsection runs as written."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readme_blocks import assay as readme_assay  # noqa: E402
from readme_blocks import checkout, expected_exit, sh_block  # noqa: E402
from command_line import assay  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "calls"
SUITE = "northside-hvac/recorded-calls"
EXPORTS = {"vapi": "vapi-calls.json", "elevenlabs": "elevenlabs-conversations.json", "hamming": "hamming-results.json"}
EXPECTED = {  # per vendor: matched call -> (case, verdict), the drafted call, the skipped call
    "vapi": ({"vapi-5b2d0e7a-0c39-4f7e-9a55-2f7d1c6b8e41": ("water-heater-outside-area", "pass"),
              "vapi-7f3e9d21-b8a4-4c0e-9f6d-2a1b3c4d5e6f": ("no-heat-elderly-caller", "error")},
             "vapi-c91f44b0-5e1a-4d7b-8a26-93e0d4f7a2c8", "vapi-e0a7b3f2-1c4d-4e8f-b6a9-7d2c5e1f0a93"),
    "elevenlabs": ({"elevenlabs-conv_01jdb2m4n6p8q0r2s4t6v8w0x2": ("maintenance-plan-question", "pass"),
                    "elevenlabs-conv_01jdbh8k0m2n4p6q8r0s2t4v6w": ("angry-billing-dispute", "error")},
                   "elevenlabs-conv_01jdb7f3g5h7j9k1l3m5n7p9q1", "elevenlabs-conv_01jdbc1d3f5g7h9j1k3l5m7n9p"),
    "hamming": ({"hamming-tcr_5e1a90b7": ("no-heat-elderly-caller", "pass"),
                 "hamming-tcr_f04c8e3b": ("angry-billing-dispute", "error")},
                "hamming-tcr_9b34c7e2", "hamming-tcr_2d7f6a10"),
}
COSTS = {  # per vendor: matched call -> (cost_usd, vendor_cost, vendor_cost_unit) as the lake holds them
    "vapi": {"vapi-5b2d0e7a-0c39-4f7e-9a55-2f7d1c6b8e41": (0.212, 0.212, "USD"),
             "vapi-7f3e9d21-b8a4-4c0e-9f6d-2a1b3c4d5e6f": (0.012, 0.012, "USD")},
    "elevenlabs": {"elevenlabs-conv_01jdb2m4n6p8q0r2s4t6v8w0x2": (0.0831, 456.0, "credits"),  # its own dollar figure
                   "elevenlabs-conv_01jdbh8k0m2n4p6q8r0s2t4v6w": (None, 0.0, "credits")},  # credits: never dollars
    "hamming": {"hamming-tcr_5e1a90b7": (None, None, None), "hamming-tcr_f04c8e3b": (None, None, None)},
}
EVALUATORS = {"vapi": {"vapi:analysis"}, "elevenlabs": {"elevenlabs:analysis", "elevenlabs:criteria"},
              "hamming": {"hamming:test", "hamming:assertion", "hamming:metric"}}


def _valid(document: dict) -> dict:
    """The document validates against its model and its committed JSON Schema."""
    import jsonschema

    from assay.core.document_models import validate

    validate(document)
    schema = json.loads((ROOT / "docs" / "schemas" / f"{document['schema']}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    return document


def cli(home: Path, *args: str, check: int | None = 0) -> subprocess.CompletedProcess:
    return assay(*args, home=home, check=check, columns=80)


def doc(home: Path, *args: str) -> dict:
    return json.loads(cli(home, *args, "--json").stdout)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a workspace (home/) that loaded the starter pack and a copy of the demo (demo/)."""
    root = tmp_path_factory.mktemp("calls")
    shutil.copytree(ROOT / "flows" / "demo", root / "demo")
    cli(root / "home", "init")
    cli(root / "home", "load", str(ROOT / "examples" / "templates" / "starter-pack.yaml"))
    cli(root / "home", "load", str(root / "demo" / "bundle.yaml"))
    return root


@pytest.fixture
def ws(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "ws", symlinks=True)
    return tmp_path / "ws"


def _import(ws: Path, vendor: str, *extra: str, check: int | None = 0) -> subprocess.CompletedProcess:
    return cli(ws / "home", "calls", "import", vendor, str(FIXTURES / EXPORTS[vendor]), "--suite", SUITE, "--out",
               str(ws / "demo" / "calls" / "northside-recorded.jsonl"), *extra, check=check)


def _with_template(ws: Path, vendor: str, *extra: str) -> dict:
    proc = _import(ws, vendor, "--template", "out-of-area", "--facts", str(FIXTURES / "northside-facts.yaml"),
                   "--json", *extra)
    return json.loads(proc.stdout)


def _run(home: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """Run the suite; its id and, per consumer, each call id's verdict."""
    run_id = doc(home, "run", SUITE)["run"]["run_id"]
    verdicts = doc(home, "verdicts", run_id, "--cases")["verdicts"]
    return run_id, {v["consumer"]: {c["call_id"]: (c["case_key"], c["verdict"]) for c in v["cases"]} for v in verdicts}


def _cases(home: Path) -> dict[str, list[str]]:
    """The team's cases in the catalog, each with the suites it is in."""
    return {c["key"]: c["suites"] for c in doc(home, "ls", "cases", "--team", "northside-hvac")["cases"]}


@pytest.mark.parametrize("vendor", sorted(EXPORTS))
def test_an_export_becomes_case_runs_with_the_vendors_verdicts(ws: Path, vendor: str) -> None:
    matched, drafted, skipped = EXPECTED[vendor]
    call_set = ws / "demo" / "calls" / "northside-recorded.jsonl"
    body = _valid(_with_template(ws, vendor))
    assert body["schema"] == "assay.calls.import" and body["changed"]
    assert {m["call_id"]: (m["case"], m["verdict"]) for m in body["matched"]} == matched
    assert [d["call_id"] for d in body["drafted"]] == [drafted]
    assert [s["call_id"] for s in body["skipped"]] == [skipped] and body["skipped"][0]["verdict"] == "pass"
    written = call_set.read_bytes()
    again = _with_template(ws, vendor)  # idempotent: nothing new, nothing written
    assert not again["changed"] and sorted(again["already_imported"]) == sorted([*matched, drafted])
    assert call_set.read_bytes() == written
    drafts = call_set.with_name("northside-recorded.drafts.yaml")
    assert drafts.read_text().count("\n- key: ") == 1

    home = ws / "home"
    cli(home, "load", str(ws / "demo" / "bundle.yaml"))
    run_id, verdicts = _run(home)
    for call_id, (case, verdict) in matched.items():  # the vendor-side failure is an ERROR, never a FAIL
        got = verdicts["blueprint_ci"][call_id]
        assert got[0] == case and (got[1] == "error") == (verdict == "error"), (call_id, got)
    assert drafted not in verdicts["blueprint_ci"] and skipped not in verdicts["blueprint_ci"]
    sql = ("SELECT e.evaluator, e.verdict, c.source_ref, c.status FROM runner_evaluations e JOIN case_runs c "
           f"USING (case_run_id) WHERE c.run_id = '{run_id}' AND c.source_ref LIKE '{vendor}-%'")
    rows = json.loads(cli(home, "query", sql, "--format", "json").stdout)
    assert {r["evaluator"] for r in rows} == EVALUATORS[vendor]  # the names the vendor's runner uses
    ok = next(c for c, (_, v) in matched.items() if v == "pass")
    assert {r["verdict"] for r in rows if r["source_ref"] == ok} >= {"pass"}
    assert "fail" not in {r["verdict"] for r in rows if r["source_ref"] == ok}
    sql = ("SELECT source_ref, cost_usd, vendor_cost, vendor_cost_unit FROM case_runs "
           f"WHERE run_id = '{run_id}' AND source_ref LIKE '{vendor}-%'")
    costs = json.loads(cli(home, "query", sql, "--format", "json").stdout)
    assert {r["source_ref"]: (r["cost_usd"], r["vendor_cost"], r["vendor_cost_unit"]) for r in costs} == COSTS[vendor]


def test_a_draft_counts_only_once_accepted_and_loaded(ws: Path) -> None:
    home, bundle = ws / "home", ws / "demo" / "bundle.yaml"
    call_set = ws / "demo" / "calls" / "northside-recorded.jsonl"
    key = _with_template(ws, "vapi")["drafted"][0]["key"]
    listed = _valid(doc(home, "calls", "review", str(call_set)))
    assert [d["key"] for d in listed["drafts"]] == [key] and listed["drafts"][0]["turns"] == 3
    cli(home, "load", str(bundle))
    assert key not in _cases(home)  # a draft is not in the catalog
    _, before = _run(home)
    assert all(k != key for k, _ in before["blueprint_ci"].values())

    accepted = _valid(doc(home, "calls", "review", str(call_set), "--accept", key, "--into", str(bundle)))
    assert accepted["action"] == "accepted" and accepted["drafts"] == []
    assert "# The demo bundle" in bundle.read_text()  # the user's file keeps its comments
    cli(home, "run", SUITE, check=82)  # the call set changed: the run refuses it until the bundle is loaded again
    assert key not in _cases(home)
    cli(home, "load", str(bundle))
    assert _cases(home)[key] == ["recorded-calls"]
    run_id, after = _run(home)
    call = "vapi-c91f44b0-5e1a-4d7b-8a26-93e0d4f7a2c8"
    assert after["blueprint_ci"][call][0] == key
    shown = doc(home, "show", call, "--run", run_id)
    met = {r["assertion_key"]: r["met"] for r in shown["results"]}
    assert met["declines_out_of_area"] is False and met["checks_area_with_tool"] is False  # what the call got wrong
    again = _with_template(ws, "vapi")
    assert not again["changed"] and call in again["already_imported"]


def test_a_deleted_draft_is_not_drafted_again(ws: Path) -> None:
    call_set = ws / "demo" / "calls" / "northside-recorded.jsonl"
    key = _with_template(ws, "hamming")["drafted"][0]["key"]
    deleted = _valid(doc(ws / "home", "calls", "review", str(call_set), "--delete", key))
    assert deleted["drafts"] == [] and deleted["deleted"] == ["hamming-tcr_9b34c7e2"]
    assert _with_template(ws, "hamming")["drafted"] == []


def test_without_a_template_a_failing_stranger_is_listed_not_drafted(ws: Path) -> None:
    body = json.loads(_import(ws, "elevenlabs", "--json").stdout)
    why = {s["call_id"]: s["reason"] for s in body["skipped"]}
    assert "--template" in why["elevenlabs-conv_01jdb7f3g5h7j9k1l3m5n7p9q1"] and body["drafted"] == []
    assert not (ws / "demo" / "calls" / "northside-recorded.drafts.yaml").exists()


def test_secrets_in_an_export_are_redacted(ws: Path) -> None:
    _import(ws, "vapi")
    text = (ws / "demo" / "calls" / "northside-recorded.jsonl").read_text()
    assert "vapi_whsec_3c9f1e0a7b2d4c6e8f0a1b2c" not in text and "[redacted]" in text


def test_a_malformed_export_names_the_record_and_field_and_writes_nothing(ws: Path) -> None:
    calls = json.loads((FIXTURES / "vapi-calls.json").read_text())
    calls[2]["artifact"]["messages"][1]["role"] = "narrator"
    del calls[3]["id"]
    bad = ws / "bad.json"
    bad.write_text(json.dumps(calls))
    call_set = ws / "demo" / "calls" / "northside-recorded.jsonl"
    before = call_set.read_bytes()
    proc = cli(ws / "home", "calls", "import", "vapi", str(bad), "--suite", SUITE, "--out", str(call_set), check=1)
    assert str(bad) in proc.stderr and "nothing written" in proc.stderr
    assert "record 3 (e0a7b3f2-1c4d-4e8f-b6a9-7d2c5e1f0a93): artifact.messages[1].role" in proc.stderr
    assert "'narrator'" in proc.stderr and "record 4: id: expected the call's id" in proc.stderr
    assert call_set.read_bytes() == before
    wrong = cli(ws / "home", "calls", "import", "hamming", str(FIXTURES / "vapi-calls.json"), "--suite", SUITE,
                "--out", str(call_set), check=1)
    assert "expected a test run's results" in wrong.stderr
    unknown = cli(ws / "home", "calls", "import", "bland", str(bad), "--suite", SUITE, "--out", str(call_set), check=2)
    assert "no vendor 'bland'" in unknown.stderr and "elevenlabs" in unknown.stderr


def test_a_truncated_export_names_where_it_breaks_and_writes_nothing(ws: Path) -> None:
    call_set = ws / "demo" / "calls" / "northside-recorded.jsonl"
    before = call_set.read_bytes()
    lines = (FIXTURES / "elevenlabs-conversations.json").read_text().splitlines()
    cut = ws / "cut.json"
    cut.write_text("\n".join(lines[:30]) + "\n" + lines[30][:12])  # the download stopped on line 31
    proc = cli(ws / "home", "calls", "import", "elevenlabs", str(cut), "--suite", SUITE, "--out", str(call_set),
               check=1)
    said = " ".join(proc.stderr.split())
    assert f"{cut}: nothing written" in said and "line 31, column " in said and "cut short" in said
    assert call_set.read_bytes() == before and not call_set.with_name("northside-recorded.drafts.yaml").exists()


def test_a_webhook_body_imports_like_the_conversation_it_carries(ws: Path) -> None:
    out = ws / "demo" / "calls" / "northside-recorded.jsonl"
    body = json.loads(cli(ws / "home", "calls", "import", "elevenlabs", str(FIXTURES / "elevenlabs-post-call-"
                                                                             "transcription.json"),
                          "--suite", SUITE, "--out", str(out), "--json").stdout)
    assert body["matched"] == [{"call_id": "elevenlabs-conv_01jdc4r6t8v0w2x4y6z8a0b2c4",
                                "case": "no-heat-elderly-caller", "verdict": "pass"}]
    line = json.loads(out.read_text().splitlines()[-1])
    assert (line["vendor_cost"], line["vendor_cost_unit"], line.get("cost_usd")) == (713, "credits", None)
    again = cli(ws / "home", "calls", "import", "elevenlabs", str(FIXTURES / "elevenlabs-conversation.json"),
                "--suite", SUITE, "--out", str(out), "--json").stdout
    assert json.loads(again)["already_imported"] == ["elevenlabs-conv_01jdc4r6t8v0w2x4y6z8a0b2c4"]


def test_the_readme_subsection_runs_as_written(readme_walk, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = checkout(home)
    lines = sh_block("### Production calls become tests")
    said = []
    for line in lines:
        argv = shlex.split(line.command)
        if argv[0] == "cp":
            subprocess.run(argv, cwd=root, check=True)
            continue
        proc = readme_assay(home, *argv[1:])
        assert proc.returncode == expected_exit(line), f"{line}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        said.append(proc.stdout)
    assert "  2 matched, 1 drafted, 1 skipped, 0 already imported\n" in said[3]
    assert "  0 matched, 0 drafted, 1 skipped, 3 already imported\n" in said[4]
    assert "out-of-area-vapi-c91f44b0" in said[5]
    assert all(len(ln) <= 80 for out in said for ln in out.splitlines())
    assert "out-of-area-vapi-c91f44b0" in (root / "my-demo" / "bundle.yaml").read_text()
    assert not (ROOT / "my-demo").exists()


def test_accepting_into_block_lists_keeps_the_rest_of_the_file() -> None:
    from assay.flows.calls_review import insert_case

    text = ("schema: assay.bundle/v1\nteams:\n  - id: t1\n    name: T\n    cases:\n      - key: a\n"
            "        title: A  # kept\n        situation: {caller: c, wants: w}\n    # the suites\n"
            "    suites:\n      - key: s\n        name: S\n        target: {call_set: c.jsonl}\n        cases:\n"
            "          - a   # first\n        tags: [x]\n")
    case = {"key": "b", "title": "B", "situation": {"caller": "c", "wants": "w", "turns": ["hi"]}}
    out = insert_case(text, "b.yaml", "t1", "s", case)
    assert out.replace("      - key: b\n        title: B\n        situation:\n          caller: c\n          wants: w\n"
                       "          turns:\n          - hi\n", "").replace("          - b\n", "") == text
    import yaml

    team = yaml.safe_load(out)["teams"][0]
    assert [c["key"] for c in team["cases"]] == ["a", "b"] and team["suites"][0]["cases"] == ["a", "b"]
