"""Coding-agent exams at the command line: ``assay sessions`` (what ran in this repository), ``assay bless``
(keep a finished session as the standard), ``assay distil`` (write its exam directory), ``assay review``
(accept or delete the suggested assertions; an exam with drafts does not run) and ``assay calibrate`` (measure
how often the exam reproduces before it gates anything)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from assay.core.exam import ExamAssertion
    from assay.core.session import Session

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]
RepoOpt = Annotated[Path, typer.Option("--repo", metavar="DIR", help="The repository (default: the current "
                                       "directory).", file_okay=False)]


def register(app: typer.Typer) -> None:
    for name, command in (("sessions", sessions), ("bless", bless), ("distil", distil), ("review", review),
                          ("calibrate", calibrate)):
        app.command(name)(command)


def _home() -> Path:
    from .workspace import load_settings

    return Path(load_settings().home)


def _blessed_ids(home: Path) -> set[str]:
    return {p.stem for p in (home / "blessed").glob("*.json")}


def sessions(repo: RepoOpt = Path("."), as_json: JsonOpt = False) -> None:
    """List the coding-agent sessions that ran in this repository (or a directory inside it), newest first,
    from every harness whose transcripts are on this machine."""
    from assay.adapters.capture import find_sessions

    from . import cli

    root = repo.resolve()
    blessed = _blessed_ids(_home())
    rows = [{**ref.model_dump(mode="json"), "blessed": ref.session_id in blessed}
            for ref in find_sessions(root, os.environ)]  # fmt: skip
    body = {"repo": str(root), "sessions": rows}
    if cli._emit("assay.sessions", body, as_json):
        return
    console = cli._console()
    if not rows:
        console.print(f"no sessions found for {root}")
        return
    from .render import _table

    table = _table(f"sessions in {root}", ("session", "harness", "started", "ask", "blessed"))
    for row in rows:
        table.add_row(row["session_id"][:12], row["harness"], (row["started_at"] or "-")[:16],
                      (row["first_prompt"] or "")[:60], "yes" if row["blessed"] else "")
    console.print(table)


def _find(repo: Path, session: str) -> Session:
    """A session named by its transcript file, or by its id (a unique prefix will do) among the repository's."""
    from assay.adapters.capture import find_session, read_session

    path = Path(session)
    if path.suffix == ".jsonl" and path.is_file():
        return read_session(path)
    return read_session(Path(find_session(repo, session, os.environ).path))


def _summary(session: Session) -> dict[str, Any]:
    return {
        "turns": len(session.turns), "tool_calls": len(session.tool_calls), "tools": list(session.tools_used),
        "files_read": len(session.files_read), "files_written": list(session.files_written),
        "commands": len(session.commands), "test_runs": len(session.test_runs), "tokens": session.tokens.total,
        "cost_usd": session.cost_usd, "wall_seconds": session.wall_seconds, "subagents": len(session.subagents),
        "unknown_types": dict(session.capture.unknown_types), "unmatched_calls": len(session.capture.unmatched_calls),
    }


