"""Where an exam's replay starts, and the toolchain it expects: the workspace pin and the environment fingerprint.

The pin is a commit plus ``workspace.patch``: the uncommitted state the person had that the session did
not write — changes to tracked files, and untracked files as new-file diffs — so that ``git worktree add
<dir> <commit>`` followed by ``git apply workspace.patch`` recreates what the agent started from. The
session's own writes are left out (the replay must make them), and so is ``.assay/``, where exams live.

The fingerprint is the sha256 of what a replay's toolchain is made of: the harness and its version, the
operating system, Python and git, and each lockfile or manifest at the root of the pinned commit.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from assay.adapters.capture.base import is_windows_path
from assay.core.files import inside
from assay.core.ids import canonical_json
from assay.core.session import Session

__all__ = ["MANIFESTS", "environment_fingerprint", "git", "has_commit", "repo_relative", "workspace_commit", "workspace_patch",
           "written_paths"]  # fmt: skip

MANIFESTS = ("pyproject.toml", "requirements*.txt", "setup.py", "setup.cfg", "Pipfile.lock", "uv.lock", "poetry.lock",
             "package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.toml", "Cargo.lock",
             "go.mod", "go.sum", "Gemfile.lock", "composer.lock")  # fmt: skip
"""Files at the root of the pinned commit whose content goes into the environment fingerprint (globs allowed)."""

_COMMIT = re.compile(r"[0-9a-f]{40}")
_EXCLUDED = ".assay"


def git(repo: Path, *args: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> bytes:
    """``git args`` run in ``repo`` (no pager, no colour, no external diff; ``env`` added to this process's); its
    stdout. Any exit status not in ``ok`` raises :class:`RuntimeError` with git's own message."""
    environ = {**os.environ, "GIT_PAGER": "cat", "LC_ALL": "C", **(env or {})}
    done = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=repo, env=environ, capture_output=True,
                          check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    if done.returncode not in ok:
        message = done.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"git {' '.join(args[:2])} in {repo} exited {done.returncode}: {message}")
    return done.stdout


def has_commit(repo: Path, commit: str) -> bool:
    """Whether ``repo`` holds ``commit`` (an exam's pin)."""
    return git(repo, "cat-file", "-t", commit, ok=(0, 1, 128)).strip() == b"commit"


def repo_relative(path: str, root: Path, cwd: str | None) -> str | None:
    """``path`` as the agent named it, relative to the repository ``root``; None when it lies outside.

    An absolute path is read against the repository as it is here and as the session saw it (``cwd``);
    a relative one against the session's working directory. A session recorded on Windows (``C:\\...``) has
    its paths read the Windows way: either separator, the drive and the case not telling paths apart."""
    windows = is_windows_path(path) or bool(cwd and is_windows_path(cwd))
    flavour: type[PurePath] = PureWindowsPath if windows else PurePosixPath
    pure = flavour(path)
    bases: list[PurePath] = [PurePosixPath(str(root.resolve())), PurePosixPath(str(root))]
    session_root = flavour(cwd) if cwd else None
    if not pure.is_absolute():
        pure = (session_root or bases[0]) / pure
    if session_root is not None:
        bases.append(session_root)
    for base in bases:
        try:
            relative = pure.relative_to(base)
        except (ValueError, TypeError):
            continue
        return inside(relative.as_posix())
    return None


def written_paths(session: Session, root: Path) -> list[str]:
    """The repository-relative paths the session wrote, in order of first write (outside paths dropped)."""
    found = (repo_relative(p, root, session.cwd) for p in session.files_written)
    return list(dict.fromkeys(p for p in found if p))


def workspace_commit(session: Session, repo: Path) -> str:
    """The commit the session started from: the one it recorded, else the repository's ``HEAD``."""
    commit = session.git_commit or git(repo, "rev-parse", "HEAD").decode().strip()
    if not _COMMIT.fullmatch(commit):
        raise ValueError(f"{commit!r} is not a full commit id (40 hex digits)")
    return commit


def workspace_patch(repo: Path, commit: str, written: list[str]) -> tuple[bytes, list[str]]:
    """The person's uncommitted state relative to ``commit`` that the session did not write, as a patch
    ``git apply`` takes, and the untracked paths it adds. Empty bytes when there is nothing."""
    skip = {*written}
    excludes = [f":(exclude,literal){p}" for p in [*sorted(skip), _EXCLUDED]]
    tracked = git(repo, "diff", "--binary", "--no-renames", "--no-ext-diff", "--no-color", "--src-prefix=a/",
                  "--dst-prefix=b/", commit, "--", ".", *excludes)  # fmt: skip
    listed = git(repo, "ls-files", "--others", "--exclude-standard", "-z").decode("utf-8", "surrogateescape")
    untracked = sorted(p for p in listed.split("\0") if p and p not in skip and not _under(p, _EXCLUDED))
    added = [git(repo, "diff", "--binary", "--no-index", "--no-ext-diff", "--no-color", "--src-prefix=a/",
                 "--dst-prefix=b/", "--", "/dev/null", p, ok=(0, 1)) for p in untracked]  # fmt: skip
    return tracked + b"".join(added), untracked


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _tool_version(*command: str) -> str:
    if shutil.which(command[0]) is None:
        return "absent"
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    words = (done.stdout or done.stderr).split()
    return next((w for w in words if w[:1].isdigit()), "unknown")


def environment_fingerprint(repo: Path, commit: str, harness: str,
                            harness_version: str | None) -> tuple[str, dict[str, str]]:
    """The environment's fingerprint (``sha256:`` of the canonical JSON of its parts) and the parts, sorted by key:
    harness and its version, os, the ``python3`` and ``git`` on the path, and the sha256 of each manifest at
    the root of the pinned ``commit`` (:data:`MANIFESTS`) — the state a replay starts from, not the working
    tree, which holds the session's own edits."""
    parts = {
        "harness": harness,
        "harness_version": harness_version or "unknown",
        "os": f"{platform.system().lower()}-{platform.machine().lower()}",
        "python": _tool_version("python3", "--version"),
        "git": _tool_version("git", "--version"),
    }
    root = git(repo, "ls-tree", "--name-only", commit).decode().splitlines()
    for name in sorted(root):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in MANIFESTS):
            blob = git(repo, "cat-file", "blob", f"{commit}:{name}", ok=(0, 128))
            parts[name] = "sha256:" + hashlib.sha256(blob).hexdigest()
    parts = dict(sorted(parts.items()))
    return "sha256:" + hashlib.sha256(canonical_json(parts).encode()).hexdigest(), parts
