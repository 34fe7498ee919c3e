"""The bodies of ``assay.calls.import`` and ``assay.calls.review``: production calls become tests."""

from __future__ import annotations

from typing import Literal

from .document_runs import Body


class MatchedCall(Body):
    """A call matched to a case of the suite and added to the call set."""

    call_id: str
    """The call's id in the call set (``<vendor>-<the vendor's id>``)."""
    case: str
    """The case key it was matched to."""
    verdict: Literal["pass", "fail", "error", "unknown"]
    """The vendor's own overall verdict (``error``: the call did not execute; replayed, an ERROR case run)."""


class DraftedCall(Body):
    """A failing call that matched no case, drafted as a regression case."""

    key: str
    """The draft's case key (``<template>-<vendor>-<id>``)."""
    call_id: str
    """The call it was drafted from."""
    reason: str
    """Why: the vendor's failed evaluations and why no case matched."""


class SkippedCall(Body):
    """A call that matched no case and was not drafted."""

    call_id: str
    """The call's id."""
    verdict: Literal["pass", "fail", "error", "unknown"]
    """The vendor's own overall verdict."""
    reason: str
    """Why it was skipped (passed, no verdict, did not execute, or no --template to draft it from)."""


class CallsImportDoc(Body):
    """``assay calls import``: a vendor's call export into a suite's call set."""

    vendor: str
    """vapi, elevenlabs or hamming."""
    file: str
    """The export."""
    suite: str
    """TEAM/SUITE the calls were matched to."""
    call_set: str
    """The call set written (--out)."""
    drafts_file: str
    """The drafts file beside it."""
    matched: list[MatchedCall]
    """Calls added to the call set now."""
    drafted: list[DraftedCall]
    """Drafts added now."""
    skipped: list[SkippedCall]
    """Calls neither matched nor drafted."""
    already_imported: list[str]
    """Calls already in the call set, already drafted, or deleted as drafts: left alone."""
    changed: bool
    """Whether anything was written."""


class Draft(Body):
    """A draft regression case, awaiting review."""

    key: str
    """Its case key."""
    call_id: str
    """The call it was drafted from."""
    template: str
    """The template it was made from."""
    reason: str
    """Why it was drafted."""
    title: str
    """The case's title."""
    turns: int
    """The caller's turns taken from the call (the case's scripted turns)."""


class CallsReviewDoc(Body):
    """``assay calls review``: the drafts of a call set, after an accept or a delete when one was asked."""

    action: Literal["list", "accepted", "deleted"]
    """What this command did."""
    suite: str
    """TEAM/SUITE of the drafts."""
    call_set: str
    """The call set."""
    drafts_file: str
    """Where the drafts are kept."""
    drafts: list[Draft]
    """The drafts still awaiting review."""
    deleted: list[str]
    """Calls whose drafts were deleted (never drafted again)."""
    key: str | None = None
    """The draft accepted or deleted."""
    case: str | None = None
    """With ``accepted``: TEAM/CASE written into the bundle."""
    into: str | None = None
    """With ``accepted``: the bundle the case was written into; it counts once that bundle is loaded."""