def bless(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="A session id (a unique prefix will do; "
                                           "`assay sessions` lists them) or a transcript file.")],
    repo: RepoOpt = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Keep a finished session as the standard the agent is held to: an exam is distilled from it
    (`assay distil`). Blessing it again changes nothing."""
    from assay.flows.exam_distil import bless as keep, blessed_path

    from . import cli

    home, found = _home(), _find(repo.resolve(), session)
    created = not blessed_path(home, found.session_id).exists()
    path = keep(found, home)
    transcript = found.capture.files[0] if found.capture.files else ""
    body = {"session_id": found.session_id, "harness": found.harness, "harness_version": found.harness_version,
            "model": found.model, "transcript": transcript, "blessed": str(path), "created": created,
            "summary": _summary(found)}
    if cli._emit("assay.bless", body, as_json):
        return
    s = body["summary"]
    what = "blessed" if created else "already blessed"
    cli._console().print(
        f"{what} {found.session_id} ({found.harness} {found.harness_version or ''}, {found.model or 'model unknown'}): "
        f"{s['turns']} turns, {s['tool_calls']} tool calls, {len(s['files_written'])} files written, "
        f"{s['test_runs']} test runs; next: assay distil {found.session_id[:12]}", soft_wrap=True)


def _blessed(home: Path, session_id: str) -> Session:
    from assay.core.errors import AmbiguousError, NotFoundError
    from assay.core.session import Session

    ids = sorted(_blessed_ids(home))
    matches = [i for i in ids if i == session_id] or [i for i in ids if i.startswith(session_id)]
    if not matches:
        raise NotFoundError("blessed session", session_id, "bless it first: assay bless SESSION", known=ids,
                            known_as="blessed sessions")
    if len(matches) > 1:
        raise AmbiguousError(f"{session_id!r} names {len(matches)} blessed sessions: give more of one of "
                             f"{', '.join(matches)}")
    return Session.model_validate_json((home / "blessed" / f"{matches[0]}.json").read_text(encoding="utf-8"))


def _assertion_rows(assertions: tuple[ExamAssertion, ...] | list[ExamAssertion]) -> list[dict[str, Any]]:
    return [{"key": a.key, "tier": a.tier, "check": a.check, "status": a.status, "evidence": list(a.evidence)}
            for a in assertions]


def distil(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="A blessed session's id (a unique prefix "
                                           "will do).")],
    repo: RepoOpt = Path("."),
    slug: Annotated[str | None, typer.Option(metavar="SLUG", help="The exam's name (default: from the first "
                                             "ask).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an exam of that name.")] = False,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Write no verify.sh.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a blessed session's exam into the repository, to commit with the code: `.assay/exams/SLUG/`
    with exam.toml (runner, model, workspace pin, environment fingerprint, tool allowlist, caps),
    instruction.md, workspace.patch, assertions.toml (every suggestion a draft) and verify.sh."""
    from assay.core.exam import load_exam
    from assay.flows.exam_distil import distil as write

    from . import cli

    found = _blessed(_home(), session)
    path = write(found, repo.resolve(), slug=slug, verify=not no_verify, force=force)
    exam = load_exam(path)
    body = {"session_id": found.session_id, "exam": exam.spec.slug, "path": str(path),
            "files": sorted(p.name for p in path.iterdir()), "commit": exam.spec.workspace.commit,
            "patch": exam.patch_path is not None, "fingerprint": exam.spec.environment.fingerprint,
            "tools": list(exam.spec.tools.allow), "assertions": _assertion_rows(exam.assertions)}
    if cli._emit("assay.distil", body, as_json):
        return
    console = cli._console()
    console.print(f"distilled {found.session_id[:12]} into {path} ({', '.join(body['files'])})", soft_wrap=True)
    _print_assertions(console, exam.assertions)
    console.print(f"review them: assay review {exam.spec.slug} --accept KEY --delete KEY (or --accept-all)")


def _print_assertions(console: Any, assertions: tuple[ExamAssertion, ...]) -> None:
    from .render import _table

    table = _table("assertions", ("key", "tier", "check", "status", "evidence"))
    for a in assertions:
        table.add_row(a.key, a.tier, a.check, a.status, "; ".join(a.evidence)[:80])
    console.print(table)


ExamArg = Annotated[str, typer.Argument(metavar="EXAM", help="The exam's slug (in the repository's .assay/exams/) "
                                        "or its directory.")]


def _exam_path(exam: str, repo: Path) -> Path:
    """The exam directory named by a slug (in ``repo``) or a path; :class:`NotFoundError` when there is none."""
    from assay.flows.exam_distil import exam_dir

    path = Path(exam) if Path(exam).is_dir() else exam_dir(repo.resolve(), exam)
    if not path.is_dir():
        from assay.core.errors import NotFoundError

        raise NotFoundError("exam", exam, f"no directory {path}: distil one first (assay distil SESSION)")
    return path


