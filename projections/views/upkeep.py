"""Upkeep in the views: the indexes that keep checkpoints, retention
by count and ephemeral sessions cheap to find.

One database, ``upkeep``, with these keys (ids, labels, times and counts; no content):

- ``A<user>\\0<agent>\\0<occurred_at(8)>\\0<entry id>``: every indexed lesson
  by scope, oldest first (retention by count deletes from the front);
- ``a<entry id>`` -> its ``A`` key, to unindex it;
- ``N<user>\\0<agent>`` -> how many lessons the scope holds (absent: none);
- ``C<user>\\0<seq(8)>`` -> a :class:`~projections.models.CheckpointView`:
  checkpoints by user, in log order (as-of reads skip those after the seq);
- ``c<session id>\\0<seq(8)>`` -> its ``C`` key: a session's checkpoints,
  dropped with the session (their payloads are erased with it);
- ``P<session id>``: the sessions started ephemeral.

A lesson's scope is the one dedup uses (Helper F's ``formation`` index): its
user (the entry's own, else its session's, else none: ``""``) and its agent
(``""`` when none). A lesson counts from the moment the views index it until
they unindex it (deleted, or replaced by its redaction, which indexes it again):
a compacted lesson is still stored and still counts. Every change follows the
views' own indexing and the session deletion, so a replay, where erased
payloads never appear, writes the same keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from eventstore import CheckpointMarked, EntryRecorded, RecordedEvent, SessionStarted

from ..models import CheckpointView, StoredEntry
from .keys import SEP, prefix_items, u64, unpack_u64
from .scopes import add_count, lesson_scope, scope_key

__all__ = [
    "checkpoint_marked",
    "checkpoints_of",
    "count_lessons",
    "entry_indexed",
    "entry_unindexed",
    "ephemeral_ids",
    "lesson_items",
    "lesson_scopes",
    "oldest_lessons",
    "session_checkpoints",
    "session_gone",
    "session_started",
]

DB = b"upkeep"
_enc = msgspec.msgpack.Encoder()
_checkpoint = msgspec.msgpack.Decoder(CheckpointView).decode


# -- applying -----------------------------------------------------------------

def entry_indexed(txn: Any, dbs: dict[bytes, Any], stored: StoredEntry, entry: EntryRecorded) -> None:
    """An entry joined the views' indexes: a lesson joins its scope."""
    if stored.kind != "lesson":
        return
    db = dbs[DB]
    eid = stored.entry_id.encode()
    if txn.get(b"a" + eid, db=db) is not None:
        return
    scope = lesson_scope(txn, dbs, entry)
    for key, value in lesson_items(scope, eid, stored.occurred_at):
        txn.put(key, value, db=db)
    count_lessons(txn, dbs, scope, 1)


def count_lessons(txn: Any, dbs: dict[bytes, Any], scope: bytes, added: int) -> None:
    """Add ``added`` lessons to the scope's count."""
    add_count(txn, dbs[DB], b"N" + scope, added)


def lesson_items(scope: bytes, eid: bytes, occurred_at: int) -> list[tuple[bytes, bytes]]:
    """An indexed lesson's records: ``A`` (by scope, oldest first) and ``a`` (its ``A`` key)."""
    key = b"A" + scope + SEP + u64(occurred_at) + SEP + eid
    return [(key, b""), (b"a" + eid, key)]


def entry_unindexed(txn: Any, dbs: dict[bytes, Any], stored: StoredEntry) -> None:
    """An entry left the views' indexes: a lesson leaves its scope."""
    if stored.kind != "lesson":
        return
    db = dbs[DB]
    eid = stored.entry_id.encode()
    key = txn.get(b"a" + eid, db=db)
    if key is None:
        return
    key = bytes(key)
    txn.delete(key, db=db)
    txn.delete(b"a" + eid, db=db)
    add_count(txn, db, b"N" + key[1:len(key) - len(eid) - 10], -1)  # A | scope | SEP | time(8) | SEP | id


def session_started(txn: Any, dbs: dict[bytes, Any], event: SessionStarted) -> None:
    """An ephemeral session joins the ephemeral index."""
    if event.ephemeral:
        txn.put(b"P" + event.session_id.encode(), b"", db=dbs[DB])


def checkpoint_marked(txn: Any, dbs: dict[bytes, Any], rec: RecordedEvent, event: CheckpointMarked) -> None:
    """A checkpoint joins its user's list and its session's."""
    db = dbs[DB]
    view = CheckpointView(event.checkpoint_id, event.session_id, rec.seq, event.at, event.user_id,
                          event.agent_id, event.model_id, event.chat_id)
    key = b"C" + (event.user_id or "").encode() + SEP + u64(rec.seq)
    txn.put(key, _enc.encode(view), db=db)
    txn.put(b"c" + event.session_id.encode() + SEP + u64(rec.seq), key, db=db)


def session_gone(txn: Any, dbs: dict[bytes, Any], session_id: str) -> None:
    """A deleted session takes its checkpoints and its ephemeral mark with it."""
    db = dbs[DB]
    sid = session_id.encode()
    txn.delete(b"P" + sid, db=db)
    for key, value in list(prefix_items(txn, db, b"c" + sid + SEP)):
        txn.delete(value, db=db)
        txn.delete(key, db=db)


# -- reading ------------------------------------------------------------------

def checkpoints_of(txn: Any, dbs: dict[bytes, Any], user_id: str, agent_id: str | None,
                   as_of: int | None) -> Iterator[CheckpointView]:
    """A user's checkpoints (of one agent, if given), newest first, as of a seq."""
    for key, value in prefix_items(txn, dbs[DB], b"C" + user_id.encode() + SEP, reverse=True):
        if as_of is not None and unpack_u64(key[-8:]) > as_of:
            continue
        view = _checkpoint(value)
        if agent_id is None or view.agent_id == agent_id:
            yield view


def session_checkpoints(txn: Any, dbs: dict[bytes, Any], session_id: str) -> list[CheckpointView]:
    """A session's checkpoints (now), oldest first."""
    db = dbs[DB]
    out = []
    for _, key in prefix_items(txn, db, b"c" + session_id.encode() + SEP):
        raw = txn.get(key, db=db)
        if raw is not None:
            out.append(_checkpoint(bytes(raw)))
    return out


def lesson_scopes(txn: Any, dbs: dict[bytes, Any]) -> list[tuple[str, str, int]]:
    """(user, agent, lessons) of every scope that holds lessons (now; ``""``: none)."""
    out = []
    for key, value in prefix_items(txn, dbs[DB], b"N"):
        user, agent = key[1:].split(SEP, 1)
        out.append((user.decode(), agent.decode(), unpack_u64(value)))
    return out


def oldest_lessons(txn: Any, dbs: dict[bytes, Any], user_id: str, agent_id: str, count: int) -> list[str]:
    """The ids of a scope's ``count`` oldest lessons (by ``occurred_at``, then id)."""
    out: list[str] = []
    prefix = b"A" + scope_key(user_id, agent_id) + SEP
    for key, _ in prefix_items(txn, dbs[DB], prefix):
        if len(out) >= count:
            break
        out.append(key[len(prefix) + 9:].decode())
    return out


def ephemeral_ids(txn: Any, dbs: dict[bytes, Any]) -> list[str]:
    """The ids of the ephemeral sessions (now)."""
    return [key[1:].decode() for key, _ in prefix_items(txn, dbs[DB], b"P")]
