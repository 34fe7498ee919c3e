"""Turn-level voice metrics through the real CLI: the README's example (a call set with known timings)
judged by the ``timing.*`` mechanisms, the ``turns`` / ``turn_metrics`` / ``turn_metrics_daily`` views
checked figure by figure against hand-computed values, and a timing assertion on a runner without
timings failing as unsupported.

The calls (examples/voice-timing/calls.jsonl), gaps in ms (a turn's t minus the previous turn's end_t):

- call-lh-1: -500 (turn 1, a barge-in), 800 (reply), 2500 (a silence), -300 (turn 4, a talk-over, a
  reply), 500, 1200 (reply). Replies -300, 800, 1200: p50 800, p95 800 + 0.9 * 400 = 1160, max 1200.
  Agent speaks 2.0 + 2.2 + 2.3 + 1.8 = 8.3 s of 12.8 s: talk ratio 0.6484375.
- call-lh-2: 400, 600 (reply), 200, 500 (reply). p50 550, p95 500 + 0.95 * 100 = 595, max 600; agent
  1.0 + 1.4 + 2.0 = 4.4 s of 6.8 s.
- call-lh-3: turns with t only: nothing measurable.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from command_line import assay
from readme_blocks import ROOT, WIDTH, sh_block

EXAMPLE = ROOT / "examples" / "voice-timing"
SECTION = "### Turn-level voice metrics"


def _ok(home: Path, *args: str) -> str:
    """``assay ARGS`` from the repository's root, as the README's lines are typed, at the README's width."""
    return assay(*args, home=home, cwd=ROOT, columns=WIDTH).stdout


