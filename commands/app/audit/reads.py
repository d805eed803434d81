"""Point-in-time audit: what memlog knew at any moment, and who changed it.

- :class:`PointInTime` answers reads as of a seq from the temporal views and the
  seq intervals of the search index: a lookup, not a replay. Content erased
  since shows as deleted, with the tombstone, never the content.
- :func:`history` lists every event that touched an entity.
- :func:`filter_log` filters the raw log.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

from eventstore import (
    CheckpointMarked,
    DecayApplied,
    DeletionRequested,
    EntriesAccessed,
    EntriesDeleted,
    EntryEdited,
    EntryNotFoundError,
    EntryRecorded,
    EntryRedacted,
    EntryReinforced,
    EntryUpdated,
    InvalidInputError,
    MemoryForgotten,
    MemorySaved,
    PurgeCompleted,
    RecordedEvent,
    RedactionNote,
    SessionArchived,
    SessionClosed,
    SessionCompacted,
    SessionExtracted,
    SessionRestored,
    SessionStarted,
    SessionSummarised,
    SessionUpdated,
    SummaryResummarised,
    entry_texts,
    format_micros,
    parse_time,
)

from ..recall.context import build_context
from ..recall.scope import default_source, scoped_query
from ..recall.search import find, make_query
from ..recording import records
from ..results import ContextBlock, EntryResult, MemoryResult, SearchResult, SessionResult, absent_result
from ..sessions import lifecycle as sessions
from ..store.store import Store
from ..store.validate import check_id

__all__ = ["HistoryItem", "PointInTime", "filter_log", "history"]


_QUERY_OPTIONS = (frozenset(inspect.signature(make_query).parameters) - {"text", "include_archived", "scope"}
                  | {"agent_id"})


class PointInTime:
    """Read-only reads as of one seq: ``mem.as_of("2026-01-11T10:00:00Z")``."""

    def __init__(self, store: Store, seq: int) -> None:
        self.store = store
        self.seq = seq
        self.time = store.log.get(seq).recorded_at if seq > 0 else 0

    def show(self, item_id: str) -> EntryResult | MemoryResult:
        """An entry (live, redacted, compacted or deleted) or memory as it was.

        An id recorded after the point answers with state ``absent`` (DESIGN
        section 7); an id that never existed is an error.
        """
        try:
            return records.show(self.store, item_id, self.seq)
        except EntryNotFoundError:
            current = records.show(self.store, item_id)  # raises when the id never existed
        return absent_result(current)

    def session(self, session_id: str) -> SessionResult:
        """A session's manifest and statistics as they were."""
        return sessions.session(self.store, session_id, self.seq)

    def sessions(self, user_id: str | None = None) -> list[SessionResult]:
        """Sessions known at the point."""
        return sessions.sessions(self.store, user_id, archived=None, as_of=self.seq)

    def memories(self, user_id: str) -> list[MemoryResult]:
        """A user's memories as they were (erased ones never show)."""
        return records.memories(self.store, user_id, self.seq)

    def search(self, text: str = "", **filters: Any) -> list[SearchResult]:
        """Search as of the point: documents current then, decay computed at its time."""
        filters.pop("record_access", None)
        unknown = set(filters) - _QUERY_OPTIONS
        if unknown:
            raise InvalidInputError(f"unknown search options: {', '.join(sorted(unknown))}")
        user_id, agent_id = filters.pop("user_id", None), filters.pop("agent_id", None)
        filters["source"] = default_source(filters.get("source"), user_id)
        query = scoped_query(self.store, make_query(text, **filters), user_id, agent_id, self.seq)
        return find(self.store, query, self.seq, self.time)

    def context(self, session_id: str, query: str | None = None, budget_tokens: int | None = None,
                count_tokens: Callable[[str], int] | None = None) -> ContextBlock:
        """The context block as it would have been built at the point."""
        return build_context(self.store, session_id, query, budget_tokens, count_tokens, as_of=self.seq,
                             now=self.time)


class HistoryItem(msgspec.Struct, frozen=True):
    """One event in an entity's history (content only while it still exists)."""

    seq: int
    type: str
    recorded_at: str
    actor: str
    what: str
    reason: str | None = None
    request_id: str | None = None
    content: str | None = None
    occurred_at: str | None = None
    texts: tuple[str, ...] = ()  # every text of the entry then (eventstore.entry_texts), content first


