"""``MemlogStore``: LangGraph's ``BaseStore`` on a memlog store directory.

Every item of one ``MemlogStore`` object is a memory of one memlog user
(``user_id=``, default ``"langgraph"``): a put is a ``memory.saved``, a
delete runs memlog's deletion pipeline as ``mem.forget`` does (a request, a
tombstone and a purge that erases every saved version from the log, the views and the
search index). :mod:`.documents` tells how an item is held, :mod:`.reading`
how reads order and rank, :mod:`.matching` the filter rules.

A batch reads first, against the state before the batch (as
``InMemoryStore`` does), then applies its puts: one ``PutOp`` per
``(namespace, key)``, the last one given, in the order each pair first
appears. The saves land in one transaction; the deletes then run as one
deletion request (one purge).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchOp,
    ensure_embeddings,
    validate_op_namespace,
)

from eventstore import InvalidInputError, MemoryNotFoundError, MemorySaved, ReadOnlyError
from projections import Embedder

from ..app import DeletionReport, HistoryItem
from ..app.store.entries import new_id
from ..app.store.validate import check_content, check_id
from ..memory import MemoryLog
from .batching import Coalescer
from .documents import (
    NOT_INDEXED,
    Namespace,
    encode_anchor,
    encode_item,
    has_words,
    index_text,
    item_key,
    namespace_key,
    redact_value,
    search_key,
)
from .embedding import IndexEmbedder
from .matching import list_namespaces
from .reading import Ranker, Snapshot, anchor_id, candidates, load, lookup, page, search, to_item
from .vectors import FieldVectors, field_texts

__all__ = ["DEFAULT_USER", "MemlogStore", "MemlogStoreAsOf"]

DEFAULT_USER = "langgraph"
DELETE_REASON = "deleted through LangGraph"
SEARCH_MODES = ("text", "semantic", "hybrid")
_RANK_LIMIT = 1000  # memlog's search returns at most this many hits
# One lock per open memlog: the store objects on it (one per user) take turns.
_LOCKS: weakref.WeakKeyDictionary[MemoryLog, threading.RLock] = weakref.WeakKeyDictionary()


# The per-field vectors of one open memlog, by user and model: the store objects of
# one user (for_user in every graph run) share them, so an item is embedded once.
_VECTORS: weakref.WeakKeyDictionary[MemoryLog, dict[tuple[str, int], FieldVectors]] = (
    weakref.WeakKeyDictionary())


def _lock_of(mem: MemoryLog) -> threading.RLock:
    return _LOCKS.setdefault(mem, threading.RLock())


def _vectors_of(mem: MemoryLog, user_id: str, embed: object, embeddings: Embeddings) -> FieldVectors:
    with _lock_of(mem):
        held = _VECTORS.setdefault(mem, {})
        return held.setdefault((user_id, id(embed)), FieldVectors(embeddings))


def _fields(index: IndexConfig | None) -> list[str]:
    """The paths an item is indexed on by default (``fields``, or ``text_fields``)."""
    config: dict[str, Any] = dict(index or {})
    fields = config.get("fields") or config.get("text_fields") or ["$"]
    return [fields] if isinstance(fields, str) else list(fields)


def _check_ops(ops: Iterable[Op]) -> list[Op]:
    checked = list(ops)
    for op in checked:
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise ValueError(f"Unknown operation type: {type(op)}")
        validate_op_namespace(op)
        # put() refuses a "langgraph" root too; a batch lets it through, as LangGraph's stores do
        if isinstance(op, PutOp) and op.value is not None and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
    return checked


class _Reader:
    """The read half shared by the store and its as-of views."""

    mem: MemoryLog
    user_id: str
    search_mode: str | None
    vectors: FieldVectors | None

    def _seq(self) -> int | None:
        return None

    def _rank(self, query: str) -> list[tuple[str, float]]:
        hits = self.mem.search(query, user_id=self.user_id, source="memories", mode=self.search_mode,
                               limit=_RANK_LIMIT, record_access=False)
        return [(hit.id, hit.score) for hit in hits]

    def _read(self, ops: Sequence[Op]) -> list[Result]:
        """The results of the reads (None for the puts), against one snapshot."""
        queries = [op.query for op in ops if isinstance(op, SearchOp) and op.query]
        vectors = self.vectors
        query_vectors = vectors.query_vectors(queries) if vectors is not None else {}
        ranked = {} if vectors is not None else {q: self._rank(q) if has_words(q) else [] for q in queries}
        rank: Ranker = ranked.__getitem__
        results: list[Result] = []
        snapshot: Snapshot | None = None
        with self.mem.store.read(self._seq()) as views:
            for op in ops:
                if isinstance(op, GetOp):
                    found = lookup(views, self.user_id, self._seq(), op.namespace, op.key)
                    results.append(None if found is None else to_item(found))
                    continue
                if isinstance(op, PutOp):
                    results.append(None)
                    continue
                snapshot = snapshot or load(views, self.user_id, self._seq())
                if isinstance(op, SearchOp) and vectors is not None and op.query:
                    results.append(page(vectors.rank(candidates(snapshot, op), query_vectors[op.query]), op))
                elif isinstance(op, SearchOp):
                    results.append(search(snapshot, op, rank))
                else:
                    results.append(list_namespaces(snapshot.namespaces(), op))
        return results


class MemlogStore(_Reader, BaseStore):
    """A LangGraph store whose items are memlog memories of one user.

    ``path``: a store directory (opened like ``MemoryLog.open(path)``, keyword
    ``overrides`` are its settings) or an open :class:`~commands.MemoryLog`
    (then closing this store leaves it open). ``index``: LangGraph's
    ``IndexConfig``; its ``fields`` (default ``["$"]``, the whole value;
    ``text_fields``, the sqlite store's spelling, is read too) say what a
    query is matched against. With an ``embed``, a query ranks as LangGraph's
    stores rank it, by the cosine of the query's vector with the item's
    per-field vectors, and that cosine is the score (:mod:`.vectors`); the
    ``embed`` and ``dims`` also become the memlog's embedder
    (:class:`.embedding.IndexEmbedder`) unless ``embedder`` is given (or
    ``path`` is an open memlog, whose embedder stays). Without one, memlog
    ranks with its own search: text, or hybrid when an embedder is
    installed. ``search_mode`` forces memlog's search, in that mode.
    ``index_config`` and ``embeddings`` are the attributes LangGraph's stores
    have (None without an index, or without an ``embed``).
    """

    supports_ttl: bool = False

    def __init__(self, path: str | os.PathLike[str] | MemoryLog = ".memlog", *,
                 user_id: str = DEFAULT_USER, index: IndexConfig | None = None,
                 search_mode: str | None = None,
                 embedder: Embedder | Literal["default"] | None = "default", **overrides: Any) -> None:
        self.user_id = check_id(user_id, "user id")
        if search_mode not in (None, *SEARCH_MODES):
            raise InvalidInputError(f"search_mode must be one of {', '.join(SEARCH_MODES)} or None")
        self.search_mode = search_mode
        self.index_config: IndexConfig | None = cast(IndexConfig, dict(index)) if index else None
        self.fields: list[str] = _fields(self.index_config)
        embed = self.index_config.get("embed") if self.index_config else None
        self.embeddings: Embeddings | None = None if embed is None else ensure_embeddings(embed)
        self._owned = not isinstance(path, MemoryLog)
        if self.index_config and embed is not None and embedder == "default" and self._owned:
            embedder = IndexEmbedder(self.index_config)
        self.mem = path if isinstance(path, MemoryLog) else MemoryLog.open(path, embedder=embedder,
                                                                         **overrides)
        self.vectors = (None if self.embeddings is None or search_mode
                        else _vectors_of(self.mem, self.user_id, embed, self.embeddings))
        self._lock = _lock_of(self.mem)
        self._coalescer = Coalescer(self.batch)
        self._reports: list[DeletionReport] = []

    def __repr__(self) -> str:
        return f"MemlogStore({str(self.mem.data_dir)!r}, user_id={self.user_id!r})"

    def for_user(self, user_id: str) -> MemlogStore:
        """A store on the same open memlog for another user (closing it leaves the memlog open)."""
        return MemlogStore(self.mem, user_id=user_id, search_mode=self.search_mode,
                           index=self.index_config or {"fields": list(self.fields)})

    # -- BaseStore ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run get, search, list-namespaces and put ops; results in op order."""
        checked = _check_ops(ops)
        with self._lock:
            results = self._read(checked)
            puts: dict[tuple[Namespace, str], PutOp] = {}
            for op in checked:
                if isinstance(op, PutOp):
                    puts[op.namespace, op.key] = op
            if puts:
                self._write(list(puts.values()))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread; concurrent calls share a batch (:mod:`.batching`)."""
        return await self._coalescer.submit(list(ops))

    # -- writes -------------------------------------------------------------

    def _write(self, puts: list[PutOp]) -> None:
        saves = [op for op in puts if op.value is not None]
        if saves:
            self._save(saves)
        gone = [(op.namespace, op.key) for op in puts if op.value is None]
        if gone:
            report = self._delete(gone)
            if report is not None:
                self._reports.append(report)

    def _contents(self, op: PutOp, counts: dict[str, int]) -> tuple[str, str, list[str]]:
        """The item's document, search text and the texts its vectors are made
        of (none for ``index=False``), the value redacted first."""
        redactor = self.mem.store.entries.redactor
        value = op.value if redactor is None else redact_value(op.value, lambda s: redactor.redact(s, counts))
        index = None if op.index is False else list(op.index or self.fields)
        document = encode_item(op.namespace, op.key, value or {}, index)
        text = NOT_INDEXED if index is None else index_text(value or {}, index)
        limit = self.mem.settings.max_content_bytes
        texts = [] if index is None or self.vectors is None else field_texts(value or {}, index)
        return check_content(document, "value", limit), check_content(text, "indexed text", limit), texts

    def _append(self, key: str, content: str, counts: dict[str, int]) -> None:
        event = MemorySaved(user_id=self.user_id, key=key, content=content, memory_id=new_id("mem"),
                            redactions=counts)
        self.mem.store.writer.append(self.mem.store.user_stream(self.user_id), lambda: [event])

    def _save(self, saves: list[PutOp]) -> None:
        """Save the items, their search texts and the anchors of new namespaces
        in one transaction (everything checked before anything is written)."""
        contents, embedded = [], []
        for op in saves:
            counts: dict[str, int] = {}
            document, text, texts = self._contents(op, counts)
            contents.append((op, document, text, counts))
            embedded.append(((op.namespace, op.key), texts))
        # the vectors are made before anything is written: a failing model writes nothing
        rows = self.vectors.prepare(embedded) if self.vectors is not None else {}
        namespaces = {op.namespace for op in saves}
        with self.mem.store.read() as views:
            anchored = {ns for ns in namespaces if anchor_id(views, self.user_id, ns) is not None}
        with self.mem.batch():
            for op, document, text, counts in contents:
                if op.namespace not in anchored:
                    self._append(namespace_key(op.namespace), encode_anchor(op.namespace), {})
                    anchored.add(op.namespace)
                self._append(item_key(op.namespace, op.key), document, counts)
                self._append(search_key(op.namespace, op.key), text, {})
        if self.vectors is not None:
            self.vectors.remember(rows)

    def _delete(self, gone: list[tuple[Namespace, str]]) -> DeletionReport | None:
        """Delete the items, their search texts (a forget by hand takes them
        too) and the anchors of the namespaces left empty, in one
        deletion request (one purge); None when there is nothing to delete."""
        with self.mem.store.read() as views:
            snap = load(views, self.user_id, None)
        pairs = list(dict.fromkeys(gone))
        if self.vectors is not None:
            self.vectors.forget(pairs)
        found = [pair for pair in pairs if pair in snap.items]
        left = Counter(ns for ns, _ in snap.items) - Counter(ns for ns, _ in found)
        ids = [snap.items[pair].memory_id for pair in found]
        ids += [snap.searches[key] for key in (search_key(*pair) for pair in pairs) if key in snap.searches]
        # the anchors of the namespaces left empty, also by a forget by hand of their last item
        ids += [snap.anchors[ns][1] for ns in {ns for ns, _ in pairs} if not left[ns] and ns in snap.anchors]
        if not ids:
            return None
        return self.mem.delete(ids=ids, reason=DELETE_REASON, requested_by=self.user_id)

    # -- extras -------------------------------------------------------------

    def forget(self, namespace: tuple[str, ...], key: str) -> DeletionReport:
        """Delete one item through the privacy pipeline and return the purge's report
        (``MemoryNotFoundError`` when this user has no such item)."""
        validate_op_namespace(GetOp(tuple(namespace), key))
        with self._lock:
            report = self._delete([(tuple(namespace), key)])
            if report is None:
                raise MemoryNotFoundError("no LangGraph item under memory key "
                                          f"{item_key(tuple(namespace), key)}")
            self._reports.append(report)
        return report

    def erasure_report(self) -> DeletionReport | None:
        """The report of this store's last delete (None before any)."""
        return self._reports[-1] if self._reports else None

    def erasure_reports(self) -> list[DeletionReport]:
        """The reports of every delete this store object ran, oldest first."""
        return list(self._reports)

    def history(self, namespace: tuple[str, ...], key: str) -> list[HistoryItem]:
        """Every event of the item's memory (each save since it was last deleted), oldest first."""
        ns = tuple(namespace)
        with self._lock, self.mem.store.read() as views:
            found = lookup(views, self.user_id, None, ns, key)
            ids = [v.memory_id for v in views.memory_versions(self.user_id, item_key(ns, key))]
        if found is None:
            raise MemoryNotFoundError(f"no LangGraph item under memory key {item_key(ns, key)}")
        events = {event.seq: event for mid in dict.fromkeys(ids) for event in self.mem.history(mid)}
        return [events[seq] for seq in sorted(events)]

    def as_of(self, point: datetime | str | int) -> MemlogStoreAsOf:
        """The items as they were at a time (ISO 8601 / datetime) or a seq (int or
        ``"@N"``): a read-only store (erased items never come back)."""
        return MemlogStoreAsOf(self, point)

    # -- life cycle ---------------------------------------------------------

    def close(self) -> None:
        """Close the memlog if this store opened it."""
        if self._owned:
            self.mem.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class MemlogStoreAsOf(_Reader, BaseStore):
    """A :class:`MemlogStore`'s items as of a point: get, search and
    list_namespaces as they answered then; a put raises ``ReadOnlyError``."""

    def __init__(self, store: MemlogStore, point: datetime | str | int) -> None:
        self.mem, self.user_id, self.search_mode = store.mem, store.user_id, store.search_mode
        self.index_config, self.embeddings = store.index_config, store.embeddings
        # its own vectors: the values as of the point may differ from the current ones
        self.vectors = None if store.vectors is None else FieldVectors(store.vectors.embeddings)
        self.point = store.mem.as_of(point)
        self.seq: int = self.point.seq
        self._lock = store._lock
        self._coalescer = Coalescer(self.batch)

    def _seq(self) -> int | None:
        return self.seq

    def _rank(self, query: str) -> list[tuple[str, float]]:
        hits = self.point.search(query, user_id=self.user_id, source="memories", mode=self.search_mode,
                                 limit=_RANK_LIMIT)
        return [(hit.id, hit.score) for hit in hits]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads as of the point; any put raises ``ReadOnlyError``."""
        checked = _check_ops(ops)
        if any(isinstance(op, PutOp) for op in checked):
            raise ReadOnlyError("a store as of a point in time is read-only")
        with self._lock:
            return self._read(checked)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread; concurrent calls share a batch (:mod:`.batching`)."""
        return await self._coalescer.submit(list(ops))
