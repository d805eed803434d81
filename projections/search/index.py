"""The search projection: a sharded Tantivy index of entries.

Content is indexed, never stored: a hit is identified by the entry's recorded
seq (a fast field), which the views map back to the entry. Filters cover kind,
session, agent, user, tags, a message's topic, ``occurred_at`` and the seq interval in which the
document was current, so a search as of seq ``k`` is a filter, not a replay.
The ``absent`` field names which of session, agent and user a document has
not (ids have no reserved value to stand for "none"), for the scope filter.
A finding's document also has its ``status`` and ``severity`` (an update of
its status indexes it again), for the filters of that name. An index built
before those fields has another schema: opening it rebuilds it from the log,
as ``memlog replay --projection search`` does.

The index is split into shards by entry id, so that removing a deleted entry's
terms for good means rebuilding one small shard, not the whole index. Each
shard keeps its checkpoint in a document with ``rseq = 0`` that is committed
together with the shard's other changes.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import tantivy

from eventstore import (
    MEMORY_DOC_KIND,
    EntryRecorded,
    FindingDetails,
    InvalidQueryError,
    StorageError,
    entry_texts,
)
from eventstore.storage import MaintenanceLock, crashpoint, open_private, private_tree, wipe_tree

from ..models import MemoryView
from . import terms as _terms
from .fit import WRITER_HEAP, writer_heap

__all__ = ["OPEN_SEQ", "SearchIndex", "SearchShard", "broken_index", "build_schema", "entry_document",
           "memory_document", "memory_text", "searchable_text", "word_count"]

T = TypeVar("T")

OPEN_SEQ = (1 << 63) - 1
_json = msgspec.json.Encoder().encode
_CPUS = os.cpu_count() or 1  # (asking on every search cost ~10 µs)
_PARALLEL_DOCS = 131_072  # documents in all shards from which shards are searched in threads


def broken_index(exc: BaseException) -> bool:
    """Whether Tantivy's ``exc`` says an index's files are unusable: a ValueError,
    an OSError, or a Rust panic (``pyo3_runtime.PanicException``, a
    BaseException that ``except Exception`` lets through)."""
    return isinstance(exc, ValueError | OSError) or type(exc).__name__ == "PanicException"


def build_schema() -> Any:
    """The schema of every shard."""
    sb = tantivy.SchemaBuilder()
    # No positions: no query is a phrase, and they cost a fifth of the indexing time.
    sb.add_text_field("content", stored=False, tokenizer_name=_terms.TOKENIZER, index_option="freq")
    for name in ("kind", "session", "agent", "user", "tags", "absent", "status", "severity"):
        sb.add_text_field(name, stored=False, tokenizer_name="raw")
    sb.add_integer_field("occurred_at", stored=False, indexed=True, fast=True)
    for name in ("rseq", "from_seq", "to_seq", "dl", "memory"):
        sb.add_unsigned_field(name, stored=False, indexed=True, fast=True)
    sb.add_text_field("topic", stored=False, tokenizer_name="raw")  # a message's topic, as given
    return sb.build()


def entry_document(event: EntryRecorded, rseq: int, from_seq: int, to_seq: int = OPEN_SEQ) -> str:
    """The Tantivy document of one entry version, as the JSON ``add_json`` takes.

    Building a ``tantivy.Document`` field by field costs about 9 µs per entry in
    Python; encoding the same fields as JSON (parsed in Rust) about 2 µs, which
    matters when a purge rebuilds a shard. Scores and fast fields are the same.
    """
    content = searchable_text(event)
    fields: dict[str, object] = {
        "content": content, "kind": event.kind, "tags": event.tags, "dl": word_count(content),
        "occurred_at": event.occurred_at, "rseq": rseq, "from_seq": from_seq, "to_seq": to_seq,
    }
    absent: list[str] = []
    for name, value in (("session", event.session_id), ("agent", event.agent_id),
                        ("user", event.user_id)):
        if value:
            fields[name] = value
        else:
            absent.append(name)
    if absent:
        fields["absent"] = absent  # which of session, agent, user the entry has not (scope filters)
    details = event.details
    if isinstance(details, FindingDetails):  # the status and severity filters
        fields["status"] = details.status
        if details.severity is not None:
            fields["severity"] = details.severity
    topic = getattr(event.details, "topic", None)  # a message's (the --topic filter)
    if topic:
        fields["topic"] = topic
    return _json(fields).decode()


def memory_document(memory: MemoryView, rseq: int, from_seq: int, to_seq: int = OPEN_SEQ) -> str:
    """The document of one saved user memory (kind ``memory``, seed 001): its
    key's words and its value; ``memory`` 1 tells ranking to read it as a
    memory. It has its user, never a session or an agent (a memory is the
    user's, wherever it was said)."""
    content = memory_text(memory.key, memory.content or "")
    return _json({
        "content": content, "kind": MEMORY_DOC_KIND, "user": memory.user_id, "absent": ["session", "agent"],
        "dl": word_count(content), "occurred_at": memory.saved_at, "rseq": rseq, "from_seq": from_seq,
        "to_seq": to_seq, "memory": 1,
    }).decode()


def memory_text(key: str, content: str) -> str:
    """The searchable text of a memory: its key's words, then its value."""
    return f"{key.replace('_', ' ')}\n{content}"


def word_count(text: str) -> int:
    """The words of ``text`` as the index tokenizes them (BM25's document length):
    ``len(terms.words(text))`` without building the filtered list (a third of
    an entry document's cost in a rebuild)."""
    return _terms.count_words(text)


def searchable_text(event: EntryRecorded) -> str:
    """Every text of the entry (:func:`eventstore.entry_texts`: content, tags,
    which seed 002 indexes, and the text fields of its details), one per line."""
    return "\n".join(entry_texts(event))

class SearchShard:
    """One Tantivy index, reached through a symlink ``shard-NN -> shard-NN.<id>``.

    A rebuild writes a fresh directory and swaps the link; every use first
    checks the link and reopens when it moved.
    """

    def __init__(self, link: Path, schema: Any, heap: int = WRITER_HEAP) -> None:
        self.link = link
        self.schema = schema
        self.heap = heap  # the indexing memory of this shard's writer
        if not link.is_symlink():
            _point(link, _fresh_dir(link))
        self.target = ""
        self.generation = 0  # bumped by every commit and reopen of this process
        self._dl: tuple[tuple[int, int, int], float] | None = None
        self.index: Any = None
        self.writer: Any = None
        self.dirty = False
        self.refresh()

    def refresh(self) -> None:
        """Reopen the index if a rebuild swapped the link."""
        target = os.readlink(self.link)
        if target == self.target and self.index is not None:
            return
        self.rollback()
        try:
            self.index = tantivy.Index(self.schema, path=str(self.link.parent / target), reuse=True)
        except BaseException as exc:
            if not broken_index(exc):
                raise
            # Tantivy's message can run to the whole meta.json: keep its first words.
            said = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise StorageError(f"cannot open search shard {self.link.name} ({target}): {said}; "
                               "run `memlog replay` to rebuild it") from None
        self.target = target
        self.generation += 1
        private_tree(self.link.parent / target)

    def open_writer(self, timeout: float = 30.0) -> Any:
        """The shard's writer, waiting while another process holds it."""
        deadline = time.monotonic() + timeout
        while self.writer is None:
            try:
                self.writer = self.index.writer(self.heap, 1)
            except ValueError as exc:
                if "LockBusy" not in str(exc) or time.monotonic() > deadline:
                    raise StorageError(f"search shard {self.link.name} is busy: {exc}") from None
                time.sleep(0.01)
        return self.writer

    def add(self, doc: str) -> None:
        """Add a document (:func:`entry_document`; uncommitted until :meth:`commit`)."""
        (self.writer or self.open_writer()).add_json(doc)
        self.dirty = True

    def remove(self, rseq: int) -> None:
        """Delete the documents of the version recorded at ``rseq`` (uncommitted until :meth:`commit`)."""
        # delete_documents_by_term silently misses unsigned fields; a term query does not.
        query = tantivy.Query.term_query(self.schema, "rseq", rseq)
        self.open_writer().delete_documents_by_query(query)
        self.dirty = True

    def commit(self, checkpoint: int) -> None:
        """Store the checkpoint document and commit, then release the writer."""
        writer = self.open_writer()
        writer.delete_documents_by_query(tantivy.Query.term_query(self.schema, "rseq", 0))
        writer.add_document(_checkpoint_doc(checkpoint))
        writer.commit()
        writer.wait_merging_threads()
        self.writer = None
        self.dirty = False
        self.generation += 1
        private_tree(self.link.parent / self.target)  # Tantivy's files are 0666 less the umask
        self.index.reload()

    def dl_sum(self, searcher: Any, compute: Callable[[Any], float]) -> float:
        """``compute(searcher)`` (the sum of the documents' lengths), cached
        while this shard's generation and ``searcher``'s counts stay the same."""
        key = (self.generation, searcher.num_docs, searcher.num_segments)
        cached = self._dl
        if cached is not None and cached[0] == key:
            return cached[1]
        value = compute(searcher)
        self._dl = (key, value)
        return value

    def rollback(self) -> None:
        """Drop uncommitted work."""
        if self.writer is not None:
            self.writer.rollback()
            self.writer = None
        self.dirty = False

    def checkpoint(self) -> int:
        """The last seq committed to this shard."""
        self.index.reload()
        searcher = self.index.searcher()
        query = tantivy.Query.term_query(self.schema, "rseq", 0)
        hits = searcher.search(query, 1, count=False).hits
        if not hits:
            return 0
        return int(searcher.fast_field_values("from_seq", [hits[0][1]])[0] or 0)

    def rebuild(self, docs: Iterable[str], checkpoint: int) -> Path:
        """Write ``docs`` into a fresh directory, swap the link; return the old directory."""
        fresh = _fresh_dir(self.link)
        index = tantivy.Index(self.schema, path=str(fresh), reuse=False)
        # Two indexing threads halve the commit; the caller's thread builds documents.
        threads = min(2, os.cpu_count() or 1)
        writer = index.writer(WRITER_HEAP * threads, threads)
        for doc in docs:
            writer.add_json(doc)
        writer.add_document(_checkpoint_doc(checkpoint))
        crashpoint("search: commit the fresh shard")
        writer.commit()
        writer.wait_merging_threads()
        private_tree(fresh)
        old = self.link.parent / os.readlink(self.link)
        self.rollback()
        self.index = None
        crashpoint("search: swap the shard link")
        _point(self.link, fresh)
        self.refresh()
        return old


def _each(fn: Callable[[Any], T], searchers: list[tuple[int, Any]]) -> list[T]:
    return [fn(s) for _, s in searchers]


def _checkpoint_doc(checkpoint: int) -> Any:
    doc = tantivy.Document()
    doc.add_unsigned("rseq", 0)
    doc.add_unsigned("from_seq", checkpoint)
    doc.add_unsigned("to_seq", 0)
    return doc


def _fresh_dir(link: Path) -> Path:
    fresh = link.parent / f"{link.name}.{secrets.token_hex(4)}"
    fresh.mkdir(mode=0o700)
    return fresh


def _point(link: Path, target: Path) -> None:
    """Atomically make ``link`` point at ``target`` (a sibling)."""
    tmp = link.parent / f".{link.name}.{secrets.token_hex(4)}"
    os.symlink(target.name, tmp)
    os.replace(tmp, link)
    fd = os.open(link.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SearchIndex:
    """All shards of the search projection under one directory.

    Searches and catch-ups hold ``maint.lock`` shared; a shard rebuild holds it
    exclusive while it swaps and wipes, so nobody reads a file being wiped.
    A rebuild also writes a fresh mark into ``relinked`` before it swaps a
    link, so a refresh (under the shared lock) reads one small file instead of
    every link when no shard moved.
    """

    def __init__(self, path: Path, shards: int = 16) -> None:
        self.path = path
        self.schema = build_schema()
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.lock = MaintenanceLock(path / "maint.lock")
        self._relinked = open_private(path / "relinked", os.O_RDWR | os.O_CREAT)
        self._seen: bytes | None = None
        heap = writer_heap(shards)
        self.shards = [SearchShard(path / f"shard-{i:02d}", self.schema, heap) for i in range(shards)]
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Drop uncommitted work and release the lock and mark files."""
        self.rollback()
        self.lock.close()
        if self._relinked >= 0:
            os.close(self._relinked)
            self._relinked = -1
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def refresh(self) -> None:
        """Reopen shards whose link moved (call it holding :attr:`lock`)."""
        mark = os.pread(self._relinked, 16, 0)
        if mark == self._seen:
            return  # no rebuild since the last refresh
        for shard in self.shards:
            shard.refresh()
        self._seen = mark

    def rebuild(self, shard: int, docs: Iterable[Any], checkpoint: int) -> Path:
        """Rebuild one shard (hold :attr:`lock` exclusive); return its old directory.

        The mark is written before the link moves: a crash in between only makes
        readers look at every link once more.
        """
        os.pwrite(self._relinked, secrets.token_bytes(16), 0)
        return self.shards[shard].rebuild(docs, checkpoint)

    def sweep_orphans(self) -> int:
        """Wipe shard directories no link points at and temporary links: what a
        rebuild interrupted between its swap and its wipe left behind (hold
        :attr:`lock` exclusive). Returns the bytes wiped."""
        linked = {os.readlink(s.link) for s in self.shards if s.link.is_symlink()}
        wiped = 0
        for path in self.path.iterdir():
            if path.name.startswith(".shard-") and path.is_symlink():
                path.unlink(missing_ok=True)
            elif path.name.startswith("shard-") and "." in path.name and not path.is_symlink() \
                    and path.name not in linked:
                wiped += wipe_tree(path)
        return wiped

    def shard_of(self, entry_id: str) -> int:
        """The shard an entry id lives in: its ``crc32`` range (stable across processes)."""
        return (zlib.crc32(entry_id.encode()) * len(self.shards)) >> 32

    def hash_range(self, shard: int) -> tuple[int, int]:
        """The ``crc32`` values ``[low, high)`` of the ids in ``shard``."""
        count = len(self.shards)
        return -(-(shard << 32) // count), -(-((shard + 1) << 32) // count)

    def checkpoint(self) -> int:
        """The lowest checkpoint of any shard: everything up to it is indexed."""
        return min(shard.checkpoint() for shard in self.shards)

    def add(self, entry_id: str, doc: str) -> None:
        """Add a document (:func:`entry_document`; uncommitted until :meth:`commit`)."""
        self.shards[self.shard_of(entry_id)].add(doc)

    def apply(self, marks: Sequence[int], seq: int, ops: Iterable[tuple[str, str, Any]]) -> None:
        """Apply the index operations of the record at ``seq`` (``search_ops``)
        to the shards not past it (``marks``: each shard's checkpoint)."""
        for op, entry_id, arg in ops:
            n = self.shard_of(entry_id)
            if seq <= marks[n]:  # the shard holds it already
                continue
            if op == "add":
                self.shards[n].add(arg)
            else:
                self.shards[n].remove(arg)

    def past(self, marks: Sequence[int], entry_id: str, seq: int) -> bool:
        """Whether the shard of ``entry_id`` already holds seq ``seq`` (its checkpoint in ``marks``)."""
        return seq <= marks[self.shard_of(entry_id)]

    def remove(self, entry_id: str, rseq: int) -> None:
        """Delete an entry's documents (uncommitted until :meth:`commit`)."""
        self.shards[self.shard_of(entry_id)].remove(rseq)

    def commit(self, checkpoint: int) -> None:
        """Commit every shard with the new checkpoint."""
        for shard in self.shards:
            shard.commit(checkpoint)

    def rollback(self) -> None:
        """Drop uncommitted work in every shard."""
        for shard in self.shards:
            shard.rollback()

    def searchers(self) -> list[tuple[int, Any]]:
        """A searcher per shard."""
        return [(i, shard.index.searcher()) for i, shard in enumerate(self.shards)]

    def map_searchers(self, fn: Callable[[Any], T], searchers: list[tuple[int, Any]]) -> list[T]:
        """``fn`` of each searcher, in shard order. From :data:`_PARALLEL_DOCS`
        documents in all shards, each core's thread takes every other shard
        (Tantivy releases the GIL while it searches; this thread takes the
        first share, so a search hands off once, not once a shard, and runs a
        share no pool thread has started); below it the hand-off costs more
        than it saves. Measured with one task a shard, on a quiet 2-core
        machine (p50 / p99 ms, 600 corpus queries, `run_search`): 1M entries
        in 16 shards 3.6 / 11 serial, 2.5 / 6.3 in threads; 200k in 4 shards
        0.51 / 1.75 serial, 0.49 / 1.3 in threads (so the threshold stays
        about where that rule put it for small stores); on cores busy with
        other work threads cost more (200k, 16 shards: 2.5 / 19.4 serial, 3.6
        / 38.4 in threads). With a share a thread, 1M entries in 32 shards:
        2.7 to 3.1 ms p50 (16 shards: 2.3 to 2.9); one task a shard was no
        faster than one thread at 32 shards (5.4 against 5.0 ms, loaded)."""
        workers = min(len(searchers), _CPUS)
        if workers < 2 or sum(s.num_docs for _, s in searchers) < _PARALLEL_DOCS:
            return _each(fn, searchers)
        with self._pool_lock:  # one pool even when several threads search at once
            if self._pool is None:
                self._pool = ThreadPoolExecutor(workers - 1, thread_name_prefix="memlog-search")
            pool = self._pool
        chunks = [searchers[w::workers] for w in range(workers)]
        futures = [pool.submit(_each, fn, chunk) for chunk in chunks[1:]]
        try:
            parts = [_each(fn, chunks[0])]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        # A share no pool thread has started (they serve other searches) runs here.
        parts += [_each(fn, chunk) if future.cancel() else future.result()
                  for future, chunk in zip(futures, chunks[1:], strict=True)]
        out: list[T] = [None] * len(searchers)  # type: ignore[list-item]
        for w, part in enumerate(parts):
            out[w::workers] = part
        return out

    def doc_freq(self, word: str) -> int:
        """How many documents (deleted ones included until merged) hold ``word``,
        stemmed as the index stems it (a raw word whose stem differs would
        always count 0)."""
        term = _terms.stem_all([word.lower()])[0]
        return sum(s.doc_freq("content", term) for _, s in self.searchers())

    def files(self) -> Iterable[Path]:
        """Every file of the index."""
        return (p for p in self.path.rglob("*") if p.is_file())

    def size_bytes(self) -> int:
        """Bytes on disk."""
        return sum(os.path.getsize(p) for p in self.files())


def check_limit(limit: int) -> int:
    """Tantivy panics on limit 0; refuse it here with a clear error."""
    if type(limit) is not int or limit < 1 or limit > 10_000:
        raise InvalidQueryError("limit must be an integer from 1 to 10000")
    return limit
