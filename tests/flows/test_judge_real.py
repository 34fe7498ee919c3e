"""Rubric assertions judged for real, through the fake OpenAI-compatible server, on the demo's recorded calls.

The demo's northside suite replays 12 recorded calls with two rubric assertions each (``answers_question``,
``stays_in_role``); judging sends those to our judge, caches the verdicts, and a re-judge of unchanged
pairs sends nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import polars as pl
import pytest

from assay.adapters.http import RetryPolicy
from assay.flows import judge_calls
from assay.flows import operations as ops
from assay.flows.cli import main
from assay.flows.demo import DEMO
from assay.flows.judging import judge_runs, verdicts_for
from assay.flows.workspace import Workspace, open_workspace
from assay.fakes.openai import FakeOpenAI

KEY = "sk-judge-flow-0123456789abcdef"
MODEL = "judge-model"
SUITE = "northside-hvac/recorded-calls"
IN_ROLE = "Northside's receptionist"  # a phrase of the stays_in_role rubric


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(key=KEY) as fake:
        fake.add_rule(IN_ROLE, {"verdict": "fail", "rationale": "The agent called itself a technician."})
        yield fake


def _workspace(monkeypatch: pytest.MonkeyPatch, base_url: str) -> Workspace:
    env = {"ASSAY_JUDGE_BASE_URL": base_url, "ASSAY_JUDGE_MODEL": MODEL, "ASSAY_JUDGE_API_KEY": KEY,
           "ASSAY_JUDGE_USD_PER_1K_TOKENS_IN": "0.5", "ASSAY_JUDGE_USD_PER_1K_TOKENS_OUT": "1.5",
           "ASSAY_JUDGE_CONCURRENCY": "4"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return open_workspace(create=True)


@pytest.fixture
def ws(assay_home, monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI) -> Iterator[Workspace]:
    ws = _workspace(monkeypatch, server.url + "/v1")
    ops.load(ws, str(DEMO / "bundle.yaml"))
    yield ws
    ws.close()


def run_suite(ws: Workspace) -> str:
    return ops.run_to_final(ws, SUITE).run_id


def rubric_atoms(ws: Workspace) -> pl.DataFrame:
    atoms = ws.lake.read("assertion_results").filter(pl.col("mechanism") == "rubric")
    return atoms.filter(pl.col("judged_at") == pl.col("judged_at").max())


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--json"])
    assert done.value.code in (0, None)
    return json.loads(capsys.readouterr().out)


def test_rubric_results_are_judged_with_met_evaluator_tokens_and_cost(ws: Workspace, server: FakeOpenAI) -> None:
    run_id = run_suite(ws)
    atoms = rubric_atoms(ws)
    executed = atoms.filter(pl.col("evaluator") != "assay:execution")
    assert executed.height >= 2 and set(executed["evaluator"]) == {f"assay:judge:{MODEL}"}
    stays = executed.filter(pl.col("assertion_key") == "stays_in_role")
    answers = executed.filter(pl.col("assertion_key") == "answers_question")
    assert stays["met"].to_list() == [False] * stays.height and set(stays["value"]) == {0.0}
    assert set(stays["reason"]) == {"The agent called itself a technician. [response_format: json_schema]"}
    assert answers["met"].to_list() == [True] * answers.height and set(answers["value"]) == {1.0}
    assert executed["judge_tokens_in"].min() > 0 and executed["judge_tokens_out"].min() > 0
    expected = executed["judge_tokens_in"] / 1000 * 0.5 + executed["judge_tokens_out"] / 1000 * 1.5
    assert executed["judge_cost_usd"].to_list() == pytest.approx(expected.to_list())
    # One request per distinct (rubric, evidence): the judge saw each executed case run once per rubric.
    assert server.completions() == executed.height == len(server.requests)
    others = ws.lake.read("assertion_results").filter(pl.col("mechanism") != "rubric")
    assert others["judge_tokens_in"].null_count() == others.height
    # The judge's verdicts count: publish_gate needs the rubric group at 100%, and stays_in_role now fails it.
    (gate,) = [v for v in verdicts_for(ws, [run_id], cases=True) if v["consumer"] == "publish_gate"]
    decided = [c for c in gate["cases"] if c["verdict"] != "error"]
    assert decided and all(c["verdict"] == "fail" and "stays_in_role" in c["reason"] for c in decided)


def test_a_re_judge_of_unchanged_pairs_sends_nothing(ws: Workspace, server: FakeOpenAI) -> None:
    run_id = run_suite(ws)
    before = len(server.requests)
    carried = judge_runs(ws, [run_id], trigger="rejudge")
    assert carried["judge_calls"] == 0 and carried["outcomes"] == 0
    forced = judge_runs(ws, [run_id], trigger="rejudge", force=True)  # every pair fresh: rubric from the cache
    atoms = rubric_atoms(ws).filter(pl.col("evaluator") != "assay:execution")
    assert forced["judge_calls"] == 0 and forced["judge_cached"] == atoms.height > 0
    assert len(server.requests) == before
    assert atoms["met"].null_count() == 0 and atoms["judge_tokens_in"].min() > 0  # the judgement keeps its spend


def test_the_printed_count_is_the_requests_sent_retries_included(
    prefect_harness, ws: Workspace, server: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = ops.start_run(ws, SUITE).run_id
    ops.execute_run(ws, run_id)
    server.faults.rate_limited, server.faults.retry_after = 3, 0
    judged = cli_json(capsys, "judge", run_id)["judged"]
    assert judged["judge_calls"] == len(server.requests) == judged["judge_asked"] + 3
    assert [r["status"] for r in server.requests].count(429) == 3
    before = len(server.requests)
    main_text = _cli_text(capsys, "judge", run_id, "--force")
    assert "judge calls 0 (requests sent, retries included)" in main_text and len(server.requests) == before


def _cli_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    assert done.value.code in (0, None)
    return capsys.readouterr().out


def test_an_unreachable_judge_gives_errors_never_fails_and_is_asked_again_later(
    assay_home, monkeypatch: pytest.MonkeyPatch, server: FakeOpenAI
) -> None:
    monkeypatch.setattr(judge_calls, "RETRY", RetryPolicy(attempts=2, base_delay=0.01))
    ws = _workspace(monkeypatch, "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    ops.load(ws, str(DEMO / "bundle.yaml"))
    run_id = run_suite(ws)
    atoms = rubric_atoms(ws).filter(pl.col("evaluator") != "assay:execution")
    assert atoms.height > 0 and atoms["met"].null_count() == atoms.height
    assert set(atoms["evaluator"]) == {f"assay:judge:{MODEL}"}
    assert all(r.startswith(("no verdict: judge: no response: ", "not sent: an earlier request"))
               for r in atoms["reason"])
    verdicts = {v["consumer"]: v for v in verdicts_for(ws, [run_id])}
    assert verdicts["nightly_sweep"]["stamped"] == "error"  # undetermined, never a fail
    ws.close()
    # The judge is back: a plain re-judge asks again what got no verdict (errors are not carried or cached).
    back = _workspace(monkeypatch, server.url + "/v1")
    judged = judge_runs(back, [run_id], trigger="rejudge")
    assert judged["judge_calls"] == atoms.height and judged["judge_cached"] == 0
    assert rubric_atoms(back).filter(pl.col("evaluator") != "assay:execution")["met"].null_count() == 0
    back.close()


def test_judging_reports_its_progress_answer_by_answer(ws: Workspace, server: FakeOpenAI) -> None:
    run_id = ops.start_run(ws, SUITE).run_id
    ops.execute_run(ws, run_id)
    heard: list[tuple[int, int, str]] = []
    judged = judge_runs(ws, [run_id], progress=lambda done, total, unit: heard.append((done, total, unit)))
    stored = judged["case_runs"]
    answers = [(d, t) for d, t, unit in heard if unit == "judge answers"]
    assert heard[0] == (0, stored, "case runs") and heard[-1] == (stored, stored, "case runs")
    # every answer is heard once, in order, against the number of questions asked
    assert answers == [(n, judged["judge_asked"]) for n in range(judged["judge_asked"] + 1)]
    assert judged["judge_asked"] == server.completions() > 0