def history(store: Store, item_id: str) -> list[HistoryItem]:
    """Every event that touched an entry, memory or session, oldest first.

    An event whose payload was erased since (an entry recorded then deleted or
    redacted, an earlier redaction erased by a later one) is still listed, from
    its header and from what later events kept of it (tombstone refs,
    redaction notes), without content.
    """
    iid = check_id(item_id, "id")
    items: list[HistoryItem] = []
    erased_by: dict[int, tuple[str, str | None]] = {}
    notes: dict[int, RedactionNote] = {}
    created = False
    requests: set[str] = set()
    for rec in store.log.read():
        item = _touch(rec, iid, erased_by, notes)
        if item is not None:
            created = created or item.type in ("entry.recorded", "memory.saved", "session.started")
            if item.request_id:
                requests.add(item.request_id)
            items.append(item)
        elif created and isinstance(rec.event, DecayApplied):
            items.append(_item(rec, "decay parameters changed"))
        elif isinstance(rec.event, PurgeCompleted) and requests & set(rec.event.request_ids):
            verified = "verified" if rec.event.verified else "NOT verified"
            items.append(_item(rec, f"purged from every file ({verified})"))
    seen = {i.seq for i in items}
    for seq in sorted(set(erased_by) | set(notes)):
        if seq in seen:
            continue
        header = store.log.get(seq).header
        when = format_micros(header.recorded_at)
        if (note := notes.get(seq)) is not None:
            items.append(HistoryItem(seq, header.type, when, header.actor,
                                     f"redacted: {dict(note.spans)} by {note.requested_by}; content erased",
                                     reason=note.reason))
        else:
            kind, request_id = erased_by[seq]
            kind = "edited" if header.type == "entry.edited" else kind
            items.append(HistoryItem(seq, header.type, when, header.actor, f"{kind}; content erased",
                                     request_id=request_id))
    items.extend(_supersession(store, iid))
    if not items:
        raise EntryNotFoundError(f"no event ever touched {iid}")
    return sorted(items, key=lambda i: i.seq)


def _supersession(store: Store, iid: str) -> list[HistoryItem]:
    """The record that superseded a keyed item (a preference set again, a
    memory saved again under its key), when one did."""
    with store.read() as views:
        stored = views.stored_entry(iid)
        memory = None if stored is not None else views.memory_by_id(iid)
    info = stored.superseded if stored is not None else memory.superseded if memory is not None else None
    if info is None:
        return []
    header = store.log.get(info.seq).header
    return [HistoryItem(info.seq, header.type, format_micros(header.recorded_at), header.actor,
                        f"superseded by {info.by}")]


def _item(rec: RecordedEvent, what: str, **extra: Any) -> HistoryItem:
    return HistoryItem(rec.seq, rec.type, format_micros(rec.recorded_at), rec.actor, what, **extra)


def _touch(rec: RecordedEvent, iid: str, erased_by: dict[int, tuple[str, str | None]],
           notes: dict[int, RedactionNote]) -> HistoryItem | None:
    event = rec.event
    match event:
        case EntryRecorded() if event.entry_id == iid:
            return _item(rec, f"{event.kind} recorded", content=event.content,
                         occurred_at=format_micros(event.occurred_at), texts=tuple(entry_texts(event)))
        case EntryUpdated() if event.entry_id == iid:
            changes = {k: v for k, v in msgspec.to_builtins(event.changes).items() if v is not None}
            return _item(rec, f"updated: {changes}")
        case EntryEdited() if event.entry_id == iid:
            return _item(rec, "edited", content=event.content)
        case EntriesAccessed() if iid in event.entry_ids:
            return _item(rec, "returned by a search (access count +1)")
        case EntryRedacted() if event.entry_id == iid:
            for seq in rec.header.erases:
                erased_by.setdefault(seq, ("entry.recorded" if seq == event.target_seq else "redacted", None))
            notes.update((note.seq, note) for note in event.prior)
            after = event.redacted
            return _item(rec, f"redacted: {dict(event.spans)} by {event.requested_by}", reason=event.reason,
                         content=after.content if after else None,
                         texts=tuple(entry_texts(after)) if after else ())
        case EntriesDeleted() if iid in event.entry_ids:
            for ref in event.refs:
                if ref.entry_id == iid:
                    erased_by[ref.recorded_seq] = (f"{ref.kind} recorded", event.request_id)
            return _item(rec, "deleted (tombstone)", request_id=event.request_id)
        case DeletionRequested() if iid in event.criteria.ids or iid in (event.criteria.session_id,
                                                                         event.criteria.user_id):
            return _item(rec, f"deletion requested by {event.requested_by}", reason=event.reason,
                         request_id=event.request_id)
        case SessionCompacted() if iid in event.removed_entry_ids or iid == event.session_id:
            return _item(rec, f"compacted into summary {event.summary_entry_id}")
        case MemorySaved() if iid in (event.memory_id, f"{event.user_id}:{event.key}"):
            return _item(rec, f"memory {event.key} saved for {event.user_id}", content=event.content)
        case MemoryForgotten() if iid in (event.memory_id, f"{event.user_id}:{event.key}"):
            return _item(rec, f"memory {event.key} forgotten")
        case SessionStarted() | SessionUpdated() | SessionArchived() | SessionRestored() | SessionClosed() \
                if event.session_id == iid:
            return _item(rec, rec.type.split(".")[1])
        case _:
            return _touch_lifecycle(rec, iid)
    return None


