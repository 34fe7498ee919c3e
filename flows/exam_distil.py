"""Bless a finished coding-agent session as the standard, and distil it into an exam directory.

:func:`bless` keeps the session (``<home>/blessed/<session_id>.json``); :func:`distil` writes
``<repo>/.assay/exams/<slug>/`` — ``exam.toml``, ``instruction.md``, ``workspace.patch``,
``assertions.toml`` (every suggestion a draft) and, when a test command shows the work holds, ``verify.sh``.
Plain functions: the command line (``assay bless``, ``assay distil``) wires them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from assay.core.errors import UsageError
from assay.core.exam import (PATCH_FILE, ExamEnvironment, ExamRunner, ExamSource, ExamSpec, ExamTools, ExamWorkspace,
                             write_exam)  # fmt: skip
from assay.core.files import replace_text
from assay.core.ids import is_identifier
from assay.core.session import Session

from .exam_instruction import first_ask, instruction_text, slug_for
from .exam_suggest import assistant_turns, caps_for, suggest_assertions, test_history, verify_script
from .exam_workspace import (environment_fingerprint, git, has_commit, workspace_commit, workspace_patch,
                             written_paths)

__all__ = ["bless", "blessed_path", "distil", "exam_dir", "exams_root"]

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def blessed_path(home: Path, session_id: str) -> Path:
    """Where :func:`bless` keeps a session: ``<home>/blessed/<session_id>.json``."""
    if not _SAFE_ID.fullmatch(session_id) or ".." in session_id:
        raise UsageError(f"session id {session_id!r} cannot name a file: it must be 1-200 letters, digits, '.', "
                         "'_' or '-', starting with a letter or digit")  # fmt: skip
    return Path(home) / "blessed" / f"{session_id}.json"


def bless(session: Session, home: Path) -> Path:
    """Keep a finished session as the standard an exam is distilled from; the path of its JSON.

    A session with no turns or no tool calls is refused (there is no work to hold an agent to). Blessing
    the same session again leaves the file as it is; a session that has grown since is written anew."""
    if not session.turns or not session.tool_calls:
        missing = "no turns" if not session.turns else "no tool calls"
        raise UsageError(f"session {session.session_id} has {missing}, so there is no work to hold an agent to; "
                         "bless a finished session in which the agent worked")  # fmt: skip
    path = blessed_path(home, session.session_id)
    text = session.model_dump_json(indent=2) + "\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_text(path, text)
    return path


def exams_root(repo: Path) -> Path:
    """Where a repository keeps its exams: ``<repo>/.assay/exams``."""
    return Path(repo) / ".assay" / "exams"


def exam_dir(repo: Path, slug: str) -> Path:
    """Where an exam lives in a repository: ``<repo>/.assay/exams/<slug>``."""
    return exams_root(repo) / slug


def distil(session: Session, repo: Path, *, slug: str | None = None, out: Path | None = None, verify: bool = True,
           force: bool = False) -> Path:
    """Distil a blessed session into an exam directory; its path.

    ``repo`` is the repository the session worked in, in the state the session left it. ``slug`` names the
    exam (default: from the first ask); ``out`` is the exam directory (default :func:`exam_dir`). An existing
    exam directory is replaced only with ``force``. ``verify`` writes ``verify.sh`` when a test command
    turned green or passed throughout."""
    ask = _first_ask(session)
    slug = slug or slug_for(ask) or slug_for(f"exam {session.session_id}")
    if not is_identifier(slug):
        raise UsageError(f"exam name {slug!r} is not a valid slug: 1-64 characters: lower-case letters, digits, "
                         "'_' and '-', starting with a letter or digit; pass one such as 'fix-rounding'")  # fmt: skip
    target = Path(out) if out is not None else exam_dir(repo, slug)
    if target.exists() and not force:
        raise UsageError(f"{target} already exists; replace it (--force) or name another slug (--slug)")
    if target.name != slug:
        raise UsageError(f"the exam directory {target} must be named after its slug {slug!r}")
    root, commit = _pin(session, Path(repo))
    written = written_paths(session, root)
    patch, untracked = workspace_patch(root, commit, written)
    fingerprint, parts = environment_fingerprint(root, commit, session.harness, session.harness_version)
    caps = caps_for(session)
    spec = ExamSpec(
        slug=slug,
        runner=ExamRunner(name=session.harness, version=session.harness_version),
        model=session.model,
        workspace=ExamWorkspace(commit=commit, patch=PATCH_FILE if patch else None, untracked=tuple(untracked)),
        environment=ExamEnvironment(fingerprint=fingerprint, parts=parts),
        tools=ExamTools(allow=tuple(sorted(session.tools_used))),
        caps=caps,
        source=ExamSource(session_id=session.session_id, harness=session.harness,
                          blessed_at=datetime.now(UTC).replace(microsecond=0), turns=assistant_turns(session),
                          cost_usd=session.cost_usd),  # fmt: skip
    )
    assertions = suggest_assertions(session, root, written, caps)
    script = verify_script(test_history(session, root)) if verify else None
    return write_exam(target, spec, instruction_text(session), assertions, patch=patch or None, verify=script,
                      force=force)  # fmt: skip


def _first_ask(session: Session) -> str:
    try:
        return first_ask(session)
    except ValueError as exc:
        raise UsageError(f"{exc}; distil a session that starts with the person's request") from None


def _pin(session: Session, repo: Path) -> tuple[Path, str]:
    """The repository's root and the commit the session started from, or a :class:`UsageError` saying why not."""
    try:
        root = Path(git(repo, "rev-parse", "--show-toplevel").decode().strip())
    except (RuntimeError, OSError) as exc:
        raise UsageError(f"{repo} is not a git repository ({exc}); distil in the repository the session worked "
                         "in") from None  # fmt: skip
    try:
        commit = workspace_commit(session, root)
        if not has_commit(root, commit):
            raise ValueError(f"the repository does not hold commit {commit}")
    except (RuntimeError, ValueError) as exc:
        raise UsageError(f"cannot pin the workspace of session {session.session_id}: {exc}; distil in the "
                         "repository the session worked in, with the commit it started from fetched") from None
    return root, commit
