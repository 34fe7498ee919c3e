"""``assay run`` and ``assay verdicts``: the commands that end in consumers' verdicts, and so can gate a CI job.

``--gate CONSUMER`` makes the exit code the gated consumers' verdict code (:mod:`assay.core.exit_codes`);
``--junit PATH`` writes the same verdicts as a JUnit XML report (:mod:`.junit`): with ``--gate``, the gated
consumers' only, so the report is red exactly when the exit code says a gated verdict did not pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .cli_exam_run import ParallelOpt, StrictOpt
from .cli_exams import RepoOpt

RunConditionOpt = Annotated[str | None, typer.Option(
    "--condition", metavar="NAME", help="Name the condition the run is under (a model version, a prompt change): "
                                        "recorded with every case run (exams: reported with every verdict).")]
RunModelOpt = Annotated[str | None, typer.Option(
    "--model", metavar="MODEL", help="The model under test instead of the config's (PROVIDER/NAME on VAPI), on a "
                                     "runner that creates the assistant; an exam replays with it instead of its own.")]

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]
GateOpt = Annotated[list[str] | None, typer.Option(
    "--gate", metavar="CONSUMER",
    help="Exit with this consumer's verdict (repeatable; the most severe wins): 0 pass, 80 fail, "
         "82 error or no verdict possible. A consumer with no criteria here is an error (exit 1).")]
JunitOpt = Annotated[str | None, typer.Option(
    "--junit", metavar="PATH", help="Also write the verdicts as a JUnit XML report: a test case per case and consumer "
                                    "(with --gate, the gated consumers only), failing exactly where the gate does.")]


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("verdicts")(verdicts)


def _without_cases(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "cases"} for r in rows]


def run(
    suite: Annotated[str, typer.Argument(metavar="SUITE|EXAM", help="The suite: TEAM/SUITE, or SUITE when "
                                         "unambiguous; or an exam: its slug in the repository's .assay/exams/, "
                                         "or its directory.")],
    runner: Annotated[str | None, typer.Option(help="Runner name; default: the one for the suite's target.")] = None,
    deadline: Annotated[float | None, typer.Option(help="Minutes after which the run is not worth waiting for.")] = None,
    repeat: Annotated[int | None, typer.Option(
        min=1, help="Replay each case this many times (each replay is a case run); default: the suite's repeat plan, "
                    "else 1.")] = None,
    budget: Annotated[int | None, typer.Option(
        min=1, help="Escalation: give cases the evidence has not decided more replays, up to this many per case "
                    "(needs a consumer whose criteria has a pass_rate); default: the suite's plan, else none.")] = None,
    gate: GateOpt = None,
    junit: JunitOpt = None,
    repo: RepoOpt = Path("."),
    condition: RunConditionOpt = None,
    model: RunModelOpt = None,
    strict_stale: StrictOpt = False,
    parallel: ParallelOpt = 1,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite through a runner, store what it produced as evidence, and show each consumer's verdict.

    Exits 0 when the run completed, 82 when it ended error or timed out; with --gate, by the verdicts.
    An exam (a slug of .assay/exams/ or an exam directory) is administered as `assay ci EXAM` does, with
    its verdict codes: 0, 80, 81, 82, 83 (--strict-stale).
    """
    from .cli_exam_run import ExamOptions, administer, is_exam

    if is_exam(suite, repo):
        administer([suite], ExamOptions(repo=repo, condition=condition, model=model, repeat=repeat, budget=budget,
                                        parallel=parallel, strict_stale=strict_stale), as_json)
    elif strict_stale:
        from assay.core.errors import UsageError

        from .exam_distil import exams_root

        raise UsageError(f"{suite} is not an exam (no exam.toml there nor in {exams_root(repo.resolve())}): "
                         "--strict-stale applies to exams only")
    from assay.core.exit_codes import most_severe

    from . import cli
    from .gates import check_suite_gates, gated, run_code
    from .judging import verdicts_for
    from .junit import write_junit
    from .render import run_with_progress

    gates = list(dict.fromkeys(gate or []))
    if gates:  # before the run: a gate that can never be met must not cost a run
        check_suite_gates(cli._workspace(), suite, gates)
    conditions = {k: v for k, v in (("condition", condition), ("model", model)) if v is not None}
    if conditions:  # recorded in each case run's artefact by a runner that creates the assistant under test
        from .run_conditions import check_conditions

        check_conditions(cli._workspace(), suite, runner)
    runners = _runners(cli, suite, runner, as_json)
    if len(runners) > 1:  # every run checked before the first starts: none is left half done
        from .operations import check_run

        for name in runners:
            check_run(cli._workspace(), suite, name, repeat=repeat, budget=budget)
    results = [run_with_progress(cli._console(), suite, name, deadline, quiet=as_json, repeat=repeat, budget=budget,
                                 runner_options=conditions or None, gate=gates) for name in runners]
    ws = cli._workspace()
    rows = verdicts_for(ws, [r["run"]["run_id"] for r in results], cases=junit is not None)
    if junit is not None:
        write_junit(ws, junit, gated(rows, gates))
    per_run = [(r, [row for row in rows if row["run_id"] == r["run"]["run_id"]]) for r in results]
    if not cli._emit("assay.run", {**results[0], "verdicts": _without_cases(rows)}, as_json):
        from .render import print_run, print_verdicts

        for result, its_rows in per_run:
            print_run(cli._console(), result["run"])
            print_verdicts(cli._console(), _without_cases(its_rows))
    raise typer.Exit(most_severe(run_code(r["run"]["status"], its_rows, gates) for r, its_rows in per_run))


