"""A resource instance's handle: append, read in order, length, tokens, trim,
replace, expire and delete.

Every item is an ``entry.recorded`` (kind ``message``; a flush's summary is
kind ``summary`` with ``derived_from``) carrying the key's user and agent ids,
the tags ``resource:<id>`` and ``block:<name>``, and the key's session id as
the message's ``conversation_id``. Each change is one append to the stream
``resource:<key>``: the entries and the ``resource.*`` events that place them
(appended, flushed, evicted, trimmed, replaced), so a change lands whole or
not at all.

The checks on append (TTL, flush, eviction) need the items' tokens; the handle
keeps them from its own appends and reads the views again only when another
writer moved the stream (as the writer caches a session's liveness).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from eventstore import (
    ROLES,
    ConcurrencyError,
    EntryRecorded,
    Event,
    InvalidInputError,
    MessageDetails,
    ResourceAppended,
    ResourceEvicted,
    ResourceFlushed,
    ResourceReplaced,
    ResourceSpec,
    ResourceTrimmed,
    now_micros,
)

from .. import log as _log
from ..forgetting.requests import delete as _delete
from ..resources.policy import Item, expired, plan_evictions, plan_flush, total
from ..resources.reading import (
    ResourceMessage,
    find_spec,
    live_items,
    stored_key,
    to_item,
    to_message,
    token_count,
)
from ..resources.spec import blocks_of, default_block, stream_of
from ..results import DeletionReport
from ..store.store import Store
from ..store.validate import check_choice, check_id
from ..store.writer import SYSTEM_STREAM
from .summariser import ExtractiveSummariser, Summariser, check_summary

__all__ = ["ResourceHandle"]

_RETRIES = 5


class ResourceHandle:
    """One resource instance: ``mem.resource("chat", user_id="alice", session_id=sid)``."""

    def __init__(self, store: Store, resource_id: str, *, user_id: str | None = None,
                 session_id: str | None = None, agent_id: str | None = None,
                 summariser: Summariser | None = None) -> None:
        self.store = store
        self.user_id = None if user_id is None else check_id(user_id, "user id")
        self.session_id = None if session_id is None else check_id(session_id, "session id")
        self.agent_id = None if agent_id is None else check_id(agent_id, "agent id")
        values = {"user_id": self.user_id, "session_id": self.session_id, "agent_id": self.agent_id}
        with store.read() as views:
            self.spec: ResourceSpec = find_spec(store.settings.resources, views, resource_id)
            self.key = stored_key(views, self.spec, values, store.alias)
        self.stream = stream_of(self.key)
        self.summariser = summariser
        self._blocks = {b.name for b in blocks_of(self.spec)}
        # ((resource stream version, system stream version), items)
        self._cache: tuple[tuple[int, int], list[Item]] | None = None

    @classmethod
    def at_key(cls, store: Store, spec: ResourceSpec, key: str,
               summariser: Summariser | None = None) -> ResourceHandle:
        """The handle of the instance stored under ``key`` (as ``resource_keys`` lists it)."""
        handle = cls.__new__(cls)
        handle.store, handle.spec, handle.key, handle.summariser = store, spec, key, summariser
        handle.user_id = handle.session_id = handle.agent_id = None
        with store.read() as views:  # the key's ids, as its items carry them
            for _, view in live_items(views, key, spec, None)[:1]:
                assert view.entry is not None
                handle.user_id, handle.agent_id = view.entry.user_id, view.entry.agent_id
        handle.stream = stream_of(key)
        handle._blocks = {b.name for b in blocks_of(spec)}
        handle._cache = None
        return handle

    @property
    def id(self) -> str:
        """The resource's id."""
        return self.spec.id

    # -- reads --------------------------------------------------------------

    def read(self, *, as_of: int | None = None, block: str | None = None) -> list[ResourceMessage]:
        """The items in order, oldest first (live entries only, none past the TTL)."""
        with self.store.read(as_of) as views:
            found = live_items(views, self.key, self.spec, now_micros() if as_of is None else None)
        return [to_message(i, v) for i, v in found if block is None or i.block == block]

    def length(self) -> int:
        """How many items the resource holds."""
        return len(self.read())

    def tokens(self) -> int:
        """The items' tokens (characters / 4, rounded up, as the context builder counts)."""
        return sum(m.tokens for m in self.read())

    # -- writes -------------------------------------------------------------

    def append(self, content: str, *, role: str = "user", block: str | None = None) -> str:
        """Append one item; then expire, flush and evict as the spec says. Returns the item's id."""
        where = self._block(block)
        entry = self._entry(content, role, where)

        def decide(items: list[Item]) -> list[Event]:
            item = Item(entry.entry_id, where, token_count(entry.content), entry.occurred_at)
            pending = {entry.entry_id: entry.content}  # not in the views yet: a flush may fold it
            return [entry, self._appended(entry.entry_id, where), *self._maintain([*items, item], pending)]

        self._write(decide)
        _log.info("resource item appended", resource_id=self.spec.id, entry_id=entry.entry_id)
        return entry.entry_id

    def trim(self, *, items: int | None = None, tokens: int | None = None) -> int:
        """Keep only the newest ``items`` items, or the newest items within ``tokens``;
        returns how many left."""
        if (items is None) == (tokens is None):
            raise InvalidInputError("trim to a number of items or of tokens (one of them)")
        limit = items if items is not None else tokens
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError("trim's limit must be an integer >= 0")
        removed: list[str] = []

        def decide(current: list[Item]) -> list[Event]:
            keep = _newest(current, items, tokens)
            removed[:] = [i.entry_id for i in current if i.entry_id not in keep]
            if not removed:
                return []
            after = total([i for i in current if i.entry_id in keep])
            return [ResourceTrimmed(self.spec.id, self.key, tuple(removed), total(current), after)]

        self._write(decide)
        return len(removed)

    def replace(self, messages: Iterable[str | Mapping[str, Any]]) -> list[str]:
        """Replace every item by ``messages`` (texts, or mappings with ``content``,
        ``role`` and ``block``); then flush and evict as the spec says. Returns the new ids."""
        new = [self._new_item(m) for m in messages]

        def decide(current: list[Item]) -> list[Event]:
            events: list[Event] = [ResourceReplaced(self.spec.id, self.key,
                                                    tuple(i.entry_id for i in current))]
            items = []
            for entry, where in new:
                events += [entry, self._appended(entry.entry_id, where)]
                items.append(Item(entry.entry_id, where, token_count(entry.content), entry.occurred_at))
            return events + self._maintain(items, {entry.entry_id: entry.content for entry, _ in new})

        self._write(decide)
        return [entry.entry_id for entry, _ in new]

    def expire(self) -> int:
        """Evict the items past the TTL now (``resource.evicted``, reason ``ttl``); returns how many."""
        removed: list[str] = []

        def decide(current: list[Item]) -> list[Event]:
            removed[:] = expired(current, self.spec, now_micros())
            if not removed:
                return []
            left = [i for i in current if i.entry_id not in removed]
            return [ResourceEvicted(self.spec.id, self.key, tuple(removed), "ttl", total(current),
                                    total(left))]

        self._write(decide)
        return len(removed)

    def tidy(self, actor: str | None = None) -> int:
        """Evict what is past the TTL, then flush and evict as the items call for now
        (``memlog maintain``); returns how many events were written."""
        written: list[Event] = []

        def decide(current: list[Item]) -> list[Event]:
            written[:] = self._maintain(current, {})
            return list(written)

        self._write(decide, actor)
        return len(written)

    def delete(self, *, reason: str, requested_by: str) -> DeletionReport:
        """Erase every entry the resource ever held (items, evicted items and
        summaries) through the deletion pipeline, purge included."""
        with self.store.read() as views:
            ids = views.resource_entry_ids(self.key)
        if not ids:
            raise InvalidInputError(f"resource {self.spec.id} holds nothing under this key")
        report = _delete(self.store, ids=ids, reason=reason, requested_by=requested_by)
        self._cache = None
        return report

    # -- plumbing -------------------------------------------------------------

    def _write(self, decide: Any, actor: str | None = None) -> None:
        """Append what ``decide(items)`` returns to the resource's stream (nothing
        when it returns nothing), expecting the stream's version; decide again on a race."""
        if self.store.writer.batching:
            raise InvalidInputError("resource writes do not run inside batch()")
        for attempt in range(_RETRIES):
            stamp = self._stamp()
            items = self._items(stamp)
            events: list[Event] = decide(items)
            if not events:
                return
            try:
                result = self.store.log.append(self.stream, events, actor=actor or self.store.writer.actor,
                                               expected_version=stamp[0])
            except ConcurrencyError:
                if attempt == _RETRIES - 1:
                    raise
                continue
            self.store.writer.last_seq = result.last_seq
            self._cache = ((result.version, stamp[1]), _after(items, events))
            return

    def _stamp(self) -> tuple[int, int]:
        """The versions of the resource's stream and of the system stream (deletions)."""
        return self.store.log.stream_version(self.stream), self.store.log.stream_version(SYSTEM_STREAM)

    def _items(self, stamp: tuple[int, int]) -> list[Item]:
        """The items with their tokens, from the cache while neither stream has moved."""
        if self._cache is not None and self._cache[0] == stamp:
            return list(self._cache[1])
        with self.store.read() as views:
            found = [to_item(i, v) for i, v in live_items(views, self.key, self.spec, None)]
        self._cache = (stamp, found)
        return list(found)

    def _maintain(self, items: list[Item], pending: Mapping[str, str]) -> list[Event]:
        """The TTL evictions, the flush and the evictions ``items`` call for
        (``pending``: the texts of the items this very append records)."""
        events: list[Event] = []
        gone = expired(items, self.spec, now_micros())
        if gone:
            left = [i for i in items if i.entry_id not in gone]
            events.append(ResourceEvicted(self.spec.id, self.key, gone, "ttl", total(items), total(left)))
            items = left
        flush = plan_flush(items, self.spec)
        texts = [] if flush is None else self._texts(flush[1], pending)
        if flush is not None and texts:
            flushed, items = self._flush(items, *flush, texts)
            events += flushed
        for removal in plan_evictions(items, self.spec):
            left = [i for i in items if i.entry_id not in removal.entry_ids]
            events.append(ResourceEvicted(self.spec.id, self.key, removal.entry_ids, removal.reason,
                                          total(items), total(left)))
            items = left
        return events

    def _flush(self, items: list[Item], block: str, ids: tuple[str, ...],
               texts: list[str]) -> tuple[list[Event], list[Item]]:
        """Fold ``ids`` (their ``texts``) into one summary item placed where the first of them was."""
        folded = sum(i.tokens for i in items if i.entry_id in ids)
        summarise = _sized(self.summariser, max(80, folded * 4 // 3))
        text = check_summary(summarise(texts))
        summary = self.store.entries.build(
            "summary", text, user_id=self.user_id, agent_id=self.agent_id, derived_from=ids,
            tags=self._tags(block))
        item = Item(summary.entry_id, block, token_count(summary.content), summary.occurred_at)
        before = total(items)
        left: list[Item] = []
        for i in items:
            if i.entry_id in ids:
                if item not in left:
                    left.append(item)
                continue
            left.append(i)
        event = ResourceFlushed(self.spec.id, self.key, block, ids, summary.entry_id, before, total(left))
        _log.info("resource flushed", resource_id=self.spec.id, items=len(ids))
        return [summary, event], left

    def _texts(self, ids: Sequence[str], pending: Mapping[str, str]) -> list[str]:
        """The texts of ``ids`` in order: from the views, or from this append's own items."""
        with self.store.read() as views:
            found = dict(zip(ids, views.entries(ids), strict=True))
        texts = []
        for eid in ids:
            view = found[eid]
            if eid in pending:
                texts.append(pending[eid])
            elif view is not None and view.entry is not None:
                texts.append(view.entry.content)
        return texts

    def _block(self, block: str | None) -> str:
        name = default_block(self.spec) if block is None else block
        if name not in self._blocks:
            raise InvalidInputError(f"resource {self.spec.id} has no block {name}")
        return name

    def _tags(self, block: str) -> tuple[str, ...]:
        return (f"resource:{self.spec.id}", f"block:{block}")

    def _entry(self, content: object, role: object, block: str | None = None) -> EntryRecorded:
        where = self._block(block)
        details = None if self.session_id is None else MessageDetails(conversation_id=self.session_id)
        return self.store.entries.build(
            "message", content, user_id=self.user_id, agent_id=self.agent_id,
            role=check_choice(role, "role", ROLES), tags=self._tags(where), details=details)

    def _new_item(self, message: str | Mapping[str, Any]) -> tuple[EntryRecorded, str]:
        if isinstance(message, str):
            return self._entry(message, "user"), self._block(None)
        if not isinstance(message, Mapping):
            raise InvalidInputError("a message is a text or a mapping with content, role and block")
        block = self._block(message.get("block"))
        return self._entry(message.get("content"), message.get("role", "user"), block), block

    def _appended(self, entry_id: str, block: str) -> ResourceAppended:
        return ResourceAppended(self.spec.id, self.key, entry_id, block)


def _sized(summariser: Summariser | None, limit: int) -> Summariser:
    """The summariser of a flush: a plugged one as it is; the extractive default
    (none given, or an ExtractiveSummariser) kept within ``limit`` characters,
    a third of what it folds."""
    if summariser is None:
        return ExtractiveSummariser(max_chars=limit)
    if isinstance(summariser, ExtractiveSummariser):
        return ExtractiveSummariser(max_chars=min(limit, summariser.max_chars),
                                    max_sentences=summariser.max_sentences)
    return summariser


def _newest(items: list[Item], count: int | None, tokens: int | None) -> set[str]:
    """Ids of the newest items within ``count`` items or ``tokens`` tokens."""
    keep: set[str] = set()
    used = 0
    for item in reversed(items):
        if count is not None and len(keep) >= count:
            break
        if tokens is not None and used + item.tokens > tokens:
            break
        keep.add(item.entry_id)
        used += item.tokens
    return keep


def _after(items: list[Item], events: list[Event]) -> list[Item]:
    """The items once ``events`` applied (as the views will apply them)."""
    out = list(items)
    entries = {e.entry_id: e for e in events if isinstance(e, EntryRecorded)}
    for event in events:
        if isinstance(event, ResourceAppended):
            e = entries[event.entry_id]
            out.append(Item(e.entry_id, event.block, token_count(e.content), e.occurred_at))
        elif isinstance(event, ResourceFlushed):
            e = entries[event.summary_entry_id]
            summary = Item(e.entry_id, event.block, token_count(e.content), e.occurred_at)
            first = next(n for n, i in enumerate(out) if i.entry_id in event.removed_entry_ids)
            out = [i for i in out if i.entry_id not in event.removed_entry_ids]
            out.insert(first, summary)
        elif isinstance(event, ResourceEvicted | ResourceTrimmed | ResourceReplaced):
            gone = set(event.removed_entry_ids)
            out = [i for i in out if i.entry_id not in gone]
    return out
