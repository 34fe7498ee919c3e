"""Reviewing an exam's suggested assertions: a person accepts or deletes each draft before the exam runs.

:func:`review` rewrites ``assertions.toml`` atomically, or not at all when a key is unknown;
:func:`require_reviewed` is what the run path calls first — an exam with drafts does not run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from assay.core.errors import ConfigError, NotFoundError
from assay.core.exam import ASSERTIONS_FILE, Exam, read_assertions, unreviewed, write_assertions

__all__ = ["ReviewResult", "require_reviewed", "review"]


class ReviewResult(BaseModel):
    """What a review changed, and what is left to review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accepted: tuple[str, ...] = ()
    """Keys accepted by this review (drafts that became accepted)."""
    deleted: tuple[str, ...] = ()
    """Keys removed from the exam by this review."""
    draft: tuple[str, ...] = ()
    """Keys still in draft after it."""


def review(exam_dir: Path, *, accept: Sequence[str] = (), delete: Sequence[str] = (),
           accept_all: bool = False) -> ReviewResult:
    """Accept and delete assertions of the exam at ``exam_dir`` by key (``accept_all``: accept every draft
    not deleted). An unknown key, or a key both accepted and deleted, changes nothing."""
    path = Path(exam_dir) / ASSERTIONS_FILE
    assertions = read_assertions(path).assertion
    keys = [a.key for a in assertions]
    unknown = [k for k in dict.fromkeys([*accept, *delete]) if k not in keys]
    if unknown:
        others = f"also unknown: {', '.join(unknown[1:])}; " if len(unknown) > 1 else ""
        raise NotFoundError("assertion", unknown[0], f"{others}nothing was written", known=keys,
                            known_as=f"assertions in {path}")  # fmt: skip
    both = sorted(set(accept) & set(delete))
    if both:
        raise ConfigError(f"{path}: {', '.join(both)} cannot be both accepted and deleted; nothing was written")
    dropping = set(delete)
    accepting = {a.key for a in assertions if a.status == "draft"} if accept_all else set(accept)
    kept = [a.model_copy(update={"status": "accepted"}) if a.key in accepting else a
            for a in assertions if a.key not in dropping]  # fmt: skip
    write_assertions(path, kept)
    newly = tuple(a.key for a in assertions if a.key in accepting and a.key not in dropping and a.status == "draft")
    return ReviewResult(accepted=newly, deleted=tuple(k for k in keys if k in dropping),
                        draft=tuple(a.key for a in kept if a.status == "draft"))


def require_reviewed(exam: Exam) -> None:
    """Refuse an exam whose assertions are not all reviewed, naming the drafts and the command that reviews them."""
    drafts = unreviewed(exam)
    if drafts:
        shown = ", ".join(drafts[:10]) + (f" and {len(drafts) - 10} more" if len(drafts) > 10 else "")
        raise ConfigError(
            f"exam {exam.spec.slug!r} has {len(drafts)} draft assertion(s) not yet reviewed: {shown}\n"
            f"accept or delete each before it runs: assay review {exam.path} --accept KEY --delete KEY "
            "(or --accept-all once you have read them)"
        )
