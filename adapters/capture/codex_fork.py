"""Forked Codex rollouts: where the copy of the earlier session ends and this session's own lines begin.

``codex fork`` starts a rollout with the new session's ``session_meta`` and then copies the earlier rollout into
it, line by line, stamped with the instant of the copy — the earlier ``session_meta`` first — before the new
session's own turns. Turn ids (on ``task_started`` and ``turn_context``) are UUIDv7s minted when the turn ran, so
the copy ends at the first turn minted no earlier than the new session itself (its id is a UUIDv7 too, else its
``timestamp`` says when it began). Versions whose turns carry no such id are read by how the copy is written: in
one flush, each line stamped within a millisecond or two of the one before, so the copy ends at the first pause
of :data:`REPLAY_GAP`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

REPLAY_GAP = timedelta(milliseconds=10)
"""A pause no line of the copy is written after (Codex writes it in one flush)."""


@dataclass
class Replay:
    """Whether a forked rollout's lines are still the copy of the earlier session, line by line."""

    created: datetime | None = None
    """When this session was created (from its UUIDv7 id, else its ``session_meta`` timestamp)."""
    active: bool = False
    """Lines read now belong to the copy (from the copied ``session_meta`` on)."""
    turn_ids: bool = False
    """The replay's turns carry UUIDv7 ids (so the end is found from them, not from a pause)."""
    last_at: datetime | None = None

    def goes_on(self, kind: Any, payload: dict[str, Any], at: datetime | None) -> bool:
        """Whether this line is still part of the replay (it ends at this session's first own line)."""
        previous, self.last_at = self.last_at, at or self.last_at
        if not self.active:
            return False
        starts_turn = kind == "turn_context" or (kind == "event_msg" and payload.get("type") == "task_started")
        minted = uuid7_time(payload.get("turn_id")) if starts_turn else None
        if minted is not None and self.created is not None:
            self.turn_ids = True
            self.active = minted < self.created
        elif not self.turn_ids and at is not None and previous is not None and at - previous >= REPLAY_GAP:
            self.active = False
        return self.active


def uuid7_time(value: Any) -> datetime | None:
    """When a UUIDv7 was minted (its first 48 bits are Unix milliseconds); None for anything else."""
    try:
        parsed = uuid.UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None
    if parsed is None or parsed.version != 7:
        return None
    return datetime.fromtimestamp((parsed.int >> 80) / 1000, tz=timezone.utc)
