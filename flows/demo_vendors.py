"""The demo's vendor chapter: one situation run on VAPI, ElevenLabs and Hamming (fakes on loopback),
judged by our judge (a fake OpenAI-compatible server), the rows side by side, evaluator by evaluator.

:func:`fake_vendors` starts the fakes and points Assay at them for the whole demo, so the demo never
needs a network or a key: the recorded-calls suite's rubrics are judged too. A judge the user configured
(``ASSAY_JUDGE_BASE_URL``) is kept. The fakes are steered so the story has something to show: the agent
checks the ZIP code and offers a referral, our judge says the referral was offered, and ElevenLabs' own
criterion says it was not — a disagreement between evaluators, side by side.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.table import Table

SUITE = "acme-plumbing/chat-line"
RUNNERS = ("vapi_chat", "elevenlabs_chat", "hamming")

AGENT_RULES = [
    {"match": "60827", "reply": "I'm sorry, 60827 is outside our service area, so we can't send a technician. "
     "I can refer you to a licensed plumber near you.",
     "tool": "check_service_area", "arguments": {"zip": "60827"}, "result": {"in_area": False}},
    {"match": "60604", "rate": 0.1, "reply": "Hmm, I'm not sure we go out that way. Let me get back to you."},
    {"match": "60604", "reply": "Yes, 60604 is inside our service area. I can book a visit for Thursday morning.",
     "tool": "check_service_area", "arguments": {"zip": "60604"}, "result": {"in_area": True}},
    {"match": "faucet", "reply": "We do. What's your ZIP code?"},
    {"match": "leak|water heater", "reply": "I'm sorry to hear that. What's your ZIP code?"},
    {"match": "bye|thank", "reply": "You're welcome. Goodbye!"},
]
"""What the fake agent (VAPI and ElevenLabs share one brain) says to the demo's scripted caller. In area, it
fumbles one call in ten (a rated rule): replayed, that case shows a pass rate the evidence cannot call."""

HAMMING_TRANSCRIPT = (
    "Agent: Thanks for calling Acme Plumbing & Heating, this is the front desk. How can I help today?\n"
    "Caller: Hi, my water heater is leaking from the bottom. Can someone come out today?\n"
    "Agent: I'm sorry to hear that. What's your ZIP code?\n"
    "Caller: I'm at 60827.\n"
    "Agent: I'm sorry, 60827 is outside our service area, so we can't send a technician. "
    "I can refer you to a licensed plumber near you.\n"
    "Caller: OK, thank you. Bye."
)
"""What the fake Hamming's voice call transcribes to (Hamming reports a transcript as plain text)."""

JUDGE_RULES = [
    {"match": "refer you to a licensed plumber", "reply": {
        "verdict": "pass", "rationale": "The agent offered a referral to a licensed plumber near the caller."}},
    {"match": "we don't go there", "reply": {"verdict": "fail", "rationale": "No referral was offered."}},
    {"match": "not sure we go out that way", "reply": {
        "verdict": "fail", "rationale": "The agent left the caller without an answer about the service area."}},
    {"match": "I'm the technician", "reply": {
        "verdict": "pass", "rationale": "The agent answered the caller's question."}},  # the fake judge errs here
]
"""What the fake judge says: right about referrals, wrong once about staying in role (so the labelled set
``flows/demo/judge-labels.jsonl`` shows an agreement below 1)."""
ELEVENLABS_CRITERIA = {"told_2": {"result": "failure",
                                  "rationale": "The agent never named a specific plumber the caller could call."}}
"""ElevenLabs' criterion for "a referral to a nearby licensed plumber": judged not met, unlike our judge."""


def steer(fakes: dict[str, Any]) -> None:
    """Script the fakes for the demo's story (also what ``assay fake-vendors --demo`` serves)."""
    fakes["vapi"].faults.scripts["replies"] = AGENT_RULES
    fakes["elevenlabs"].faults.scripts["replies"] = AGENT_RULES
    fakes["elevenlabs"].faults.scripts["criteria"] = ELEVENLABS_CRITERIA
    fakes["openai"].faults.scripts["rules"] = JUDGE_RULES
    fakes["hamming"].faults.scripts["transcript"] = {"*": HAMMING_TRANSCRIPT}


@contextmanager
def fake_vendors() -> Iterator[dict[str, Any]]:
    """The four fakes, running and steered, with ``ASSAY_*`` pointing at them (restored afterwards)."""
    from assay.fakes.serve import environment, running, settings_env

    with running() as fakes:
        env = settings_env(fakes)
        if os.environ.get("ASSAY_JUDGE_BASE_URL"):  # the user's own judge stays
            env = {k: v for k, v in env.items() if not k.startswith("ASSAY_JUDGE_")}
        steer(fakes)
        with environment(env):
            yield fakes


