"""``assay export``: an exam directory out of the repository, redacted, as it is or as a Harbor task.

An exam directory is committed with the person's code and may be shared (a bug report, a benchmark), and
its instruction, its ``workspace.patch`` and its commands can hold secrets the person pasted or kept in
uncommitted files. Export runs the product's one redaction pass (:data:`~assay.core.secrets.TEXT_RULES`)
again on the way out and says what it redacted: each file, line and rule, never the secret.

- Text files are redacted line by line, so a patch stays a patch: only the secret spans change and a
  redacted added line stays an added line. A private-key block spread over lines has every line of its
  body replaced. The patch's headers (``diff --git``, ``---``, ``+++``, ``@@``) are kept as they are. A
  secret on a context or removed line is redacted too: that line is committed at the pin, so the patch no
  longer applies there, and the redactions name the line.
- ``exam.toml`` and ``assertions.toml`` are read, their values redacted, and written again (only when
  something changed; otherwise the file is copied byte for byte).
- With ``harbor=True`` the output is a Harbor task directory instead (:mod:`.exam_harbor`).

The output appears all at once: it is built in a temporary directory beside it and then renamed, and an
existing non-empty ``out/<slug>`` is refused. The exam directory itself is only read.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assay.core.errors import UsageError
from assay.core.exam import Exam, load_exam
from assay.core.redact import redact, redact_spans
from assay.core.secrets import REDACTED
from assay.core.toml_write import toml_dumps

__all__ = ["ExportResult", "Redaction", "export_exam", "redact_lines", "redact_toml"]


@dataclass(frozen=True)
class Redaction:
    """One secret span replaced on the way out."""

    file: str
    """The file written, relative to the export's directory."""
    line: int
    """Its line in that file, from 1."""
    rule: str
    """The rule that fired (a :class:`~assay.core.secrets.TextRule` name, or ``secret key`` for a TOML value
    under a secret-looking key)."""


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_exam` wrote."""

    exam: str
    """The exam's slug."""
    path: Path
    """The directory written: ``out/<slug>``."""
    harbor: bool
    """Whether it is a Harbor task directory rather than a copy of the exam directory."""
    files: tuple[str, ...]
    """Every file written, relative to :attr:`path`, sorted."""
    redactions: tuple[Redaction, ...] = field(default=())

    def counts(self) -> dict[str, int]:
        """Spans redacted per file written (files with none are left out)."""
        counts: dict[str, int] = {}
        for item in self.redactions:
            counts[item.file] = counts.get(item.file, 0) + 1
        return counts


Found = list[tuple[int, str]]
"""(line, rule) pairs."""


_BEGIN_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_END_KEY = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_HUNK_LINE = ("+", "-", " ", "\\")


def redact_lines(text: str, *, patch: bool = False) -> tuple[str, Found]:
    """``text`` redacted line by line, and each (line, rule) that fired; its line endings are kept.

    With ``patch``, ``text`` is a unified diff: only the lines inside hunks are redacted, each keeping its
    ``+``/``-``/space prefix, so a redacted patch still applies wherever the secret was on an added line.
    The body of a private-key block is replaced line by line from its ``BEGIN`` line to its ``END`` line."""
    out: list[str] = []
    found: Found = []
    in_hunk, in_key = not patch, False
    for number, line in enumerate(text.split("\n"), 1):
        prefix, content = "", line
        if patch:
            if line.startswith("diff --git ") or line.startswith("@@"):
                in_hunk, in_key = line.startswith("@@"), False
                out.append(line)
                continue
            if not in_hunk or not line.startswith(_HUNK_LINE):
                out.append(line)
                continue
            prefix, content = line[0], line[1:]
        if in_key:
            end = _END_KEY.search(content)
            content, in_key = (REDACTED + content[end.end():], False) if end else (REDACTED, True)
            found.append((number, "private key block"))
        else:
            begin = _BEGIN_KEY.search(content)
            in_key = begin is not None and _END_KEY.search(content, begin.end()) is None
            content, fired = redact_spans(content)
            found += [(number, rule) for rule in fired]
        out.append(prefix + content)
    return "\n".join(out), found


def redact_toml(text: str) -> tuple[str, Found]:
    """A TOML file's text with its values redacted (:func:`assay.core.redact.redact`: a value under a
    secret-looking key whole, secret spans in other strings), and each (line, rule) that fired.

    Unchanged text is returned as it is; changed text is written again with the same keys in the same
    order, so a changed line of the new text is the line that held the secret."""
    document = tomllib.loads(text)
    clean = redact(document)
    if clean == document:
        return text, []
    before, after = toml_dumps(document).split("\n"), toml_dumps(clean).split("\n")
    found: Found = []
    for number, (old, new) in enumerate(zip(before, after, strict=True), 1):
        if old != new:
            rules = redact_spans(old)[1] or ["secret key"]
            found += [(number, rule) for rule in rules]
    return "\n".join(after), found


def _exam_files(exam: Exam) -> tuple[dict[str, bytes], dict[str, int]]:
    """The files of the exam directory as they are: (name -> bytes, name -> permission bits)."""
    paths = [p for p in sorted(exam.path.iterdir()) if p.is_file()]
    return {p.name: p.read_bytes() for p in paths}, {p.name: p.stat().st_mode & 0o777 for p in paths}


def _redacted(files: dict[str, bytes], patches: set[str]) -> tuple[dict[str, bytes], list[Redaction]]:
    """Every text file of ``files`` redacted (TOML by value, patches as diffs, the rest line by line);
    binary files (holding a NUL byte, or not UTF-8) are kept as they are: no rule reads them."""
    out: dict[str, bytes] = {}
    redactions: list[Redaction] = []
    for name, raw in files.items():
        try:
            text = raw.decode("utf-8") if b"\0" not in raw else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            out[name] = raw
            continue
        if name.endswith(".toml"):
            text, found = redact_toml(text)
        else:
            text, found = redact_lines(text, patch=name in patches)
        out[name] = text.encode("utf-8")
        redactions += [Redaction(name, line, rule) for line, rule in found]
    return out, redactions


def _refuse_existing(target: Path) -> None:
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not empty; export into another --out directory, or remove it")


def _write_all(target: Path, write: Callable[[Path], None]) -> None:
    """Call ``write`` on an empty directory named like ``target`` beside it, then move it into place:
    all or nothing. An existing non-empty ``target`` is refused."""
    _refuse_existing(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build = holder / target.name
        build.mkdir()
        write(build)
        build.chmod(0o755)
        if target.exists():
            target.rmdir()  # empty, as checked above
        build.rename(target)
    finally:
        shutil.rmtree(holder, ignore_errors=True)


def _tree(path: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()))


def export_exam(exam_dir: Path, out: Path, *, harbor: bool = False, repo: Path | None = None) -> ExportResult:
    """Export the exam at ``exam_dir`` into ``out/<slug>/``, every text file redacted; what was written.

    Plain, the directory is the exam directory again (it loads with :func:`~assay.core.exam.load_exam`).
    With ``harbor``, it is a Harbor task (:func:`.exam_harbor.harbor_task`); ``repo`` is then the
    repository holding the exam's pinned commit. Refuses an existing non-empty ``out/<slug>``."""
    exam = load_exam(Path(exam_dir))
    target = Path(out) / exam.spec.slug
    if harbor:
        from .exam_harbor import HARBOR_PATCH, harbor_task

        if repo is None:
            raise UsageError("a Harbor task packs the workspace at the exam's commit: give the repository (--repo)")
        _refuse_existing(target)  # before the workspace is packed
        original, modes = harbor_task(exam, Path(repo))
        patches = {HARBOR_PATCH}
    else:
        original, modes = _exam_files(exam)
        patches = {exam.patch_path.name} if exam.patch_path is not None else set()
    files, redactions = _redacted(original, patches)

    def write(build: Path) -> None:
        for name, data in files.items():
            path = build / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(modes.get(name, 0o644))
        if not harbor:
            load_exam(build)  # still an exam directory: the redacted TOML reads back and validates

    _write_all(target, write)
    return ExportResult(exam=exam.spec.slug, path=target, harbor=harbor, files=_tree(target),
                        redactions=tuple(redactions))