def _rows(home: Path, sql: str) -> list[dict]:
    return json.loads(_ok(home, "query", sql, "--format", "json"))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README section's commands (in this process) in a fresh workspace, then a config suite (config_check, no
    timings) with a timing assertion, run too."""
    home = tmp_path_factory.mktemp("voice") / "home"
    _ok(home, "init")
    outputs = [_ok(home, *shlex.split(line.command)[1:]) for line in sh_block(SECTION)]
    home.joinpath("readme-outputs.json").write_text(json.dumps(outputs))
    extra = home.parent / "config-bundle"
    extra.mkdir()
    shutil.copy(ROOT / "flows" / "demo" / "configs" / "acme-main-line.json", extra / "config.json")
    doc = {"schema": "assay.bundle/v1", "consumers": [{"key": "voice-gate", "description": "Holds replies to the bar."}],
           "teams": [{"id": "lakeside-config", "name": "Lakeside config", "cases": [
               {"key": "any-call", "title": "Any call", "situation": {"caller": "A caller", "wants": "Help"}}],
               "suites": [{"key": "config-line", "name": "Config", "target": {"config": "config.json"},
                           "cases": ["any-call"],
                           "assertions": [{"key": "replies_fast", "mechanism": "timing.response_latency",
                                           "params": {"p95_ms": 800}}],
                           "criteria": {"voice-gate": {"required": ["replies_fast"]}}}]}]}
    (extra / "bundle.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    _ok(home, "load", str(extra / "bundle.yaml"))
    _ok(home, "run", "lakeside-config/config-line")
    return home


def test_the_readme_example_prints_each_calls_figures(home: Path) -> None:
    lines = sh_block(SECTION)
    assert [line.command.split()[:2] for line in lines] == [["assay", "load"], ["assay", "run"], ["assay", "query"]]
    printed = json.loads(home.joinpath("readme-outputs.json").read_text())[-1]
    # the query prints one record per row at 80 columns: the leaking-heater call first, then the two quotes
    fields = [line.split() for line in printed.splitlines() if line and not line.startswith(("row ", "3 row"))]
    values = [dict(f for f in fields[k:k + 7]) for k in range(0, 21, 7)]  # type: ignore[misc]
    assert values[0] == {"case_key": "leaking-heater", "p50": "800.0", "p95": "1160.0", "barge_ins": "1",
                         "talk_overs": "1", "long_silences": "1", "talk": "0.648"}
    assert values[1] == {"case_key": "quote-request", "p50": "550.0", "p95": "595.0", "barge_ins": "0",
                         "talk_overs": "0", "long_silences": "0", "talk": "0.647"}
    assert values[2] == {"case_key": "quote-request", "p50": "null", "p95": "null", "barge_ins": "0",
                         "talk_overs": "0", "long_silences": "0", "talk": "null"}


def test_timing_assertions_are_judged_from_the_turn_timings(home: Path) -> None:
    rows = _rows(home, "SELECT c.source_ref AS call, a.assertion_key AS key, a.met, a.value, a.reason, a.evaluator "
                       "FROM assertion_results a JOIN case_runs c USING (case_run_id) "
                       "WHERE c.suite_id IN (SELECT suite_id FROM suites WHERE suite_key = 'timed-calls')")
    got = {(r["call"], r["key"]): r for r in rows}
    assert len(got) == 12 and {r["evaluator"] for r in rows} == {"assay:timing"}
    leak = {key: got["call-lh-1", key] for key in ("replies_fast", "no_interruptions", "no_long_silence", "lets_caller_talk")}
    assert [leak[k]["met"] for k in leak] == [False, False, False, False]
    assert leak["replies_fast"]["value"] == pytest.approx(1160.0)
    assert leak["replies_fast"]["reason"] == ("the 95th percentile of the agent's replies is over 800 ms; the agent's "
                                              "slowest reply (turn 6) came 1200 ms after the caller stopped")
    assert leak["no_interruptions"]["value"] == 2.0 and leak["no_interruptions"]["reason"] == (
        "barge-ins (the caller over the agent): 1, the first at turn 1; at most 0 allowed; talk-overs (the agent over "
        "the caller): 1, the first at turn 4; at most 0 allowed")
    assert leak["no_long_silence"]["value"] == pytest.approx(2500.0)
    assert "the longest, before turn 3, lasted 2500 ms" in leak["no_long_silence"]["reason"]
    assert leak["lets_caller_talk"]["value"] == pytest.approx(8.3 / 12.8)
    clean = [got["call-lh-2", k] for k in ("replies_fast", "no_interruptions", "no_long_silence", "lets_caller_talk")]
    assert [r["met"] for r in clean] == [True] * 4
    assert [r["value"] for r in clean] == [pytest.approx(595.0), 0.0, pytest.approx(600.0), pytest.approx(4.4 / 6.8)]
    untimed = [got["call-lh-3", k] for k in ("replies_fast", "no_interruptions", "no_long_silence", "lets_caller_talk")]
    assert [r["met"] for r in untimed] == [None] * 4
    assert untimed[0]["reason"] == ("turn timings are missing: the reply at turn 2 has no t, or the caller turn before "
                                    "it no end_t, so response latency cannot be measured")


def test_a_runner_without_timings_fails_the_assertion_as_unsupported(home: Path) -> None:
    [row] = _rows(home, "SELECT a.met, a.value, a.reason, a.evaluator FROM assertion_results a "
                        "JOIN case_runs c USING (case_run_id) WHERE c.runner = 'config_check'")
    assert row["met"] is False and row["evaluator"] == "assay:unsupported"
    assert row["reason"].startswith('mechanism "timing.response_latency" is not supported by runner "config_check"; '
                                    "it supports: structural.clause_present")
    [verdict] = _rows(home, "SELECT v.verdict FROM verdicts_now v JOIN runs r USING (run_id) "
                            "JOIN suites s ON s.suite_id = r.suite_id WHERE s.suite_key = 'config-line'")
    assert verdict["verdict"] == "fail"


def test_the_turns_view_has_stable_ids_and_the_timings(home: Path) -> None:
    rows = _rows(home, "SELECT t.* FROM turns t JOIN case_runs c USING (case_run_id) WHERE c.source_ref = 'call-lh-1' "
                       "ORDER BY position")
    assert [r["position"] for r in rows] == list(range(7))
    assert [r["turn_id"] for r in rows] == [f"{rows[0]['case_run_id']}:{k}" for k in range(7)]
    assert [r["role"] for r in rows] == ["agent", "caller"] * 3 + ["agent"]
    assert rows[0]["gap_ms"] is None
    assert [r["gap_ms"] for r in rows[1:]] == pytest.approx([-500, 800, 2500, -300, 500, 1200])
    assert [r["latency_ms"] for r in rows] == [None, None, pytest.approx(800), None, pytest.approx(-300), None,
                                               pytest.approx(1200)]
    assert [k for k, r in enumerate(rows) if r["barge_in"]] == [1]
    assert [k for k, r in enumerate(rows) if r["talk_over"]] == [4]
    assert [r["duration_ms"] for r in rows] == pytest.approx([2000, 2500, 2200, 1500, 2300, 500, 1800])
    assert {r["suite_key"] for r in rows} == {"timed-calls"} and {r["team_id"] for r in rows} == {"lakeside-heating"}


def test_turn_metrics_per_call_and_per_day(home: Path) -> None:
    per_call = {r["case_key"] + ":" + str(r["replies"]): r for r in _rows(
        home, "SELECT * FROM turn_metrics WHERE suite_key = 'timed-calls'")}
    leak, quote, untimed = per_call["leaking-heater:3"], per_call["quote-request:2"], per_call["quote-request:0"]
    assert (leak["turns"], leak["untimed_turns"], leak["barge_ins"], leak["talk_overs"], leak["long_silences"]) == (
        7, 0, 1, 1, 1)
    assert [leak[c] for c in ("latency_p50_ms", "latency_p95_ms", "latency_max_ms", "longest_gap_ms", "talk_ratio")] == (
        pytest.approx([800, 1160, 1200, 2500, 8.3 / 12.8]))
    assert [quote[c] for c in ("latency_p50_ms", "latency_p95_ms", "latency_max_ms", "longest_gap_ms", "talk_ratio")] == (
        pytest.approx([550, 595, 600, 600, 4.4 / 6.8]))
    assert (quote["barge_ins"], quote["talk_overs"], quote["long_silences"]) == (0, 0, 0)
    assert (untimed["turns"], untimed["untimed_turns"], untimed["latency_p95_ms"], untimed["talk_ratio"]) == (3, 3, None, None)
    [day] = _rows(home, "SELECT * FROM turn_metrics_daily WHERE suite_key = 'timed-calls'")
    assert (day["team_id"], day["case_runs"], day["turns"], day["replies"]) == ("lakeside-heating", 3, 15, 5)
    # every reply of the day: -300, 500, 600, 800, 1200 -> p50 600, p95 800 + 0.8 * 400 = 1120
    assert [day[c] for c in ("latency_p50_ms", "latency_p95_ms", "latency_max_ms")] == pytest.approx([600, 1120, 1200])
    assert [day[c] for c in ("barge_ins_per_call", "talk_overs_per_call", "long_silences_per_call")] == (
        pytest.approx([1 / 3] * 3))
    assert day["talk_ratio"] == pytest.approx((8.3 / 12.8 + 4.4 / 6.8) / 2)
