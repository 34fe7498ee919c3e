"""``assay judge-noise RUN``: our judge's own noise, measured on stored calls and kept apart from the agent's.

A flaky verdict has two possible sources: the agent (replays of one case behave differently) and the judge
(one stored call, judged again, is answered differently). :func:`measure` separates them for every rubric of
a run that our judge answered: each (case run, rubric) question is asked ``times`` more times, fresh (never
from the judge cache, and never written to it, to the lake or to any outcome: the run's results and
verdicts stay exactly as they were), and per assertion key it reports

- **judge disagreement**: over the questions, the chance that two of the judge's answers to the *same* call
  differ (``2·a·(m−a) / (m·(m−1))`` for ``a`` passes of ``m`` answers with a verdict, averaged); with the
  share of calls whose answers were not unanimous;
- **agent disagreement**: over the cases with several replays, the chance that two replays of the *same*
  case differ, each replay read as the majority of the judge's answers on it (a tie reads as undetermined).

Agent disagreement near the judge's says the verdicts' spread may be the judge's, not the agent's.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl
import sqlalchemy as sa

from assay.adapters.judges import Judge
from assay.core.errors import ConfigError, EvidenceError
from assay.core.mechanisms import Rubric
from assay.storage.catalog import tables as t
from assay.storage.catalog.runs import get_run
from assay.storage.lake import FileFilter
from assay.transforms.judge_evidence import with_evidence
from assay.transforms.verdicts import latest

from .judge_calls import RETRY
from .workspace import Workspace

__all__ = ["describe", "disagreement", "measure"]

OUR_JUDGE = "assay:judge:"


def disagreement(answers: list[bool | None]) -> float | None:
    """The chance two of ``answers`` (with a verdict) differ, drawn without replacement; None under two."""
    decided = [a for a in answers if a is not None]
    m, a = len(decided), sum(decided)
    return None if m < 2 else 2 * a * (m - a) / (m * (m - 1))


def _majority(answers: list[bool | None]) -> bool | None:
    decided = [a for a in answers if a is not None]
    passes = sum(decided)
    return None if not decided or 2 * passes == len(decided) else 2 * passes > len(decided)


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _questions(ws: Workspace, run_id: str, keys: list[str] | None) -> pl.DataFrame:
    """Per (case run, rubric) our judge answered in the run's latest outcomes: the ids, the rubric and evidence."""
    where = FileFilter(runs=[run_id])
    atoms = ws.lake.scan("assertion_results", where).filter(pl.col("run_id") == run_id)
    judged = ws.lake.collect(latest(atoms), "assertion_results", where).filter(
        (pl.col("mechanism") == "rubric") & pl.col("evaluator").str.starts_with(OUR_JUDGE))
    if keys:
        judged = judged.filter(pl.col("assertion_key").is_in(keys))
    if judged.is_empty():
        return judged
    ids = judged["assertion_id"].unique().to_list()
    with ws.engine.connect() as conn:
        params = dict(conn.execute(sa.select(t.assertions.c.assertion_id, t.assertions.c.params)
                                   .where(t.assertions.c.assertion_id.in_(ids))).all())
    rubrics = {a: Rubric.model_validate(p).rubric for a, p in params.items()}
    runs = ws.lake.collect(ws.lake.scan("case_runs", where).filter(pl.col("run_id") == run_id)
                           .select("case_run_id", "source_ref", "transcript", "tool_calls"), "case_runs", where)
    seen = with_evidence(runs).join(runs.select("case_run_id", "source_ref"), on="case_run_id")
    return (judged.select("case_run_id", "case_key", "assertion_id", "assertion_key", "met")
            .join(seen, on="case_run_id", how="inner")
            .with_columns(rubric=pl.col("assertion_id").replace_strict(rubrics, return_dtype=pl.String))
            .sort("assertion_key", "case_key", "source_ref", "case_run_id"))


def measure(ws: Workspace, run_id: str, *, times: int = 5, keys: list[str] | None = None) -> dict[str, Any]:
    """Ask our judge every rubric question of ``run_id`` ``times`` times afresh; the noise per key (module docstring)."""
    if not 2 <= times <= 50:
        raise ConfigError(f"--times must be 2..50 answers per question, got {times}")
    run = get_run(ws.engine, run_id)
    if not ws.settings.judge_model or not ws.settings.judge_base_url:
        raise ConfigError("judge noise asks our judge: set ASSAY_JUDGE_BASE_URL and ASSAY_JUDGE_MODEL")
    todo = _questions(ws, run.run_id, keys)
    if todo.is_empty():
        raise EvidenceError(f"run {run.run_id} has no rubric result from our judge{' for ' + ', '.join(keys) if keys else ''}: "
                            "nothing to measure; judge it first (`assay judge RUN`)")
    questions = list(zip(todo["rubric"].to_list(), todo["evidence"].to_list(), strict=True))
    with Judge.from_settings(ws.settings, retry=RETRY) as client:
        answers = client.ask_many([q for q in questions for _ in range(times)])
        sent = client.sent
    per_call = [[a.met for a in answers[i * times:(i + 1) * times]] for i in range(len(questions))]
    by_key: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "judge": [], "split": 0,
                                                             "cases": defaultdict(list)})
    for row, got in zip(todo.iter_rows(named=True), per_call, strict=True):
        k = by_key[row["assertion_key"]]
        k["calls"] += 1
        k["judge"].append(disagreement(got))
        k["split"] += len({a for a in got if a is not None}) > 1
        k["cases"][row["case_key"]].append(_majority(got))
    rows = []
    for key, k in sorted(by_key.items()):
        agent = [disagreement(replays) for replays in k["cases"].values()]
        rows.append({"assertion_key": key, "calls": k["calls"], "answers": k["calls"] * times,
                     "judge_disagreement": _mean(k["judge"]), "judge_split_calls": k["split"],
                     "agent_cases": sum(1 for v in agent if v is not None), "agent_disagreement": _mean(agent)})
    return {"run_id": run.run_id, "judge": ws.settings.judge_model, "times": times, "questions": len(questions),
            "judge_calls": sent, "keys": rows}


def describe(result: dict[str, Any]) -> list[str]:
    """The measurement as lines a person reads."""
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    lines = [f"judge noise on run {result['run_id']}: {result['questions']} question(s) asked {result['times']} times "
             f"each of {result['judge']} ({result['judge_calls']} request(s)); nothing stored"]
    for k in result["keys"]:
        lines.append(f"  {k['assertion_key']}: judge disagreement {pct(k['judge_disagreement'])} "
                     f"({k['judge_split_calls']} of {k['calls']} call(s) split); agent disagreement "
                     f"{pct(k['agent_disagreement'])} over {k['agent_cases']} case(s) with replays")
    return lines