def _runners(cli: Any, suite: str, runner: str | None, as_json: bool) -> list[str]:
    """The runners ``assay run`` starts, one run each: ``--runner``, else the suite's declared runners, else
    its target's default; several are announced (and refused with ``--json``, which prints one run)."""
    from .operations import runners_for

    runners = runners_for(cli._workspace(), suite, runner)
    if len(runners) > 1:
        if as_json:
            from assay.core.errors import UsageError

            raise UsageError(f"suite {suite!r} declares {len(runners)} runners ({', '.join(runners)}) and --json "
                             "prints one run: name one with --runner, once per runner")
        cli._console().print(f"suite {suite} declares {len(runners)} runners: one run on each, "
                             f"{', '.join(runners)}")
    return runners


def verdicts(
    run_id: Annotated[str | None, typer.Argument(help="A run (or use --suite).")] = None,
    suite: Annotated[str | None, typer.Option(help="Every finalised run of this suite.")] = None,
    cases: Annotated[bool, typer.Option(help="Add the per-case breakdown.")] = False,
    consumer: Annotated[list[str] | None, typer.Option(
        metavar="CONSUMER", help="Only this consumer's verdicts (repeatable).")] = None,
    gate: GateOpt = None,
    junit: JunitOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Verdicts per consumer under each run's stamped criteria, next to the stamped verdict.

    Exits 0; with --gate, the gated consumers' verdict code.
    """
    from . import cli
    from .gates import check_consumers, gate_code, gated
    from .judging import verdicts_for
    from .junit import write_junit
    from .selection import select_runs

    ws = cli._workspace()
    run_ids = select_runs(ws, runs=[run_id] if run_id else None, suite=suite,
                          choose="give a RUN (`assay verdicts RUN`) or --suite TEAM/SUITE")
    rows = verdicts_for(ws, run_ids, cases=cases or junit is not None)
    where = f"run {run_ids[0]}" if run_id else f"the {len(run_ids)} finalised run(s) of suite {suite}"
    gates = list(dict.fromkeys(gate or []))
    code = gate_code(rows, gates, where) if gates else 0
    report = gated(rows, gates)
    if consumer:
        check_consumers("--consumer", consumer, (r["consumer"] for r in rows), where)
        rows = [r for r in rows if r["consumer"] in consumer]
    if junit is not None:
        write_junit(ws, junit, report if gates else rows)
    rows = rows if cases else _without_cases(rows)
    if not cli._emit("assay.verdicts", {"verdicts": rows}, as_json):
        from .render import print_verdicts
        from .selection import runners_of

        print_verdicts(cli._console(), rows, runners_of(ws, run_ids))
    raise typer.Exit(code)
