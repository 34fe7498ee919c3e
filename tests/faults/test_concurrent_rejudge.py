"""Two re-judges of the same suite at once, on SQLite and PostgreSQL: a pass refused because the other committed
on the same runs first is planned again over what that one wrote, so both end well and every run is judged by
both; a pass refused every time ends with a clear error and writes nothing."""

from __future__ import annotations

import threading

import polars as pl
import pytest
from test_lake_crash_points import check_invariants, recover

from assay.core.errors import ConcurrentWriteError
from assay.flows import judging
from assay.flows import operations as ops
from assay.flows.demo import SUITES
from assay.flows.workspace import open_workspace
from assay.storage import judgments

SUITE = SUITES[0]



def test_two_rejudges_of_one_suite_at_once_both_judge_every_run(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [ops.run_to_final(ws, SUITE).run_id for _ in range(3)]
    case_runs = ws.lake.read("case_runs").group_by("run_id").len()
    both_staged = threading.Barrier(2, timeout=60)
    stage_pass, first = judgments.stage_pass, threading.local()

    def staged_together(*args, **kwargs):  # each rejudge's first pass is staged over the same state as the other's
        staged = stage_pass(*args, **kwargs)
        if not getattr(first, "done", False):
            first.done = True
            both_staged.wait()
        return staged

    monkeypatch.setattr(judgments, "stage_pass", staged_together)
    results: dict[int, list[dict] | BaseException] = {}

    def rejudge(n: int) -> None:  # as `assay rejudge --suite --force` does: one pass per run, in turn
        mine = open_workspace()  # an engine of its own
        try:
            results[n] = [judging.judge_runs(mine, [run], trigger="rejudge", force=True) for run in runs]
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results[n] = exc
        finally:
            mine.close()

    threads = [threading.Thread(target=rejudge, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(isinstance(r, list) for r in results.values()) and len(results) == 2, results
    for done in results.values():
        assert [d["outcomes"] for d in done] == [case_runs.filter(pl.col("run_id") == r)["len"][0] for r in runs]
    rejudged = ws.lake.read("outcomes").filter(pl.col("trigger") == "rejudge")
    assert rejudged.group_by("case_run_id").len()["len"].to_list() == [2] * case_runs["len"].sum()  # by both
    recover(ws)  # a refused attempt's staged files are nobody's: vacuum takes them past the grace period
    check_invariants(ws)


def test_a_pass_refused_every_time_ends_with_a_clear_error_and_writes_nothing(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    run = ops.run_to_final(ws, SUITE).run_id
    before = {name: ws.lake.read(name).height for name in ("outcomes", "assertion_results", "current_results")}
    tries: list[str] = []

    def refused(conn, lake, staged) -> None:
        tries.append(staged.pass_id)
        raise ConcurrentWriteError(f"judging pass {staged.pass_id}: another pass changed these runs meanwhile")

    monkeypatch.setattr(judgments, "record_pass", refused)
    with pytest.raises(ConcurrentWriteError) as raised:
        judging.judge_runs(ws, [run], trigger="rejudge", force=True)
    assert len(tries) == judging.ATTEMPTS
    assert str(raised.value).startswith(f"judging {run}: other passes changed these runs' current results "
                                        f"{judging.ATTEMPTS} times")
    assert "nothing was written" in str(raised.value) and raised.value.transient
    assert {name: ws.lake.read(name).height for name in before} == before
