"""Memory resources in the views: pure reducers of the ``resource.*``
events and their application to the ``resources`` database.

A resource instance (one key) is one temporal entity, ``key:<key>``, holding
its items in order as ids (no content: the items are entries). Every
``resource.*`` event writes a new version, so as-of reads are lookups. Items
whose entries were deleted stay listed; readers skip them (a deletion never
touches this state, so a replay, which never sees erased payloads, builds the
same versions).
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventstore import (
    RecordedEvent,
    ResourceAppended,
    ResourceDeclared,
    ResourceEvicted,
    ResourceFlushed,
    ResourceReplaced,
    ResourceTrimmed,
)

from ..models import ResourceActivity, ResourceItem, ResourceState
from .keys import latest_version, version_key

__all__ = [
    "ACTIVITY",
    "ResourceEvent",
    "apply_resource",
    "key_entity",
    "resource_appended",
    "resource_flushed",
    "resource_removed",
    "spec_entity",
]

ACTIVITY = "activity"
ResourceEvent = (ResourceDeclared | ResourceAppended | ResourceFlushed | ResourceEvicted
                 | ResourceTrimmed | ResourceReplaced)

_enc = msgspec.msgpack.Encoder()
_state = msgspec.msgpack.Decoder(ResourceState).decode
_activity = msgspec.msgpack.Decoder(ResourceActivity).decode
replace = msgspec.structs.replace


def spec_entity(resource_id: str) -> str:
    """The entity of a resource's declared spec."""
    return f"spec:{resource_id}"


def key_entity(key: str) -> str:
    """The entity of a resource instance."""
    return f"key:{key}"


def resource_appended(prev: ResourceState | None, rec: RecordedEvent,
                      event: ResourceAppended) -> ResourceState:
    """The item joins the end of the resource (a repeated entry id is ignored)."""
    state = prev or ResourceState(event.resource_id, event.key)
    if any(i.entry_id == event.entry_id for i in state.items):
        return replace(state, changed_seq=rec.seq)
    item = ResourceItem(event.entry_id, event.block, rec.seq)
    return replace(state, items=(*state.items, item), changed_seq=rec.seq)


def resource_removed(prev: ResourceState | None, rec: RecordedEvent, resource_id: str, key: str,
                     removed: tuple[str, ...], evicted: bool = False) -> ResourceState:
    """The listed items leave the resource."""
    state = prev or ResourceState(resource_id, key)
    gone = set(removed)
    items = tuple(i for i in state.items if i.entry_id not in gone)
    return replace(state, items=items, changed_seq=rec.seq,
                   evictions=state.evictions + (1 if evicted else 0))


def resource_flushed(prev: ResourceState | None, rec: RecordedEvent,
                     event: ResourceFlushed) -> ResourceState:
    """The flushed items leave; the summary item takes the place of the first of them."""
    state = prev or ResourceState(event.resource_id, event.key)
    gone = set(event.removed_entry_ids)
    summary = ResourceItem(event.summary_entry_id, event.block, rec.seq)
    items: list[ResourceItem] = []
    placed = False
    for item in state.items:
        if item.entry_id in gone:
            if not placed:
                items.append(summary)
                placed = True
            continue
        if item.entry_id != event.summary_entry_id:
            items.append(item)
    if not placed:
        items.insert(0, summary)
    return replace(state, items=tuple(items), changed_seq=rec.seq, flushes=state.flushes + 1)


def activity(prev: ResourceActivity | None, rec: RecordedEvent, flushed: bool,
             evicted: int) -> ResourceActivity:
    """The last flush or eviction across every resource."""
    act = prev or ResourceActivity()
    if flushed:
        return replace(act, flushes=act.flushes + 1, last_flush_seq=rec.seq,
                       last_flush_at=rec.recorded_at)
    return replace(act, evictions=act.evictions + 1, evicted_items=act.evicted_items + evicted,
                   last_eviction_seq=rec.seq, last_eviction_at=rec.recorded_at)


def apply_resource(txn: Any, db: Any, rec: RecordedEvent, event: ResourceEvent) -> None:
    """Apply one ``resource.*`` event to the ``resources`` database."""
    if isinstance(event, ResourceDeclared):
        txn.put(version_key(spec_entity(event.spec.id), rec.seq), _enc.encode(event.spec), db=db)
        return
    entity = key_entity(event.key)
    raw = latest_version(txn, db, entity, None)
    prev = None if raw is None else _state(raw)
    if isinstance(event, ResourceAppended):
        new = resource_appended(prev, rec, event)
    elif isinstance(event, ResourceFlushed):
        new = resource_flushed(prev, rec, event)
    else:
        new = resource_removed(prev, rec, event.resource_id, event.key, event.removed_entry_ids,
                               evicted=isinstance(event, ResourceEvicted))
    txn.put(version_key(entity, rec.seq), _enc.encode(new), db=db)
    if isinstance(event, ResourceFlushed | ResourceEvicted):
        raw_act = latest_version(txn, db, ACTIVITY, None)
        act = activity(None if raw_act is None else _activity(raw_act), rec,
                       isinstance(event, ResourceFlushed), len(event.removed_entry_ids))
        txn.put(version_key(ACTIVITY, rec.seq), _enc.encode(act), db=db)
