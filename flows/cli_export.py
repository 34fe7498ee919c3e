"""``assay export``: an exam directory out of the repository, redacted, to share as it is or as a Harbor task."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one machine-readable JSON document.")]


def register(app: typer.Typer) -> None:
    app.command("export")(export)


def export(
    exam: Annotated[str, typer.Argument(metavar="EXAM", help="The exam's slug (in the repository's "
                                        ".assay/exams/) or its directory.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Where to write: the export goes to "
                                      "DIR/<slug>/, which must not exist or be empty.", file_okay=False)],
    repo: Annotated[Path, typer.Option("--repo", metavar="DIR", help="The repository (default: the current "
                                       "directory); a Harbor task packs its pinned commit.",
                                       file_okay=False)] = Path("."),
    harbor: Annotated[bool, typer.Option("--harbor", help="Write a Harbor (terminal-bench 2) task directory "
                                         "instead of a copy of the exam directory.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Copy an exam directory out of the repository with every secret redacted again on the way out: the
    instruction, workspace.patch (still a patch that applies), assertions, exam.toml and verify.sh. Prints
    each file written and how many spans were redacted in it (never the secrets)."""
    from assay.core.errors import NotFoundError
    from assay.flows.exam_distil import exam_dir
    from assay.flows.exam_export import export_exam

    from . import cli

    root = repo.resolve()
    path = Path(exam) if Path(exam).is_dir() else exam_dir(root, exam)
    if not path.is_dir():
        raise NotFoundError("exam", exam, f"no directory {path}: distil one first (assay distil SESSION)")
    result = export_exam(path, out.resolve(), harbor=harbor, repo=root)
    counts = result.counts()
    body = {"exam": result.exam, "path": str(result.path), "harbor": result.harbor, "files": list(result.files),
            "redacted": counts, "redactions": [{"file": r.file, "line": r.line, "rule": r.rule}
                                               for r in result.redactions]}  # fmt: skip
    if cli._emit("assay.export", body, as_json):
        return
    console = cli._console()
    what = "a Harbor task" if harbor else "the exam"
    console.print(f"exported {what} {result.exam} to {result.path}", soft_wrap=True)
    for name in result.files:
        spans = counts.get(name, 0)
        console.print(f"  {name}" + (f": {spans} span(s) redacted" if spans else ""), soft_wrap=True)
    total = len(result.redactions)
    console.print(f"{total} span(s) redacted in {len(counts)} file(s)" if total else "nothing needed redacting")
