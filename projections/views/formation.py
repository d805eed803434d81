"""Memory that forms itself in the views: the indexes that keep
dedup of lessons and the extraction backlog cheap, and the reinforcement tally.

One database, ``formation``, with these keys (ids and counts, no content):

- ``L<user>\\0<agent>\\0<entry id>`` -> the lesson's word count and source
  seq: every shown lesson (live or redacted; a compacted one leaves) by its
  scope, so a new lesson reads only its scope's candidates, only those whose
  word count could reach the threshold, and a reader may cache word sets by
  (id, source seq);
- ``E<entry id>`` -> ``<user>\\0<agent>``: the lesson's scope, to unindex it;
- ``U<session id>`` -> how many of the session's indexed messages were
  recorded after its last ``session.extracted`` (absent: none);
- ``X<session id>`` -> the ``upto_seq`` of its last ``session.extracted``;
- ``R<entry id>\\0<seq>``: temporal, the entry's :class:`Reinforcement` tally.

A lesson's scope is its user (the entry's own, else its session's user, else
none: ``""``) and its agent (``""`` when none). Everything here follows the
views' own indexing (:meth:`~projections.views.apply.ViewWriter._index` and
``_unindex``), so a replay, where erased entries never appear, writes the same keys.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from eventstore import EntryRecorded, EntryReinforced, RecordedEvent, SessionExtracted

from ..models import AccessView, Reinforcement, StoredEntry
from .keys import SEP, decode_stored, latest_version, prefix_items, u64, version_key
from .scopes import add_count, get_count, lesson_scope, scope_key

__all__ = [
    "entry_compacted",
    "entry_indexed",
    "entry_unindexed",
    "lesson_items",
    "lesson_word_count",
    "lesson_words",
    "reinforced",
    "reinforcement_entity",
    "scope_prefix",
    "session_extracted",
    "session_gone",
]

_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits (the search's words); the underscore splits
_ASCII_WORDS = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32
                     for c in range(256))  # ASCII letters lower-cased, digits kept, the rest blank
_enc = msgspec.msgpack.Encoder()
_entry = decode_stored
_access = msgspec.msgpack.Decoder(AccessView).decode
_tally = msgspec.msgpack.Decoder(Reinforcement).decode


def lesson_words(text: str) -> frozenset[str]:
    """The word set dedup compares (seed 004's Jaccard): lower-cased runs of
    letters and digits, no stemming, no stop words left out."""
    return frozenset(_WORD.findall(text.lower()))


def lesson_word_count(text: str) -> int:
    """``len(lesson_words(text))`` (the ``L`` record's count, written for every
    lesson a replay meets): in ASCII text a word is a run of letters and digits,
    so a table lower-cases the letters and blanks every other byte, and ``split``
    cuts the words, all in C (4 µs against ``findall``'s 10 on a corpus lesson)."""
    if not text.isascii():
        return len(lesson_words(text))
    return len(set(text.encode().translate(_ASCII_WORDS).split()))


def scope_prefix(user_id: str | None, agent_id: str | None) -> bytes:
    """The ``L`` prefix of a scope's lessons."""
    return b"L" + scope_key(user_id, agent_id) + SEP


def reinforcement_entity(entry_id: str) -> str:
    """The temporal entity of an entry's reinforcement tally."""
    return f"R{entry_id}"


def lesson_items(scope: bytes, eid: bytes, content: str, source_seq: int) -> list[tuple[bytes, bytes]]:
    """A shown lesson's records: ``L`` (its word count and source seq) and ``E`` (its scope)."""
    return [(b"L" + scope + SEP + eid, u64(lesson_word_count(content)) + u64(source_seq)),
            (b"E" + eid, scope)]


def entry_indexed(txn: Any, dbs: dict[bytes, Any], stored: StoredEntry, entry: EntryRecorded) -> None:
    """An entry joined the views' indexes (recorded, or its redacted version)."""
    db = dbs[b"formation"]
    eid = stored.entry_id.encode()
    if stored.kind == "lesson":
        for key, value in lesson_items(lesson_scope(txn, dbs, entry), eid, entry.content, stored.source_seq):
            txn.put(key, value, db=db)
    elif stored.kind == "message" and stored.session_id:
        sid = stored.session_id.encode()
        if stored.recorded_seq > (get_count(txn, db, b"X" + sid) or 0):
            add_count(txn, db, b"U" + sid, 1)


def _lesson_gone(txn: Any, db: Any, eid: bytes) -> None:
    scope = txn.get(b"E" + eid, db=db)
    if scope is not None:
        txn.delete(b"L" + bytes(scope) + SEP + eid, db=db)
        txn.delete(b"E" + eid, db=db)


def entry_compacted(txn: Any, dbs: dict[bytes, Any], stored: StoredEntry) -> None:
    """A compacted lesson is no longer a live one (the other indexes stay)."""
    if stored.kind == "lesson":
        _lesson_gone(txn, dbs[b"formation"], stored.entry_id.encode())


def entry_unindexed(txn: Any, dbs: dict[bytes, Any], stored: StoredEntry) -> None:
    """An entry left the views' indexes (deleted, or replaced by its redaction)."""
    db = dbs[b"formation"]
    if stored.kind == "lesson":
        _lesson_gone(txn, db, stored.entry_id.encode())
    elif stored.kind == "message" and stored.session_id:
        sid = stored.session_id.encode()
        if stored.recorded_seq > (get_count(txn, db, b"X" + sid) or 0):
            add_count(txn, db, b"U" + sid, -1)


def session_extracted(txn: Any, dbs: dict[bytes, Any], event: SessionExtracted) -> None:
    """Extraction read the session up to ``upto_seq``: the backlog is the indexed
    messages recorded after it (counted again: one session's index)."""
    db = dbs[b"formation"]
    sid = event.session_id.encode()
    upto = max(event.upto_seq, get_count(txn, db, b"X" + sid) or 0)
    txn.put(b"X" + sid, u64(upto), db=db)
    left = 0
    entries = dbs[b"entries"]
    for key, kind in prefix_items(txn, dbs[b"by_session"], sid + SEP):
        if kind != b"message":
            continue
        raw = latest_version(txn, entries, key[len(sid) + 10:].decode(), None)
        if raw is not None and _entry(raw).recorded_seq > upto:
            left += 1
    add_count(txn, db, b"U" + sid, left - (get_count(txn, db, b"U" + sid) or 0))


def session_gone(txn: Any, dbs: dict[bytes, Any], session_id: str) -> None:
    """A deleted session leaves the backlog."""
    db = dbs[b"formation"]
    sid = session_id.encode()
    txn.delete(b"U" + sid, db=db)
    txn.delete(b"X" + sid, db=db)


def reinforced(txn: Any, dbs: dict[bytes, Any], rec: RecordedEvent, event: EntryReinforced) -> None:
    """One more reinforcement, which is also one more access (decay and access score)."""
    access = dbs[b"access"]
    raw = latest_version(txn, access, event.entry_id, None)
    prev = AccessView() if raw is None else _access(raw)
    txn.put(version_key(event.entry_id, rec.seq),
            _enc.encode(AccessView(prev.count + 1, max(prev.last_at, event.at))), db=access)
    entity = reinforcement_entity(event.entry_id)
    raw = latest_version(txn, dbs[b"formation"], entity, None)
    tally = Reinforcement() if raw is None else _tally(raw)
    new = Reinforcement(tally.count + 1, max(tally.last_at, event.at), event.similarity, event.by_entry_id)
    txn.put(version_key(entity, rec.seq), _enc.encode(new), db=dbs[b"formation"])
