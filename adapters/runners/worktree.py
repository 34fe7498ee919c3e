"""Git worktrees for replaying an exam: one detached checkout per replay, always removed afterwards.

A replay starts from the exam's pinned commit with the person's uncommitted state (the exam's workspace
patch) applied on top. :func:`replay_worktree` makes that checkout beside the repository (``git worktree
add --detach``), applies the patch, and records the starting state as a *tree id* in the worktree's own
index — nothing is committed, no branch or ref is made — so :func:`changed_files` can later say exactly
what the agent changed, patch excluded. The worktree is removed when the block ends, also when it raised;
:func:`sweep_worktrees` removes what a killed process left behind.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from assay.core.errors import NotFoundError, UsageError

__all__ = ["ChangedFile", "Worktree", "changed_files", "replay_worktree", "sweep_worktrees"]

_STATUS_WORDS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type-changed"}
"""``git diff --name-status`` letters, as words."""


@dataclass(frozen=True)
class Worktree:
    """A replay's checkout: where it is, and the tree id of its starting state (commit plus patch)."""

    path: Path
    base_tree: str
    """``git write-tree`` of the starting state, taken from the worktree's own index."""


class ChangedFile(NamedTuple):
    """A path the agent changed, relative to the worktree, and how (``added``, ``modified``, ``deleted``,
    ``renamed`` — then ``path`` is the new name —, ``copied`` or ``type-changed``)."""

    status: str
    path: str


class GitFailed(RuntimeError):
    """A git command failed; the message is git's own."""

    def __init__(self, args: tuple[str, ...], message: str) -> None:
        self.args_given, self.message = args, message
        super().__init__(f"git {' '.join(args)}: {message}")


_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextmanager
def _worktree_admin(cwd: Path) -> Iterator[None]:
    """Hold the repository's worktree administration alone: ``git worktree prune`` (which ``remove`` also does)
    deletes the record of a worktree another ``git worktree add`` is still writing, so replays running side by
    side — threads of this process or other processes — take turns. A thread lock, then a file lock in the
    repository's common git directory."""
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=cwd, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL).stdout.strip()
    path = (Path(cwd) / (common or ".git")).resolve() / "assay-worktrees.lock"
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(path, threading.Lock())
    with lock, path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git in ``cwd`` (no input, paths unquoted); :class:`GitFailed` with git's words when ``check``.
    ``git worktree`` commands run one at a time per repository (:func:`_worktree_admin`)."""
    if args and args[0] == "worktree":
        with _worktree_admin(cwd):
            return _run_git(cwd, *args, check=check)
    return _run_git(cwd, *args, check=check)


def _run_git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise GitFailed(args, done.stderr.strip() or done.stdout.strip())
    return done


def _check_repo(repo: Path) -> Path:
    if not repo.is_dir():
        raise NotFoundError("repository", str(repo), "name the git repository the exam belongs to")
    done = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0:
        raise NotFoundError("git repository", str(repo), f"git says: {done.stderr.strip()}")
    return repo


@contextmanager
def replay_worktree(repo: Path, commit: str, patch: Path | None, *, parent: Path, name: str,
                    exam: str | None = None) -> Iterator[Worktree]:
    """A detached worktree of ``repo`` at ``commit`` in ``parent/name``, with ``patch`` applied; removed on exit.

    ``exam`` names the exam in error messages. A commit the repository lacks or a patch that does not apply
    is :class:`~assay.core.errors.UsageError` naming the exam and quoting git; nothing is left behind.
    """
    repo = _check_repo(Path(repo))
    what = f"exam {exam!r}" if exam else "the replay"
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / name
    if path.exists():
        raise UsageError(f"{what}: the worktree folder {path} already exists; give the replay another name")
    try:
        _git(repo, "worktree", "add", "--detach", str(path), commit)
    except GitFailed as failed:
        raise UsageError(f"{what}: cannot check out commit {commit} of {repo}: {failed.message}") from None
    try:
        if patch is not None:
            applied = _git(path, "apply", "--binary", "--whitespace=nowarn", str(Path(patch).resolve()), check=False)
            if applied.returncode != 0:
                raise UsageError(f"{what}: its workspace patch {patch} does not apply on commit {commit}: "
                                 f"{applied.stderr.strip()}")
        _git(path, "add", "-A")
        base_tree = _git(path, "write-tree").stdout.strip()
        yield Worktree(path=path, base_tree=base_tree)
    finally:
        remove_worktree(repo, path)


def remove_worktree(repo: Path, path: Path) -> None:
    """Remove the worktree at ``path`` (its folder and git's record of it); a missing one is no error."""
    removed = _git(repo, "worktree", "remove", "--force", str(path), check=False)
    if removed.returncode != 0 and path.exists():
        shutil.rmtree(path, ignore_errors=True)
    _git(repo, "worktree", "prune", check=False)


def changed_files(worktree: Worktree) -> list[ChangedFile]:
    """What changed in the worktree since its starting state, by path (untracked files included, ignored ones
    not): stages everything in the worktree's own index and compares it with :attr:`Worktree.base_tree`."""
    _git(worktree.path, "add", "-A")
    listing = _git(worktree.path, "diff", "--cached", "--name-status", "-M", "-z", worktree.base_tree).stdout
    fields = listing.split("\0")
    changes: list[ChangedFile] = []
    position = 0
    while position < len(fields) and fields[position]:
        letter = fields[position][0]
        step = 3 if letter in "RC" else 2
        changes.append(ChangedFile(_STATUS_WORDS.get(letter, letter), fields[position + step - 1]))
        position += step
    return changes


def listed_worktrees(repo: Path) -> list[Path]:
    """The worktrees git lists for ``repo`` (the main one first)."""
    porcelain = _git(repo, "worktree", "list", "--porcelain").stdout
    return [Path(line.removeprefix("worktree ")) for line in porcelain.splitlines() if line.startswith("worktree ")]


def sweep_worktrees(repo: Path, parent: Path) -> list[Path]:
    """Remove every worktree of ``repo`` that git still lists under ``parent`` (what a killed replay left);
    returns their paths. Call it when no replay into ``parent`` is running: it removes theirs too."""
    repo = _check_repo(Path(repo))
    root = Path(parent).resolve()
    main, *others = listed_worktrees(repo)
    swept = [path for path in others if path.resolve().is_relative_to(root) and path.resolve() != main.resolve()]
    for path in swept:
        remove_worktree(repo, path)
    _git(repo, "worktree", "prune", check=False)
    return swept
