"""Reads of LangGraph items out of memlog's views (now or as of a seq).

Order (what ``InMemoryStore`` does, its namespaces by arrival): namespaces by
the first save of their anchor, then items by the first save of their key
still current (a new save keeps the item's place; a delete and a new put
move it last). A query puts the items memlog's search ranks first, best
first, with their score; the other candidates follow in that order, score
None (a query reorders, it never hides an item: the vector stores of
LangGraph rank every item too). What the search matches is the item's search
text (:mod:`.documents`): its indexed fields only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from langgraph.store.base import Item, SearchItem, SearchOp

from projections import MemoryView, ViewReader

from .documents import (
    ITEM_PREFIX,
    NAMESPACE_PREFIX,
    SEARCH_PREFIX,
    Namespace,
    Stored,
    decode_anchor,
    decode_item,
    item_key,
    namespace_key,
    search_key,
)
from .matching import matches_filter

__all__ = ["Ranker", "Snapshot", "anchor_id", "candidates", "load", "lookup", "page", "search", "to_item"]

# query -> [(memory id, score)], best first
Ranker = Callable[[str], list[tuple[str, float]]]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Snapshot:
    """A user's live items and namespace anchors at one point."""

    items: dict[tuple[Namespace, str], Stored] = field(default_factory=dict)
    anchors: dict[Namespace, tuple[int, str]] = field(default_factory=dict)  # ns -> (first seq, memory id)
    searches: dict[str, str] = field(default_factory=dict)  # search text's key -> its memory id

    def ordered(self) -> list[Stored]:
        """The items in store order."""
        last = 1 << 62

        def place(item: Stored) -> tuple[int, int]:
            return self.anchors.get(item.namespace, (last, ""))[0], item.created_seq
        return sorted(self.items.values(), key=place)

    def namespaces(self) -> set[Namespace]:
        """The namespaces holding at least one item."""
        return {ns for ns, _ in self.items}


def _versions(views: ViewReader, user_id: str, key: str, as_of: int | None) -> list[MemoryView]:
    return [v for v in views.memory_versions(user_id, key) if as_of is None or v.saved_seq <= as_of]


def _first_save(versions: list[MemoryView]) -> MemoryView:
    """The first save of the current life: after the last version a forget ended
    (a purge drops those; one that waits or failed leaves them)."""
    ended = [i for i, v in enumerate(versions) if v.state != "live"]
    start = ended[-1] + 1 if ended else 0
    return versions[start] if start < len(versions) else versions[-1]


def _stored(views: ViewReader, user_id: str, view: MemoryView, as_of: int | None) -> Stored | None:
    decoded = decode_item(view.content) if view.state == "live" else None
    if decoded is None or view.key != item_key(decoded[0], decoded[1]):
        return None  # not an item this module wrote (a memory that only looks like one)
    first = _first_save(_versions(views, user_id, view.key, as_of))
    namespace, key, value, index = decoded
    return Stored(namespace, key, value, index, view.memory_id, first.saved_seq, first.saved_at,
                  view.saved_at)


def load(views: ViewReader, user_id: str, as_of: int | None) -> Snapshot:
    """Every live item and anchor of a user (as of a seq, if given)."""
    snap = Snapshot()
    for view in views.memories(user_id):
        if view.key.startswith(ITEM_PREFIX):
            item = _stored(views, user_id, view, as_of)
            if item is not None:
                snap.items[item.namespace, item.key] = item
        elif view.key.startswith(NAMESPACE_PREFIX):
            namespace = decode_anchor(view.content)
            if namespace is not None and view.key == namespace_key(namespace):
                first = _first_save(_versions(views, user_id, view.key, as_of))
                snap.anchors[namespace] = (first.saved_seq, view.memory_id)
        elif view.key.startswith(SEARCH_PREFIX):
            snap.searches[view.key] = view.memory_id
    return snap


def lookup(views: ViewReader, user_id: str, as_of: int | None, namespace: Namespace,
           key: str) -> Stored | None:
    """One live item by namespace and key, without reading the others."""
    versions = _versions(views, user_id, item_key(namespace, key), as_of)
    if not versions:
        return None
    item = _stored(views, user_id, versions[-1], as_of)
    return item if item is not None and (item.namespace, item.key) == (namespace, key) else None


def anchor_id(views: ViewReader, user_id: str, namespace: Namespace) -> str | None:
    """The memory id of the namespace's live anchor, if any."""
    versions = views.memory_versions(user_id, namespace_key(namespace))
    return versions[-1].memory_id if versions and versions[-1].state == "live" else None


def _time(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def to_item(item: Stored) -> Item:
    """A LangGraph Item (times from the memory events)."""
    return Item(value=item.value, key=item.key, namespace=item.namespace,
                created_at=_time(item.created_at), updated_at=_time(item.updated_at))


def _search_item(item: Stored, score: float | None) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, _time(item.created_at),
                      _time(item.updated_at), score)


def _ranked(snapshot: Snapshot, candidates: list[Stored], query: str,
            rank: Ranker) -> list[tuple[Stored, float | None]]:
    """The candidates whose search text the query finds (not ``index=False``),
    best first with their score, then the others in order, score None."""
    by_search = {snapshot.searches.get(search_key(item.namespace, item.key)): item for item in candidates
                 if item.index is not None}
    first: list[tuple[Stored, float | None]] = []
    for memory_id, score in rank(query):
        item = by_search.pop(memory_id, None)
        if item is not None:
            first.append((item, score))
    taken = {id(item) for item, _ in first}
    return first + [(item, None) for item in candidates if id(item) not in taken]


def candidates(snapshot: Snapshot, op: SearchOp) -> list[Stored]:
    """The items under the op's namespace prefix that pass its filter, in store order."""
    prefix = tuple(op.namespace_prefix)  # a list is accepted too, as LangGraph's stores do
    n = len(prefix)
    return [item for item in snapshot.ordered()
            if item.namespace[:n] == prefix and matches_filter(item.value, op.filter)]


def page(scored: list[tuple[Stored, float | None]], op: SearchOp) -> list[SearchItem]:
    """The op's page (offset and limit) of ranked items."""
    return [_search_item(item, score) for item, score in scored[op.offset: op.offset + op.limit]]


def search(snapshot: Snapshot, op: SearchOp, rank: Ranker | None) -> list[SearchItem]:
    """A search op's page: namespace prefix, filter, query ranking, offset and limit."""
    found = candidates(snapshot, op)
    if op.query and rank is not None:
        return page(_ranked(snapshot, found, op.query, rank), op)
    return page([(item, None) for item in found], op)
