"""``assay ci`` and ``assay run EXAM``: administer a repository's exams and exit with their verdict code.

Both are the only exam commands that return verdict codes (:mod:`assay.core.exit_codes`): 0 every exam held
(flaky and stale ones reported and excluded), 80 a regression (an escalated series failed), 81 drift
suspected (an escalation the budget stopped), 82 no verdict possible (the harness or our plumbing failed),
83 a pin or toolchain no longer applies — only with ``--strict-stale``. The most severe wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from .cli_exams import JsonOpt, RepoOpt

__all__ = ["ExamOptions", "administer", "ci", "is_exam", "register"]


def register(app: typer.Typer) -> None:
    app.command("ci")(ci)


ConditionOpt = Annotated[str | None, typer.Option(
    "--condition", metavar="NAME", help="Name the condition the exams run under (a model version, a harness "
                                        "update): reported with every verdict.")]
ModelOpt = Annotated[str | None, typer.Option("--model", metavar="MODEL", help="Replay with this model instead "
                                              "of the exam's own.")]
StrictOpt = Annotated[bool, typer.Option("--strict-stale", help="Exit 83 when an exam's pin or toolchain no "
                                         "longer applies (default: reported, exit unaffected).")]
TeamOpt = Annotated[str, typer.Option("--team", metavar="TEAM", help="The team the exams' suites belong to.")]
ParallelOpt = Annotated[int, typer.Option("--parallel", metavar="K", min=1, help="Replays run at once, each in its "
                                          "own worktree.")]
TimeoutOpt = Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", min=1, help="Stop a replay's "
                                                  "harness after this long (default: the exam's wall-time cap).")]


@dataclass(frozen=True)
class ExamOptions:
    """What ``assay run EXAM`` and ``assay ci`` share."""

    repo: Path = Path(".")
    team: str = "exams"
    condition: str | None = None
    model: str | None = None
    repeat: int | None = None
    budget: int | None = None
    parallel: int = 1
    timeout: float | None = None
    strict_stale: bool = False


def is_exam(name: str, repo: Path = Path(".")) -> bool:
    """Whether ``name`` (as ``assay run`` got it) names an exam: a directory holding ``exam.toml``, or a slug
    of ``repo``'s ``.assay/exams/``. A suite is named ``TEAM/SUITE`` or by its key, never like either."""
    from assay.core.exam import EXAM_FILE
    from assay.flows.exam_distil import exam_dir

    if (Path(name) / EXAM_FILE).is_file():
        return True
    return "/" not in name and (exam_dir(repo.resolve(), name) / EXAM_FILE).is_file()


def administer(names: list[str], options: ExamOptions, as_json: bool) -> None:
    """Run the exams, print or emit the ``assay.exams`` document, and exit with its code."""
    from . import cli
    from .exam_run import run_exams
    from .render import run_with_progress

    console = cli._console()

    def run_suite(suite: str, runner: str, runner_options: dict[str, Any], repeat: int | None,
                  budget: int | None) -> dict[str, Any]:
        return run_with_progress(console, suite, runner, None, quiet=as_json, runner_options=runner_options,
                                 repeat=repeat, budget=budget)["run"]

    body = run_exams(cli._workspace(create=True), options.repo, names, run_suite, team=options.team,
                     condition=options.condition, model=options.model, repeat=options.repeat,
                     budget=options.budget, parallel=options.parallel, timeout=options.timeout,
                     strict_stale=options.strict_stale)
    if not cli._emit("assay.exams", body, as_json):
        for line in report_lines(body):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
    raise typer.Exit(body["code"])


def ci(
    exams: Annotated[list[str] | None, typer.Argument(metavar="[EXAM]...", help="Exams to run (slugs or "
                                                      "directories); default: every exam in the repository.")] = None,
    repo: RepoOpt = Path("."),
    condition: ConditionOpt = None,
    model: ModelOpt = None,
    strict_stale: StrictOpt = False,
    team: TeamOpt = "exams",
    parallel: ParallelOpt = 1,
    timeout: TimeoutOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Administer the repository's exams (.assay/exams/) and exit with their verdict code: 0 held, 80 a
    regression, 81 drift suspected, 82 no verdict possible, 83 stale (only with --strict-stale); the most
    severe wins. Each exam replays in git worktrees, escalating when a replay fails."""
    administer(list(exams or []), ExamOptions(repo=repo, team=team, condition=condition, model=model,
                                              parallel=parallel, timeout=timeout, strict_stale=strict_stale), as_json)


def _figure(value: Any, unit: str = "") -> str:
    return "?" if value is None else f"{value:.4g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def report_lines(body: dict[str, Any]) -> list[str]:
    """What ``assay ci`` prints: per exam its verdict and reason, conditions, counts, spread, cost, receipts and
    adapters; then the exclusions and the exit code."""
    lines: list[str] = []
    for x in body["exams"]:
        lines.append(f"{x['verdict'].upper():6} {x['exam']}: {x['reason']}")
        if x["condition"]:
            c = x["condition"]
            lines.append(f"       condition {c['name'] or '(unnamed)'}: harness {c['harness']} "
                         f"{', '.join(c['harness_versions']) or '(version unreported)'}; model "
                         f"{', '.join(c['models']) or c['model_asked'] or '(unreported)'}; fingerprint "
                         f"{c['fingerprint'][:19]}")
        if x["counts"]:
            n = x["counts"]
            lines.append(f"       {n['replays']} replays: {n['held']} held, {n['failed']} failed, {n['errored']} errored; "
                         f"cost {_figure(x['cost_usd'], ' USD')}")
        for measure, s in x["spread"].items():
            lines.append(f"       {measure}: {_figure(s['min'])} / {_figure(s['median'])} / {_figure(s['max'])} "
                         "(min / median / max)")
        for r in x["receipts"][:5]:
            why = "; ".join(f"{f['key']}: {f['reason']}" for f in r["failed"]) or "no gating result recorded"
            lines.append(f"       failed {r['replay']} ({r['case_run_id']}): {why}")
        if len(x["receipts"]) > 5:
            lines.append(f"       and {len(x['receipts']) - 5} more failed replays (assay verdicts {x['run_id']} --cases)")
        for key, d in x["diagnostics"].items():
            lines.append(f"       diagnostic {key}: {d['met']} met, {d['not_met']} not met, {d['undetermined']} "
                         "undetermined (never decides)")
        for e in x["errors"][:3]:
            lines.append(f"       errored: {e}")
        for a in x["adapters"]:
            lines.append(f"       adapter {a['name']}: {'; '.join(a['guarantees']) or 'no guarantees stated'}")
    counts = ", ".join(f"{n} {v}" for v, n in body["counts"].items() if n)
    lines.append(f"{len(body['exams'])} exam(s): {counts or 'none'}")
    for e in body["excluded"]:
        lines.append(f"excluded {e['exam']} ({e['verdict']})")
    lines.append(f"exit {body['code']}")
    return lines
