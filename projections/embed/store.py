"""The vector projection: one vector per search document version, in LMDB.

It is derived from exactly the operations of the search index
(:func:`projections.search.apply.search_ops`): an ``add`` embeds the
document's ``content`` and stores it under the document's rseq with its
``[from_seq, to_seq)`` interval; a ``remove`` deletes the rseq's vector. So a
vector exists exactly for each indexed document version, and a search as of
seq ``k`` is a filter on the intervals.

The rows live in seq-range partitions (:mod:`projections.embed.parts`:
``<proj>/vectors/part-NNNNNN/``, each an LMDB environment that a purge
rewrites with a compacting copy only when it lost a row). The small main
environment (``<proj>/vectors``, opened through the storage kit) holds no
content:

- ``changes``: seq (u64) | n (u32) -> rseq: which rseqs each batch touched, so
  another process's in-memory matrix catches up without reading everything
  (emptied by a purge, which moves the ``epoch`` on: a matrix of an older
  epoch is reloaded whole);
- ``meta``: ``checkpoint`` (the last seq applied), ``embedder`` (the model's
  name: another name clears the vectors, which then catch up again), ``dim``,
  ``epoch``; ``resetting`` while a clear empties the partitions, and
  ``purging`` (partition numbers) while a purge rewrites them.

Write order. :meth:`VectorIndex.apply` writes the partitions first (one
transaction each), then the checkpoint and the changes in one transaction of
the main environment. A crash between leaves partitions ahead of the
checkpoint; the catch-up applies the same operations again from the
checkpoint, and since each is a blind put or delete of a whole row, the rows
end as if applied once. A clear records ``resetting`` with the checkpoint 0
first, so a crash before the partitions are empty is finished by the next open
(and until then no row is read). A purge records the dirty partitions in
``purging`` before it unmarks and copies them, so a crash in between leaves
them to the next purge.

Every partition operation runs inside an operation of the main environment:
a rebuild that retires the main environment (a replaced projection directory)
waits for it, and this process's next operation raises
:class:`~eventstore.RetiredError` before it touches a partition.

Nothing here imports numpy at module level except through the embedder and
the cache, which are only built when an embedder is given.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import struct
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore import EventLog, StorageError
from eventstore.storage import SharedEnv, crashpoint, open_shared_env, release_shared_env

from .parts import Partitions, Row
from .protocol import Embedder
from .worker import Ahead, VectorWorker, read_frame, waiting

if TYPE_CHECKING:
    from .cache import MatrixCache

__all__ = ["VECTOR_DBS", "VectorIndex", "VectorOp", "purge_without_model", "worker_main"]

VECTOR_DBS = (b"changes", b"meta")
_U64 = struct.Struct(">Q")
_HEAD = struct.Struct(">QQ")
_CHANGE = struct.Struct(">QI")

# (seq, "add", rseq, from_seq, to_seq, text) or (seq, "remove", rseq, 0, 0, "")
VectorOp = tuple[int, str, int, int, int, str]


class VectorIndex:
    """The vectors of one projection directory, and their search."""

    def __init__(self, path: Path, embedder: Embedder, *, sync: bool = False) -> None:
        self.path = path
        self.embedder = embedder
        self.shared: SharedEnv | None = open_shared_env(path, VECTOR_DBS, sync=sync)
        self.parts = Partitions(path, sync)
        self._cache: MatrixCache | None = None
        self._cache_at = -1
        self._cache_generation = -1
        self._cache_epoch = -1
        self._seen_epoch = -1
        self._worker: VectorWorker | None = None
        try:
            with self.shared.operation():
                self.parts.open_all()  # a damaged partition fails the open
                _finish_reset(self.shared, self.parts)
            self._reset_if_other_model()
        except BaseException:
            self.close()
            raise

    def _env(self) -> SharedEnv:
        if self.shared is None:
            raise StorageError("the vectors are closed")
        return self.shared

    def close(self) -> None:
        """Release the environments and drop the in-memory matrix."""
        self.parts.close()
        if self.shared is not None:
            release_shared_env(self.shared)
            self.shared = None
        self._cache = None

    # -- state ----------------------------------------------------------------

    def checkpoint(self) -> int:
        """The last seq applied. When a purge moved the epoch on since the last
        look, every partition this process has open adopts its rewritten file
        (so no process keeps mapping an old one past its next catch-up)."""
        shared = self._env()
        with shared.operation():
            at, epoch, _ = shared.read(lambda txn: _state(txn, shared.dbs))
            if epoch != self._seen_epoch:
                self.parts.follow()
                self._seen_epoch = epoch
        return at

    def model(self) -> str:
        """The name of the embedder the stored vectors were made by ('' when none)."""
        shared = self._env()
        raw = shared.read(lambda txn: txn.get(b"embedder", db=shared.dbs[b"meta"]))
        return "" if raw is None else bytes(raw).decode()

    def _reset_if_other_model(self) -> None:
        if self.model() != self.embedder.name:
            self.clear()

    def clear(self) -> None:
        """Drop every vector and the checkpoint (they catch up again from seq 0),
        and record this embedder as the model. Old bytes stay until a purge."""
        _reset(self._env(), self.parts, self.embedder.name, self.embedder.dim)
        self._cache = None

    def __len__(self) -> int:
        with self._env().operation():
            return self.parts.count()

    def dump(self) -> dict[int, tuple[int, int, bytes]]:
        """Every stored vector: rseq -> (from_seq, to_seq, float16 bytes) (tests, replay checks)."""
        out: dict[int, tuple[int, int, bytes]] = {}

        def visit(rseq: int, value: Any) -> None:
            lo, hi = _HEAD.unpack_from(value)
            out[rseq] = (lo, hi, bytes(value[_HEAD.size :]))

        with self._env().operation():
            self.parts.scan(visit)
        return out

    # -- applying ---------------------------------------------------------------

    def start_worker(self, log: Path | None = None, last: int = 0) -> None:
        """Hand the next :meth:`apply` calls to a :class:`~.worker.VectorWorker`
        (the shipped model only): a replay embeds on the other core while this
        process builds the views and the index; given the local ``log``, the
        worker embeds its records after the checkpoint up to ``last`` ahead.
        :meth:`stop_worker` waits for it."""
        self._worker = VectorWorker(self.path, log, self.checkpoint(), last)

    def stop_worker(self, ok: bool = True) -> None:
        """Wait for the worker to apply what it was given (``ok``), or stop it
        at once (its transactions are whole: the checkpoint says what it applied)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close(ok)
            self._cache = None

    def apply(self, ops: Sequence[VectorOp], upto: int, ahead: Ahead | None = None) -> int:
        """Embed the added texts (one call; those ``ahead`` embedded already are
        taken from it), then apply ``ops`` in order: the rows into their
        partitions, then the changes and the checkpoint ``upto`` in one
        transaction (see the module doc). Ops at or below the stored checkpoint
        are skipped. Returns the new checkpoint (with a worker: ``upto``, which
        it will reach)."""
        if self._worker is not None:
            return self._worker.apply(list(ops), upto)
        shared = self._env()
        with shared.operation():
            _finish_reset(shared, self.parts)
            done = self.checkpoint()
            todo = [op for op in ops if op[0] > done]
            rows = self._embedded([op for op in todo if op[1] == "add"], ahead)
            self.parts.write([_row(op, rows) for op in todo])
            crashpoint("vectors: partitions written, not the checkpoint")
            return shared.write(lambda txn: _commit(txn, shared.dbs, self.embedder.name, ops, done, upto))

    def _embedded(self, adds: list[VectorOp], ahead: Ahead | None) -> Iterator[bytes]:
        """The float16 rows of ``adds``' texts, in order: from ``ahead`` where it
        has them, the others embedded in one call."""
        known = [None if ahead is None else ahead.take(op[2], op[5]) for op in adds]
        missing = [op[5] for op, row in zip(adds, known, strict=True) if row is None]
        made = iter(self.embedder.embed(missing).astype("<f2") if missing else ())
        return iter([row if row is not None else next(made).tobytes() for row in known])

    # -- searching ----------------------------------------------------------------

    def search(self, vector: Any, k: int, as_of: int | None) -> list[tuple[int, float]]:
        """(rseq, cosine) best first: with ``as_of`` None the current documents
        only, else the documents whose ``[from_seq, to_seq)`` holds ``as_of``."""
        return self._refreshed().search(vector, k, as_of)

    def embed_query(self, text: str) -> Any:
        """The query's vector (the embedder's, one row)."""
        return self.embedder.embed([text])[0]

    def _refreshed(self) -> MatrixCache:
        """The in-memory matrix, brought up to the stored vectors: the changes
        since it was loaded, or everything after a purge or a model change.
        (Partitions may be ahead of the checkpoint read first: the rows read
        are then newer, and the next refresh reads their changes again.)"""
        shared = self._env()
        with shared.operation():
            generation = shared.generation
            at, epoch, resetting = shared.read(lambda txn: _state(txn, shared.dbs))
            if self._cache is None or generation != self._cache_generation or epoch != self._cache_epoch:
                self._cache = _load_all(self.parts, self.embedder.dim, resetting)
            elif at != self._cache_at:
                touched = shared.read(lambda txn: _changed_since(txn, shared.dbs, self._cache_at))
                _load_rows(self.parts, self._cache, touched)
        self._cache_at, self._cache_epoch, self._cache_generation = at, epoch, generation
        return self._cache

    # -- erasure ------------------------------------------------------------------

    def purge(self, timeout: float, everything: bool = False) -> list[str]:
        """Empty the change list, then rewrite every partition that lost a
        vector since its last rewrite (compacting copies, old files
        zero-filled): no vector removed before remains. Returns the files
        rewritten (untouched partitions are not among them). ``everything``:
        every partition (a purge whose scan found content again)."""
        files = _purge_parts(self._env(), self.parts, timeout, everything)
        self._cache = None
        return files

    def files(self) -> Iterable[Path]:
        """Every file of the projection."""
        return (p for p in self.path.rglob("*") if p.is_file())