def review(
    exam: ExamArg,
    repo: RepoOpt = Path("."),
    accept: Annotated[list[str] | None, typer.Option("--accept", metavar="KEY", help="Accept this suggested "
                                                     "assertion (repeatable).")] = None,
    delete: Annotated[list[str] | None, typer.Option("--delete", metavar="KEY", help="Delete this assertion "
                                                     "(repeatable).")] = None,
    accept_all: Annotated[bool, typer.Option("--accept-all", help="Accept every draft not deleted.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Accept or delete an exam's suggested assertions. Without options, show them: what each checks and the
    evidence it was drawn from. An exam with drafts left does not run."""
    from assay.core.exam import load_exam
    from assay.flows.exam_review import review as decide

    from . import cli

    path = _exam_path(exam, repo)
    done = decide(path, accept=accept or (), delete=delete or (), accept_all=accept_all)
    after = load_exam(path)
    body = {"exam": after.spec.slug, "path": str(path), "accepted": list(done.accepted), "deleted": list(done.deleted),
            "drafts": _assertion_rows([a for a in after.assertions if a.status == "draft"]),
            "reviewed": _assertion_rows([a for a in after.assertions if a.status == "accepted"])}
    if cli._emit("assay.review", body, as_json):
        return
    console = cli._console()
    if done.accepted or done.deleted:
        console.print(f"{after.spec.slug}: accepted {len(done.accepted)}, deleted {len(done.deleted)}")
    _print_assertions(console, after.assertions)
    left = len(body["drafts"])
    console.print(f"{left} draft(s) left: the exam does not run until none are" if left else
                  "every assertion is reviewed: the exam can run")


def calibrate(
    exam: ExamArg,
    replays: Annotated[int, typer.Option("-n", "--replays", metavar="N", min=1, help="How many replays to run "
                                         "(each costs what a session costs).")],
    repo: RepoOpt = Path("."),
    parallel: Annotated[int, typer.Option("--parallel", metavar="K", min=1, help="Replays run at once, each in "
                                          "its own worktree.")] = 1,
    timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", min=1, help="Stop a replay's "
                                                  "harness after this long (default: the exam's wall-time "
                                                  "cap).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay a reviewed exam N times under fixed conditions and measure how often it reproduces: reproducible
    when the 95% Wilson upper bound of the rate reaches the healthy rate (0.95), else flaky (quarantined, never
    a FAIL). Writes calibration.toml beside the exam and sets its bands from the reproduced replays. Exits 0
    whatever the exam's state: calibrating is not a gate."""
    from assay.flows.exam_calibrate import calibrate as measure

    from . import cli

    done = measure(_exam_path(exam, repo), repo.resolve(), replays, environ=os.environ, parallel=parallel,
                   timeout=timeout)
    if cli._emit("assay.calibrate", done.model_dump(mode="json"), as_json):
        return
    console = cli._console()
    for line in _calibration_lines(done):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _calibration_lines(done: Any) -> list[str]:
    """What ``assay calibrate`` prints: the figures, the state, the failing keys, what it wrote."""
    from assay.transforms.stats import ceil_to, floor_to

    if done.state == "error":
        first = done.errors[0].splitlines()[0] if done.errors else "no reason given"
        return [f"{done.exam}: all {done.n} replays errored ({first}); error: nothing measured, nothing written"]
    runs = done.n - done.errored
    cost = f"${done.cost_mean:.2f} a replay" if done.cost_mean is not None else "cost not reported"
    lines = [f"{done.exam}: {done.reproduced} of {runs} replays reproduced ({done.rate:.2f}; 95% Wilson "
             f"{floor_to(done.lower):.2f}-{ceil_to(done.upper):.2f}); {done.errored} errored; {cost}; {done.state}"]
    if done.state == "flaky":
        lines.append(f"flaky: the exam cannot be held to the healthy rate of {done.healthy:.2f}; it is quarantined "
                     "(reported, never a FAIL) until it is calibrated again")
    spread = [f"{name} {s.min:{form}}-{s.max:{form}} (median {s.median:{form}})"
              for name, s, form in (("turns", done.turns, "g"), ("wall seconds", done.wall_seconds, ".1f"))
              if s is not None]
    if spread:
        lines.append("; ".join(spread))
    lines += [f"failed: {key} in {count} of {runs} replays" for key, count in done.failing.items()]
    lines += [f"undetermined: {key} in {count} of {runs} replays" for key, count in done.undetermined.items()]
    lines += [f"band {b.key}: {b.measure} {b.center:g} +/- {b.k:g} x {b.spread:g} ({b.within} of {done.reproduced} "
              "reproduced replays within)" for b in done.bands]
    lines += [f"band {key} left as it was: {why}" for key, why in done.bands_unset.items()]
    lines.append(f"wrote {', '.join(done.written)} in {done.path}")
    return lines
