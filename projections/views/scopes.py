"""What the views' ``formation`` and ``upkeep`` databases share: a
lesson's scope as a key, and counters kept as 8-byte integers.

A lesson's scope is ``(user, agent)``: the entry's own user, else its
session's user, else none (``""``), and its agent (``""`` when none). Dedup of
lessons (:mod:`.formation`) and retention by count (:mod:`.upkeep`) use this
one definition, so the lessons a new lesson is compared with are the ones its
scope's limit counts.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventstore import EntryRecorded

from ..models import SessionView
from .keys import SEP, latest_version, u64, unpack_u64

__all__ = ["add_count", "get_count", "lesson_scope", "scope_key"]

_session = msgspec.msgpack.Decoder(SessionView).decode


def scope_key(user_id: str | None, agent_id: str | None) -> bytes:
    """``user | SEP | agent`` (empty parts when none)."""
    return (user_id or "").encode() + SEP + (agent_id or "").encode()


def lesson_scope(txn: Any, dbs: dict[bytes, Any], entry: EntryRecorded) -> bytes:
    """The scope key of a lesson: its user (else its session's) and its agent."""
    user = entry.user_id
    if not user and entry.session_id:
        raw = latest_version(txn, dbs[b"sessions"], entry.session_id, None)
        user = None if raw is None else _session(raw).user_id
    return scope_key(user, entry.agent_id)


def get_count(txn: Any, db: Any, key: bytes) -> int | None:
    """A counter's value (None when absent)."""
    raw = txn.get(key, db=db)
    return None if raw is None else unpack_u64(raw)


def add_count(txn: Any, db: Any, key: bytes, delta: int) -> None:
    """Add to a counter; one at zero (or below) is absent, as in a replay that never saw it."""
    total = (get_count(txn, db, key) or 0) + delta
    if total > 0:
        txn.put(key, u64(total), db=db)
    else:
        txn.delete(key, db=db)