def worker_main() -> None:
    """A :class:`~.worker.VectorWorker`'s main: apply each chunk read from
    stdin until it closes; while none waits, embed ahead from the log when
    given one (see :mod:`.worker`)."""
    from . import default_embedder

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped: close the environments first
    embedder = default_embedder()
    assert embedder is not None
    vectors = VectorIndex(Path(sys.argv[1]), embedder)
    with contextlib.ExitStack() as stack:
        stack.callback(vectors.close)
        ahead = _ahead(embedder) if len(sys.argv) == 5 else None
        if ahead is not None:
            stack.callback(ahead.close)
        fd = sys.stdin.fileno()
        while True:
            if ahead is not None and not ahead.done and not ahead.full and not waiting(fd):
                try:
                    ahead.step()
                except Exception:  # e.g. a damaged record: the parent reads it too, and says so
                    ahead.close()
                    ahead = None  # what was embedded ahead is let go; the rest is embedded as sent
                continue
            frame = read_frame(fd)
            if frame is None:
                return
            ops, upto = pickle.loads(frame)
            vectors.apply(ops, upto, ahead)


def _ahead(embedder: Embedder) -> Ahead | None:
    """The worker's rows embedded ahead from the log named in ``sys.argv`` (the
    log is theirs to close), or None when it cannot be read: ahead is only a
    head start, so the worker then embeds what it is sent, as before."""
    log_path = Path(sys.argv[2])
    if not (log_path / "generation").is_file():
        return None  # never create a log
    try:
        log = EventLog.open(log_path)
    except Exception:
        return None
    return Ahead(log, int(sys.argv[3]), int(sys.argv[4]), embedder, own=True)