def _touch_lifecycle(rec: RecordedEvent, iid: str) -> HistoryItem | None:
    """What a life-cycle event says of ``iid``, or None."""
    event = rec.event
    match event:
        # compaction and summaries
        case SessionCompacted() if iid == event.summary_entry_id:
            return _item(rec, f"holds {len(event.removed_entry_ids)} entries compacted out of session "
                              f"{event.session_id} ({event.bytes_before} -> {event.bytes_after} bytes)")
        case SessionSummarised() if iid in (event.session_id, event.summary_entry_id) \
                or iid in event.summarised_entry_ids:
            return _item(rec, f"{len(event.summarised_entry_ids)} messages summarised into "
                              f"{event.summary_entry_id} ({event.tokens_before} -> "
                              f"{event.tokens_after} tokens)")
        case SummaryResummarised() if iid in (event.summary_entry_id, event.replaced_entry_id,
                                              event.session_id) or iid in event.source_entry_ids:
            return _item(rec, f"summary {event.replaced_entry_id} written again as {event.summary_entry_id} "
                              f"from {len(event.source_entry_ids)} remaining sources",
                         request_id=event.request_id)
        # formation
        case EntryReinforced() if iid in (event.entry_id, event.by_entry_id):
            return _item(rec, f"reinforced by {event.by_entry_id} (similarity {event.similarity:.2f}; "
                              "access count +1)")
        case SessionExtracted() if iid == event.session_id or iid in event.entry_ids:
            return _item(rec, f"{len(event.entry_ids)} entries extracted from {event.messages} messages "
                              f"of session {event.session_id} (up to seq {event.upto_seq})")
        # upkeep
        case CheckpointMarked() if iid in (event.session_id, event.checkpoint_id):
            return _item(rec, f"checkpoint {event.checkpoint_id} marked")
        case _:
            return None
    return None


def filter_log(store: Store, since: str | None = None, until: str | None = None,
               stream: str | None = None, type_: str | None = None, actor: str | None = None,
               limit: int = 100) -> Iterator[dict[str, Any]]:
    """Raw log records (headers; no content) matching the filters, oldest first."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError("limit must be a positive integer")
    start = store.log.seq_at(parse_time(since)) + 1 if since else 1
    stop = store.log.seq_at(parse_time(until)) if until else None
    records: Iterable[RecordedEvent] = store.log.read(start, stop) if stream is None \
        else store.log.read_stream(check_id(stream, "stream"))
    shown = 0
    for rec in records:
        if (type_ and rec.type != type_) or (actor and rec.actor != actor) or rec.seq < start \
                or (stop is not None and rec.seq > stop):
            continue
        yield {"seq": rec.seq, "type": rec.type, "stream": rec.stream, "version": rec.version,
               "id": rec.id, "recorded_at": format_micros(rec.recorded_at), "actor": rec.actor,
               "erased": rec.event is None, "erases": list(rec.header.erases)}
        shown += 1
        if shown >= limit:
            return

