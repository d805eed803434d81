"""Reading the views, now or as of a seq, inside one read transaction.

The views hold no entry content. A reader decodes the stored version
(:class:`StoredEntry`) and reads the entry from the log payload at its
``source_seq`` through ``events_at`` (one log read transaction per batch),
applying the accumulated changes (:func:`projections.views.reducers.entry_view`).
Iterators resolve their entries in chunks, so a million entries never sit in
memory and the log is not asked once per entry.

While a read scope is open the views' maintenance lock is held shared;
``events_at`` takes the log's shared. That order (views, then log) is the only
one used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

import msgspec

from eventstore import (
    SHOWN_STATES,
    EntryRecorded,
    Event,
    ResourceSpec,
)

from .._skips import Skipped
from ..decay import entry_importance
from ..models import (
    AccessView,
    CheckpointView,
    DecayParams,
    DeletionRecord,
    EntryView,
    MemoryView,
    RankInputs,
    Reinforcement,
    ResourceActivity,
    ResourceState,
    SessionStats,
    SessionView,
    StoredEntry,
)
from . import upkeep as _upkeep  # -- upkeep --
from .current import CurrentMemo
from .formation import reinforcement_entity, scope_prefix  # -- formation --
from .keyed import memory_version
from .keys import (
    SEP,
    all_versions,
    decode_stored,
    latest_at,
    latest_version,
    parse_rank_value,
    prefix_items,
    rank_entry_id,
    u64,
    unpack_u64,
)
from .reducers import entry_view, stats_added
from .resources import ACTIVITY, key_entity, spec_entity  # -- memory resources --
from .versions import entry_versions

__all__ = ["EventsAt", "ViewReader"]

# The log's batch read: the events at the given seqs, None where erased or absent.
EventsAt = Callable[[Sequence[int]], list[Event | None]]

_entry = decode_stored
_session = msgspec.msgpack.Decoder(SessionView).decode
_memory = msgspec.msgpack.Decoder(MemoryView).decode
_access = msgspec.msgpack.Decoder(AccessView).decode
_params = msgspec.msgpack.Decoder(DecayParams).decode
_stats = msgspec.msgpack.Decoder(SessionStats).decode
_deletion = msgspec.msgpack.Decoder(DeletionRecord).decode
_skipped = msgspec.msgpack.Decoder(Skipped).decode

# Iterators resolve entries in chunks growing from _FIRST_CHUNK to _CHUNK: a
# reader that stops early reads few payloads, a long scan few batches.
_FIRST_CHUNK = 16
_CHUNK = 512


class ViewReader:
    """Reads of the views at ``as_of`` (None: the current state); entries are
    read from the log through ``events_at``."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any], as_of: int | None,
                 events_at: EventsAt) -> None:
        self.txn = txn
        self.dbs = dbs
        self.as_of = as_of
        self.events_at = events_at
        # The owner's memo and its generation when the search began (see .current).
        self.memo: tuple[CurrentMemo, int] | None = None

    def checkpoint(self) -> int:
        """The last seq the views applied."""
        raw = self.txn.get(b"checkpoint", db=self.dbs[b"meta"])
        return 0 if raw is None else unpack_u64(raw)

    # -- entries ------------------------------------------------------------

    def entry(self, entry_id: str) -> EntryView | None:
        """The entry version current at ``as_of``, its entry read from the log."""
        stored = self.stored_entry(entry_id)
        return None if stored is None else self.resolve([stored])[0]

    def stored_entry(self, entry_id: str) -> StoredEntry | None:
        """The stored (content-free) entry version current at ``as_of``."""
        raw = latest_version(self.txn, self.dbs[b"entries"], entry_id, self.as_of)
        if raw is not None:
            return _entry(raw)
        gone = self.txn.get(entry_id.encode(), db=self.dbs[b"deleted"])
        if gone is None:
            return None
        stored = _entry(bytes(gone))
        return stored if self.as_of is None or self.as_of >= stored.recorded_seq else None

    def compacted_at(self, entry_id: str) -> int | None:
        """The seq at which a compaction took the entry out of its session (its
        first compacted version), when it is compacted as of ``as_of``; else None."""
        current = self.stored_entry(entry_id)
        if current is None or current.state != "compacted":
            return None
        for seq, raw in all_versions(self.txn, self.dbs[b"entries"], entry_id):
            if seq >= current.recorded_seq and _entry(raw).state == "compacted":
                return seq
        return None

    def resolve(self, stored: Sequence[StoredEntry]) -> list[EntryView]:
        """The views of stored versions, their entries read with one ``events_at``
        (an edited entry's last edit too, which carries its content)."""
        seqs = [s.source_seq for s in stored if s.source_seq]
        edits = [s.edits[-1] for s in stored if s.source_seq and s.edits]
        events = iter(self.events_at(seqs + edits) if seqs else ())
        found = [next(events) if s.source_seq else None for s in stored]
        return [entry_view(s, e, next(events) if s.source_seq and s.edits else None)
                for s, e in zip(stored, found, strict=True)]

    def entry_versions(self, entry_id: str) -> list[tuple[int, EntryRecorded]]:
        """Each text of the entry current at ``as_of`` (:func:`.versions.entry_versions`)."""
        return entry_versions(self.stored_entry(entry_id), self.events_at)

    def _resolved(self, stored: Iterable[StoredEntry]) -> Iterator[EntryView]:
        """:meth:`resolve` over an iterator, chunk by chunk."""
        items = iter(stored)
        size = _FIRST_CHUNK
        while chunk := list(islice(items, size)):
            yield from self.resolve(chunk)
            size = min(size * 2, _CHUNK)

    def session_stats(self, session_id: str) -> SessionStats:
        """Statistics now, or recomputed from the stored entries as of ``as_of``."""
        if self.as_of is None:
            raw = self.txn.get(session_id.encode(), db=self.dbs[b"session_stats"])
            return SessionStats() if raw is None else _stats(bytes(raw))
        stats = SessionStats()
        for stored in self._session_stored(session_id, (), False):
            stats = stats_added(stats, stored)
        return stats

    def session_entries(
        self, session_id: str, kinds: tuple[str, ...] = (), newest_first: bool = False
    ) -> Iterator[EntryView]:
        """Live (or as-of) entries of a session in ``occurred_at`` order."""
        return self._resolved(self._session_stored(session_id, kinds, newest_first))

    def session_page(self, session_id: str, kinds: tuple[str, ...], offset: int,
                     limit: int | None) -> tuple[list[EntryView], int]:
        """One page of :meth:`session_entries` (oldest first) and how many there
        are in all; only the page's entries are resolved (read from the log)."""
        page: list[StoredEntry] = []
        total = 0
        for stored in self._session_stored(session_id, kinds, False):
            if total >= offset and (limit is None or len(page) < limit):
                page.append(stored)
            total += 1
        return self.resolve(page), total

    def _session_stored(self, session_id: str, kinds: tuple[str, ...],
                        newest_first: bool) -> Iterator[StoredEntry]:
        prefix = session_id.encode() + SEP
        for key, kind in prefix_items(self.txn, self.dbs[b"by_session"], prefix, newest_first):
            if kinds and kind.decode() not in kinds:
                continue
            stored = self.stored_entry(key[len(prefix) + 9 :].decode())
            if stored is not None and stored.state in SHOWN_STATES:
                yield stored

    def latest_entries(self, where: Callable[[StoredEntry], bool] | None = None) -> Iterator[EntryView]:
        """The newest version of every entry (any state but deleted), in id order;
        with ``where``, only those whose stored version it accepts (tested before
        any content is read from the log)."""
        stored = self._latest_stored()
        return self._resolved(stored if where is None else filter(where, stored))

    def _latest_stored(self) -> Iterator[StoredEntry]:
        cursor = self.txn.cursor(db=self.dbs[b"entries"])
        pending: Any = None
        entity = b""
        for key, value in cursor.iternext():
            name = bytes(key[:-9])
            if pending is not None and name != entity:
                yield _entry(pending)
            entity, pending = name, bytes(value)
        if pending is not None:
            yield _entry(pending)

    def latest_entries_by_hash(self, low: int, high: int) -> Iterator[EntryView]:
        """Like :meth:`latest_entries` for the entries whose ``crc32(id)`` lies
        in ``[low, high)``, in hash order; reads nothing else."""
        return self._resolved(self._stored_by_hash(low, high))

    def _stored_by_hash(self, low: int, high: int) -> Iterator[StoredEntry]:
        cursor = self.txn.cursor(db=self.dbs[b"by_hash"])
        if not cursor.set_range(low.to_bytes(4, "big")):
            return
        end = high.to_bytes(4, "big") if high < 1 << 32 else None
        entries = self.txn.cursor(db=self.dbs[b"entries"])
        for key in cursor.iternext(keys=True, values=False):
            if end is not None and bytes(key[:4]) >= end:
                return
            raw = latest_at(entries, bytes(key[4:]).decode(), None)
            if raw is not None:
                yield _entry(raw)

    def entries_by_time(self, newest_first: bool = False) -> Iterator[EntryView]:
        """Every live entry by ``occurred_at``."""
        return self._resolved(self._stored_by_time(newest_first))

    def _stored_by_time(self, newest_first: bool) -> Iterator[StoredEntry]:
        for key, _ in prefix_items(self.txn, self.dbs[b"by_time"], b"", newest_first):
            stored = self.stored_entry(key[9:].decode())
            if stored is not None and stored.state in SHOWN_STATES:
                yield stored

    def entries(self, entry_ids: Iterable[str]) -> list[EntryView | None]:
        """The versions (at ``as_of``) of ``entry_ids``, in order (None where
        unknown); one cursor and one ``events_at`` serve the batch."""
        cursor = self.txn.cursor(db=self.dbs[b"entries"])
        stored: list[StoredEntry | None] = []
        for entry_id in entry_ids:
            raw = latest_at(cursor, entry_id, self.as_of)
            stored.append(None if raw is None else _entry(raw))
        return self._resolve_some(stored)

    def entries_at(self, seqs: Iterable[int]) -> list[EntryView | None]:
        """The versions (at ``as_of``) of the entries recorded at ``seqs``, in
        order (None where the entry is gone); two cursors and one ``events_at``
        serve the batch."""
        return self._resolve_some(self._stored_at(seqs))

    def _resolve_some(self, stored: list[StoredEntry | None]) -> list[EntryView | None]:
        """:meth:`resolve`, keeping the Nones in place."""
        found = iter(self.resolve([s for s in stored if s is not None]))
        return [None if s is None else next(found) for s in stored]

    def _stored_at(self, seqs: Iterable[int]) -> list[StoredEntry | None]:
        by_seq = self.txn.cursor(db=self.dbs[b"by_seq"])
        entries = self.txn.cursor(db=self.dbs[b"entries"])
        out: list[StoredEntry | None] = []
        for seq in seqs:
            value = by_seq.get(u64(seq))
            raw = None if value is None else latest_at(entries, rank_entry_id(value), self.as_of)
            out.append(None if raw is None else _entry(raw))
        return out

    def rank_inputs(self, seqs: Iterable[int]) -> list[RankInputs | None]:
        """Ranking inputs of the entries recorded at ``seqs`` (None where gone or
        not shown), without reading any entry's content: now from the ``by_seq``
        values alone, as of a seq from the stored versions of that seq."""
        if self.as_of is not None:
            return [None if s is None or s.state not in SHOWN_STATES else
                    RankInputs(s.entry_id, s.kind, entry_importance(s), s.occurred_at)
                    for s in self._stored_at(seqs)]
        get = self.txn.cursor(db=self.dbs[b"by_seq"]).get
        out: list[RankInputs | None] = []
        for seq in seqs:
            value = get(u64(seq))
            out.append(None if value is None else RankInputs(*parse_rank_value(value)))
        return out

    # -- sessions, memories and the rest --------------------------------------

    def session(self, session_id: str) -> SessionView | None:
        """The session manifest current at ``as_of``."""
        raw = latest_version(self.txn, self.dbs[b"sessions"], session_id, self.as_of)
        return None if raw is None else _session(raw)

    def session_change_seqs(self, session_id: str) -> list[int]:
        """The seqs of the events that changed the session's manifest (started,
        updated, archived, restored, closed) up to ``as_of``: what erasing the
        session must erase besides its entries."""
        return [seq for seq, _ in all_versions(self.txn, self.dbs[b"sessions"], session_id)
                if self.as_of is None or seq <= self.as_of]

    def sessions(self) -> Iterator[SessionView]:
        """Every session known at ``as_of``, in id order."""
        cursor = self.txn.cursor(db=self.dbs[b"sessions"])
        last_id: bytes | None = None
        for key, _ in cursor.iternext():
            sid = bytes(key[:-9])
            if sid == last_id:
                continue
            last_id = sid
            view = self.session(sid.decode())
            if view is not None:
                yield view

    def archived_sessions(self) -> tuple[str, ...]:
        """Ids of the sessions archived at ``as_of`` (now: from a small index)."""
        if self.as_of is None:
            return tuple(bytes(k).decode() for k, _ in self.txn.cursor(db=self.dbs[b"archived"]))
        return tuple(s.session_id for s in self.sessions() if s.archived)

    def derived_from(self, parent_id: str) -> list[str]:
        """Ids of entries derived from ``parent_id``."""
        prefix = parent_id.encode() + SEP
        return [k[len(prefix):].decode() for k, _ in prefix_items(self.txn, self.dbs[b"derived"], prefix)]

    def memories(self, user_id: str, include_gone: bool = False) -> list[MemoryView]:
        """A user's memories at ``as_of`` (live ones unless ``include_gone``)."""
        prefix = user_id.encode() + SEP
        keys = {k[: -9] for k, _ in prefix_items(self.txn, self.dbs[b"memories"], prefix)}
        out = []
        for entity in sorted(keys):
            raw = latest_version(self.txn, self.dbs[b"memories"], entity.decode(), self.as_of)
            if raw is not None:
                view = _memory(raw)
                if include_gone or view.state == "live":
                    out.append(view)
        return out

    def memory_versions(self, user_id: str, key: str) -> list[MemoryView]:
        """Every stored version of one memory (each save keeps its seq and id)."""
        entity = f"{user_id}{SEP.decode()}{key}"
        return [_memory(raw) for _, raw in all_versions(self.txn, self.dbs[b"memories"], entity)]

    def memory_by_id(self, memory_id: str) -> MemoryView | None:
        """A memory by its id."""
        raw = self.txn.get(memory_id.encode(), db=self.dbs[b"memory_ids"])
        if raw is None:
            return None
        entity = bytes(raw).decode()
        versions = [_memory(v) for seq, v in all_versions(self.txn, self.dbs[b"memories"], entity)
                    if self.as_of is None or seq <= self.as_of]
        return memory_version(versions, memory_id)

    def access(self, entry_id: str) -> AccessView:
        """Access count and last access at ``as_of``."""
        raw = latest_version(self.txn, self.dbs[b"access"], entry_id, self.as_of)
        return AccessView() if raw is None else _access(raw)

    def any_access(self) -> bool:
        """False when no access was ever recorded (every :meth:`access` is empty)."""
        return bool(self.txn.stat(self.dbs[b"access"])["entries"])

    def decay_params(self) -> DecayParams:
        """Decay parameters in force at ``as_of``."""
        raw = latest_version(self.txn, self.dbs[b"params"], "decay", self.as_of)
        return DecayParams() if raw is None else _params(raw)

    def deletions(self) -> list[DeletionRecord]:
        """The deletion ledger, oldest request first."""
        records = [_deletion(bytes(v)) for _, v in self.txn.cursor(db=self.dbs[b"deletions"])]
        return sorted(records, key=lambda d: d.requested_seq)

    def counters(self) -> dict[str, int]:
        """Global counters: events, events by type (``type:T``), entries by kind
        (``kind:K``), and the last seq of each event type (``last:T``)."""
        return {bytes(k).decode(): unpack_u64(v) for k, v in self.txn.cursor(db=self.dbs[b"stats"])}

    def last_seq_of(self, types: Iterable[str]) -> int:
        """The seq of the last event of any of ``types`` the views applied (0: none)."""
        db = self.dbs[b"stats"]
        raws = (self.txn.get(f"last:{t}".encode(), db=db) for t in types)
        return max((unpack_u64(raw) for raw in raws if raw is not None), default=0)

    def skipped(self) -> list[Skipped]:
        """The events the views could not apply (seq, type, error class), oldest first."""
        return [_skipped(bytes(v)) for _, v in self.txn.cursor(db=self.dbs[b"skipped"])]

    # -- compaction and summaries --

    def summarised_by(self, entry_id: str) -> str | None:
        """The id of the summary that stands for the entry in the context (seed
        001's session summaries) as of ``as_of``; None when none does."""
        raw = latest_version(self.txn, self.dbs[b"summarised"], entry_id, self.as_of)
        return None if raw is None else str(msgspec.msgpack.decode(raw))

    def session_stored(self, session_id: str, kinds: tuple[str, ...] = ()) -> Iterator[StoredEntry]:
        """The stored (content-free) versions of a session's shown entries as of
        ``as_of``, in ``occurred_at`` order: what compaction ranks without
        reading any content."""
        return self._session_stored(session_id, kinds, False)

    # -- memory resources --

    def resource_spec(self, resource_id: str) -> ResourceSpec | None:
        """The spec a resource was last declared with (at ``as_of``), or None."""
        raw = latest_version(self.txn, self.dbs[b"resources"], spec_entity(resource_id), self.as_of)
        return None if raw is None else _resource_spec(raw)

    def resource_specs(self) -> list[ResourceSpec]:
        """Every declared resource's spec (at ``as_of``), by id."""
        ids = sorted({bytes(k)[5:].split(SEP)[0].decode()
                      for k, _ in prefix_items(self.txn, self.dbs[b"resources"], b"spec:")})
        return [s for rid in ids if (s := self.resource_spec(rid)) is not None]

    def resource_state(self, key: str) -> ResourceState | None:
        """A resource instance's items (ids, in order) at ``as_of``, or None."""
        raw = latest_version(self.txn, self.dbs[b"resources"], key_entity(key), self.as_of)
        return None if raw is None else _resource_state(raw)

    def resource_entry_ids(self, key: str) -> list[str]:
        """Every entry id a resource instance ever held (at ``as_of``), in first-seen order."""
        seen: dict[str, None] = {}
        for seq, raw in all_versions(self.txn, self.dbs[b"resources"], key_entity(key)):
            if self.as_of is None or seq <= self.as_of:
                seen.update((i.entry_id, None) for i in _resource_state(raw).items)
        return list(seen)

    def resource_activity(self) -> ResourceActivity:
        """The last flush and eviction across every resource, and their counts."""
        raw = latest_version(self.txn, self.dbs[b"resources"], ACTIVITY, self.as_of)
        return ResourceActivity() if raw is None else _resource_activity(raw)

    # -- upkeep --

    def checkpoints(self, user_id: str, agent_id: str | None = None) -> Iterator[CheckpointView]:
        """A user's checkpoints (of one agent, if given) at ``as_of``, newest first."""
        return _upkeep.checkpoints_of(self.txn, self.dbs, user_id, agent_id, self.as_of)

    def session_checkpoints(self, session_id: str) -> list[CheckpointView]:
        """A session's checkpoints (now), oldest first: erased with the session."""
        return _upkeep.session_checkpoints(self.txn, self.dbs, session_id)

    def lesson_scopes(self) -> list[tuple[str, str, int]]:
        """(user, agent, lessons) of every scope holding lessons (now; ``""``: none):
        one small index, no entry read."""
        return _upkeep.lesson_scopes(self.txn, self.dbs)

    def oldest_lessons(self, user_id: str, agent_id: str, count: int) -> list[str]:
        """The ids of a scope's ``count`` oldest lessons (now; by ``occurred_at``, then id)."""
        return _upkeep.oldest_lessons(self.txn, self.dbs, user_id, agent_id, count)

    def ephemeral_sessions(self) -> list[str]:
        """The ids of the ephemeral sessions (now)."""
        return _upkeep.ephemeral_ids(self.txn, self.dbs)

    # -- maintain --

    def resource_keys(self) -> list[str]:
        """Every resource instance's key that has a version at ``as_of``, in key
        order (one cursor seek per key, whatever its number of versions)."""
        out: list[str] = []
        with self.txn.cursor(self.dbs[b"resources"]) as cur:
            found = cur.set_range(b"key:")
            while found:
                raw = bytes(cur.key())
                if not raw.startswith(b"key:"):
                    break
                entity = raw[:-9]  # entity | SEP | seq(8)
                key = entity[4:].decode()
                if self.as_of is None or self.resource_state(key) is not None:
                    out.append(key)
                found = cur.set_range(entity + SEP + b"\xff" * 9)
        return out


    # -- formation --

    def scope_lessons(self, user_id: str | None, agent_id: str | None) -> list[tuple[str, int, int]]:
        """(entry id, word count, source seq) of every shown lesson of a scope
        (now; no content): dedup's candidates (:mod:`projections.views.formation`)."""
        prefix = scope_prefix(user_id, agent_id)
        return [(k[len(prefix):].decode(), unpack_u64(v[:8]), unpack_u64(v[8:16]))
                for k, v in prefix_items(self.txn, self.dbs[b"formation"], prefix)]

    def extracted_upto(self, session_id: str) -> int:
        """The last message seq extraction read in the session (0: never extracted)."""
        raw = self.txn.get(b"X" + session_id.encode(), db=self.dbs[b"formation"])
        return 0 if raw is None else unpack_u64(raw)

    def extraction_backlog(self) -> list[tuple[str, int]]:
        """(session id, messages not yet extracted) of every session that has
        some (now), in id order: one small index, no entry read."""
        return [(k[1:].decode(), unpack_u64(v))
                for k, v in prefix_items(self.txn, self.dbs[b"formation"], b"U")]

    def reinforcement(self, entry_id: str) -> Reinforcement:
        """How often (and when last) a lesson was reinforced, at ``as_of``."""
        raw = latest_version(self.txn, self.dbs[b"formation"], reinforcement_entity(entry_id), self.as_of)
        return Reinforcement() if raw is None else _reinforcement(raw)


_reinforcement = msgspec.msgpack.Decoder(Reinforcement).decode
_resource_spec = msgspec.msgpack.Decoder(ResourceSpec).decode
_resource_state = msgspec.msgpack.Decoder(ResourceState).decode
_resource_activity = msgspec.msgpack.Decoder(ResourceActivity).decode