def purge_without_model(path: Path, timeout: float) -> list[str]:
    """Empty the vectors at ``path`` and rewrite their partitions (a purge by
    a process that has no embedder, so it cannot remove the deleted documents'
    vectors one by one): the processes that have one rebuild them from seq 0."""
    shared = open_shared_env(path, VECTOR_DBS)
    parts = Partitions(path, sync=True)
    try:
        _reset(shared, parts, "", 0)
        return _purge_parts(shared, parts, timeout)
    finally:
        parts.close()
        release_shared_env(shared)


def _row(op: VectorOp, vectors: Iterator[bytes]) -> Row:
    """The partition row of one op (``vectors``: the added texts' rows, in order)."""
    _, kind, rseq, lo, hi, _ = op
    if kind != "add":
        return (rseq, None)
    return (rseq, _HEAD.pack(lo, hi) + next(vectors))


def _commit(txn: Any, dbs: dict[bytes, Any], model: str, ops: Sequence[VectorOp], done: int,
            upto: int) -> int:
    """The main environment's half of an apply: the changes and the checkpoint."""
    if _meta_u64(txn, dbs[b"meta"], b"checkpoint") == 0:
        # emptied by a process without a model: the vectors are this model's again
        txn.put(b"embedder", model.encode(), db=dbs[b"meta"])
    for n, (seq, _, rseq, _, _, _) in enumerate(ops):
        if seq > done:
            txn.put(_CHANGE.pack(seq, n), _U64.pack(rseq), db=dbs[b"changes"])
    if upto > done:
        txn.put(b"checkpoint", _U64.pack(upto), db=dbs[b"meta"])
    return max(upto, done)


def _purge_parts(shared: SharedEnv, parts: Partitions, timeout: float, everything: bool = False) -> list[str]:
    """Trim the changes, record the dirty partitions (with those of a purge
    that did not finish) as ``purging``, rewrite them, then drop the record.
    The epoch moves on at both ends (see :meth:`VectorIndex.checkpoint`)."""
    dbs = shared.dbs
    with shared.operation():
        dirty = parts.existing() if everything else parts.dirty()

        def start(txn: Any) -> list[int]:
            txn.drop(dbs[b"changes"], delete=False)
            _next_epoch(txn, dbs)
            pending = sorted(set(dirty) | set(_purging(txn, dbs)))
            txn.put(b"purging", b"".join(_U64.pack(n) for n in pending), db=dbs[b"meta"])
            return pending

        files = parts.purge(shared.write(start), timeout)

        def finish(txn: Any) -> None:
            txn.delete(b"purging", db=dbs[b"meta"])
            _next_epoch(txn, dbs)  # again: other processes adopt every rewritten partition

        shared.write(finish)
    return files


