"""Keyed items: a preference set again supersedes the earlier one.

A preference carries a user and a key. The ``keyed`` database maps the pair
(hashed, so that no user id or key is stored in it) to the preferences of the
pair the views hold, in seq order, and each of their entry ids back to the
pair. Every preference but the pair's last is superseded by the next one: it
has a version in state ``superseded`` from the next one's seq on, naming it
(:class:`~projections.models.SupersededInfo`). Reads as of an earlier seq find
the old one live; reads now find it superseded, out of search, context and
the counts.

The state is a function of the pair's list, which holds what the log holds:
an erased preference leaves it, and its predecessor is then superseded by the
one after it (or by none). So a replay, where the erased payload never
appears, builds the same versions; :func:`resync` rewrites an entry's
versions to match the list whenever the list changes.

A user memory saved again under its key is superseded the same way, derived
on read from the memory's versions (:func:`memory_version`).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable
from typing import Any

import msgspec

from eventstore import SHOWN_STATES, EntryRecorded, PreferenceDetails

from ..models import MemoryView, StoredEntry, SupersededInfo
from .keys import SEP, all_versions, decode_stored, version_key

__all__ = ["KEYED_DB", "Keyed", "keyed_pair", "memory_version"]

KEYED_DB = b"keyed"
_ID = b"i" + SEP  # entry id -> its pair
_enc = msgspec.msgpack.Encoder().encode
_members = msgspec.msgpack.Decoder(list[tuple[int, str]]).decode
replace = msgspec.structs.replace


def keyed_pair(entry: EntryRecorded) -> bytes | None:
    """The hashed (user, key) of a keyed entry (a user's preference), else None."""
    details = entry.details
    if entry.kind != "preference" or entry.user_id is None or not isinstance(details, PreferenceDetails):
        return None
    raw = SEP.join((entry.user_id.encode(), b"preference", details.key.encode()))
    return b"k" + SEP + hashlib.blake2b(raw, digest_size=16).digest()


class Keyed:
    """The pairs' lists and their entries' supersession, in the writer's
    transaction; ``counted(stored, delta)`` moves an entry in or out of the
    counts when it stops or starts being shown."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any], counted: Callable[[StoredEntry, int], None]) -> None:
        self.txn = txn
        self.dbs = dbs
        self.db = dbs[KEYED_DB]
        self.counted = counted

    def joined(self, entry: EntryRecorded, seq: int) -> None:
        """``entry`` is in the views from ``seq`` (recorded, or made by a redaction
        in a replay): it joins its pair's list (leaving another pair's, when a
        redaction changed its key)."""
        pair = keyed_pair(entry)
        eid = entry.entry_id.encode()
        old = self.txn.get(_ID + eid, db=self.db)
        if old is not None and bytes(old) != pair:
            self.left(entry.entry_id)
        if pair is None:
            return
        members = self._members(pair)
        if entry.entry_id not in (m[1] for m in members):
            bisect.insort(members, (seq, entry.entry_id))
            self.txn.put(pair, _enc(members), db=self.db)
            self.txn.put(_ID + eid, pair, db=self.db)
        self.resync(members)

    def left(self, entry_id: str) -> None:
        """An erased entry leaves its pair's list; the others follow."""
        raw = self.txn.get(_ID + entry_id.encode(), db=self.db)
        if raw is None:
            return
        pair = bytes(raw)
        self.txn.delete(_ID + entry_id.encode(), db=self.db)
        members = [m for m in self._members(pair) if m[1] != entry_id]
        if members:
            self.txn.put(pair, _enc(members), db=self.db)
        else:
            self.txn.delete(pair, db=self.db)
        self.resync(members)

    def _members(self, pair: bytes) -> list[tuple[int, str]]:
        raw = self.txn.get(pair, db=self.db)
        return [] if raw is None else _members(bytes(raw))

    def resync(self, members: list[tuple[int, str]]) -> None:
        """Each member superseded by the next one (the last by none)."""
        if not members:
            return
        for (_, eid), after in zip(members, [*members[1:], None], strict=True):
            info = None
            if after is not None:
                by = self._latest(after[1])
                info = SupersededInfo(after[1], after[0], 0 if by is None else by.recorded_at)
            self._supersede(eid, info)

    def _latest(self, entry_id: str) -> StoredEntry | None:
        versions = list(all_versions(self.txn, self.dbs[b"entries"], entry_id))
        return decode_stored(versions[-1][1]) if versions else None

    def _supersede(self, entry_id: str, info: SupersededInfo | None) -> None:
        """Rewrite the versions of ``entry_id`` so that it is superseded as
        ``info`` says, from ``info.seq`` on (not at all when None)."""
        db = self.dbs[b"entries"]
        versions = [(seq, decode_stored(raw)) for seq, raw in all_versions(self.txn, db, entry_id)]
        if not versions or versions[-1][1].superseded == info:
            return
        last = versions[-1][1]
        was = last.superseded
        if was is None and last.state not in SHOWN_STATES:
            return  # compacted: it left what is current by itself
        for seq, stored in versions:
            if was is not None and seq == was.seq:  # written by the record that no longer supersedes it
                self.txn.delete(version_key(entry_id, seq), db=db)
            else:
                self._put(entry_id, seq, _as(stored, info if info is not None and seq >= info.seq else None))
        if info is not None and all(seq != info.seq for seq, _ in versions):
            before = [s for seq, s in versions if seq < info.seq and (was is None or seq != was.seq)]
            if before:
                self._put(entry_id, info.seq, replace(_as(before[-1], info), changed_seq=info.seq))
        if (was is None) != (info is None):
            self.counted(last, -1 if info is not None else 1)

    def _put(self, entry_id: str, seq: int, stored: StoredEntry) -> None:
        self.txn.put(version_key(entry_id, seq), _enc(stored), db=self.dbs[b"entries"])


def _as(stored: StoredEntry, info: SupersededInfo | None) -> StoredEntry:
    """``stored`` superseded as ``info`` says (or shown again, as it was)."""
    if info is None:
        if stored.superseded is None:
            return stored
        return replace(stored, state="redacted" if stored.redacted is not None else "live", superseded=None)
    return replace(stored, state="superseded", superseded=info)


def memory_version(versions: list[MemoryView], memory_id: str) -> MemoryView | None:
    """The memory ``memory_id`` among its key's versions (oldest first, up to
    the point read): its last version, superseded when a later save under the
    key follows it; None when it is not among them."""
    mine = [i for i, v in enumerate(versions) if v.memory_id == memory_id]
    if not mine:
        return None
    own = versions[mine[-1]]
    later = next((v for v in versions[mine[-1] + 1:] if v.memory_id != memory_id), None)
    if later is None or own.state != "live":
        return own
    return replace(own, state="superseded",
                   superseded=SupersededInfo(later.memory_id, later.saved_seq, later.saved_at))