def run_on_every_vendor(console: Console, ws, quiet: bool = False) -> dict[str, Any]:
    """Run the chat-line suite on each vendor runner, collect Hamming's asynchronous run, compare."""
    from .collect import collect_outstanding
    from .judging import verdicts_for
    from .render import run_with_progress

    runs = {}
    for runner in RUNNERS:
        runs[runner] = run_with_progress(console, SUITE, runner, None, quiet=quiet)["run"]["run_id"]
    collected = collect_outstanding(ws)  # Hamming answers later: a collect pass judges and finalises it
    rows = side_by_side(ws, runs)
    disagreements = evaluator_disagreements(ws, runs["elevenlabs_chat"])
    verdicts = verdicts_for(ws, list(runs.values()))
    if not quiet:
        print_side_by_side(console, runs, rows)
        print_disagreements(console, disagreements)
        table = Table(title="each consumer's verdict, per vendor", title_justify="left")
        for col in ("runner", "consumer", "verdict", "why"):
            table.add_column(col)
        by_run = {v: k for k, v in runs.items()}
        for v in verdicts:
            table.add_row(by_run[v["run_id"]], v["consumer"], v["verdict"] or "-", v["reason"] or "")
        console.print(table)
    return {"runs": runs, "collected": collected.finalised, "rows": rows, "disagreements": disagreements,
            "verdicts": verdicts}


def side_by_side(ws, runs: dict[str, str]) -> list[dict[str, Any]]:
    """Per assertion key and runner: met, the evaluator and its reason, from each case run's latest outcome."""
    from assay.storage.query import connect

    ids = ", ".join(f"'{r}'" for r in runs.values())
    with connect(ws.lake, catalog=True) as con:
        found = con.sql(f"""
            SELECT a.assertion_key, c.runner, a.met, a.evaluator, a.reason
            FROM assertion_results a JOIN latest_outcomes l ON l.outcome_id = a.outcome_id
                 JOIN case_runs c ON c.case_run_id = a.case_run_id
            WHERE a.run_id IN ({ids}) ORDER BY a.assertion_key, c.runner""").fetchall()
    return [dict(zip(("assertion_key", "runner", "met", "evaluator", "reason"), r)) for r in found]


def evaluator_disagreements(ws, run_id: str) -> list[dict[str, Any]]:
    """Where our judge and the vendor's own evaluation judged the same behaviour differently on one case run:
    our ``offers_referral`` rubric against ElevenLabs' criterion for the referral (``told_2``)."""
    from assay.storage.query import connect

    with connect(ws.lake, catalog=True) as con:
        found = con.sql(f"""
            SELECT c.case_key, a.assertion_key, a.met AS ours, a.evaluator AS our_evaluator,
                   e.name AS theirs_name, e.met AS theirs, e.evaluator AS their_evaluator, e.rationale
            FROM assertion_results a JOIN latest_outcomes l ON l.outcome_id = a.outcome_id
                 JOIN case_runs c ON c.case_run_id = a.case_run_id
                 JOIN runner_evaluations e ON e.case_run_id = a.case_run_id AND e.name = 'told_2'
            WHERE a.run_id = '{run_id}' AND a.assertion_key = 'offers_referral'
              AND a.met IS DISTINCT FROM e.met""").fetchall()
    keys = ("case_key", "assertion_key", "ours", "our_evaluator", "theirs_name", "theirs", "their_evaluator", "rationale")
    return [dict(zip(keys, r)) for r in found]


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    mark = {True: "[green]met[/]", False: "[red]not met[/]", None: "[yellow]undetermined[/]"}[row["met"]]
    return f"{mark}\n[dim]{row['evaluator']}[/]"


def print_side_by_side(console: Console, runs: dict[str, str], rows: list[dict[str, Any]]) -> None:
    table = Table(title=f"{SUITE}: one situation, three vendors, evaluator by evaluator", title_justify="left",
                  show_lines=True)
    table.add_column("assertion")
    for runner in runs:
        table.add_column(runner)
    cells = {(r["assertion_key"], r["runner"]): r for r in rows}
    for key in sorted({r["assertion_key"] for r in rows}):
        table.add_row(key, *(_cell(cells.get((key, runner))) for runner in runs))
    console.print(table)
    unsupported = [r for r in rows if r["met"] is False and "support" in (r["reason"] or "")]
    for r in unsupported[:3]:
        console.print(f"[dim]{r['runner']} / {r['assertion_key']}: {r['reason']}[/]")


def print_disagreements(console: Console, found: list[dict[str, Any]]) -> None:
    for d in found:
        console.print(
            f"[bold]Evaluators disagree[/] on {d['case_key']}: our judge ({d['our_evaluator']}) says "
            f"{d['assertion_key']} {'held' if d['ours'] else 'did not hold'}; ElevenLabs' criterion "
            f"{d['theirs_name']} ({d['their_evaluator']}) says {'met' if d['theirs'] else 'not met'}: {d['rationale']}"
        )


__all__ = ["RUNNERS", "SUITE", "fake_vendors", "run_on_every_vendor", "steer"]