def _purging(txn: Any, dbs: dict[bytes, Any]) -> list[int]:
    raw = txn.get(b"purging", db=dbs[b"meta"])
    raw = b"" if raw is None else bytes(raw)
    return [_U64.unpack_from(raw, i)[0] for i in range(0, len(raw), _U64.size)]


def _next_epoch(txn: Any, dbs: dict[bytes, Any], epoch: int | None = None) -> None:
    """Move the epoch on: every in-memory matrix loaded before reloads whole."""
    epoch = _meta_u64(txn, dbs[b"meta"], b"epoch") if epoch is None else epoch
    txn.put(b"epoch", _U64.pack(epoch + 1), db=dbs[b"meta"])


def _reset(shared: SharedEnv, parts: Partitions, model: str, dim: int) -> None:
    """Checkpoint 0, this model, a new epoch and ``resetting``; then every
    partition emptied (each marked dirty); then ``resetting`` dropped."""
    dbs = shared.dbs

    def start(txn: Any) -> None:
        epoch = _meta_u64(txn, dbs[b"meta"], b"epoch")
        purging = txn.get(b"purging", db=dbs[b"meta"])
        purging = None if purging is None else bytes(purging)
        for name in VECTOR_DBS:
            txn.drop(dbs[name], delete=False)
        txn.put(b"embedder", model.encode(), db=dbs[b"meta"])
        txn.put(b"dim", _U64.pack(dim), db=dbs[b"meta"])
        txn.put(b"resetting", b"1", db=dbs[b"meta"])
        if purging is not None:  # a purge that did not finish: still to do
            txn.put(b"purging", purging, db=dbs[b"meta"])
        _next_epoch(txn, dbs, epoch)

    with shared.operation():
        shared.write(start)
        _finish_reset(shared, parts)


def _finish_reset(shared: SharedEnv, parts: Partitions) -> None:
    """Empty the partitions if a clear did not finish (``resetting``)."""
    dbs = shared.dbs
    if shared.read(lambda txn: txn.get(b"resetting", db=dbs[b"meta"]) is None):
        return
    parts.clear()
    shared.write(lambda txn: txn.delete(b"resetting", db=dbs[b"meta"]))


def _meta_u64(txn: Any, db: Any, key: bytes) -> int:
    raw = txn.get(key, db=db)
    return 0 if raw is None else int(_U64.unpack(bytes(raw))[0])


def _state(txn: Any, dbs: dict[bytes, Any]) -> tuple[int, int, bool]:
    """(checkpoint, epoch, resetting) of the main environment."""
    meta = dbs[b"meta"]
    resetting = txn.get(b"resetting", db=meta) is not None
    return _meta_u64(txn, meta, b"checkpoint"), _meta_u64(txn, meta, b"epoch"), resetting


def _changed_since(txn: Any, dbs: dict[bytes, Any], after: int) -> list[int]:
    """The rseqs the batches after seq ``after`` touched."""
    cursor = txn.cursor(db=dbs[b"changes"])
    if not cursor.set_range(_U64.pack(after + 1)):
        return []
    return sorted({_U64.unpack(bytes(value))[0] for _, value in cursor})


def _load_all(parts: Partitions, dim: int, resetting: bool) -> MatrixCache:
    """Every row into a new matrix (none while a clear is unfinished)."""
    import numpy as np

    from .cache import MatrixCache

    cache = MatrixCache(dim)

    def visit(rseq: int, value: Any) -> None:
        lo, hi = _HEAD.unpack_from(value)
        cache.put(rseq, lo, hi, np.frombuffer(value, dtype="<f2", offset=_HEAD.size))

    if not resetting:
        parts.scan(visit)
    return cache


def _load_rows(parts: Partitions, cache: MatrixCache, rseqs: list[int]) -> None:
    """Bring the rows of ``rseqs`` in ``cache`` up to the partitions."""
    import numpy as np

    for rseq, value in parts.get(rseqs).items():
        if value is None:
            cache.drop(rseq)
        else:
            lo, hi = _HEAD.unpack_from(value)
            cache.put(rseq, lo, hi, np.frombuffer(value, dtype="<f2", offset=_HEAD.size))
