"""The vector projection: one vector per search document version, in LMDB.

It is derived from exactly the operations of the search index
(:func:`projections.search.apply.search_ops`): an ``add`` embeds the
document's ``content`` and stores it under the document's rseq with its
``[from_seq, to_seq)`` interval; a ``remove`` deletes the rseq's vector. So a
vector exists exactly for each indexed document version, and a search as of
seq ``k`` is a filter on the intervals.

Databases of the environment (``<proj>/vectors``, opened through the
storage kit, so a purge rewrites it with a compacting copy and no stale bytes
remain):

- ``vectors``: rseq (u64) -> from_seq (u64) | to_seq (u64) | the vector (float16);
- ``changes``: seq (u64) | n (u32) -> rseq: which rseqs each batch touched, so
  another process's in-memory matrix catches up without reading everything
  (emptied by a purge, which moves the ``epoch`` on: a matrix of an older
  epoch is reloaded whole);
- ``meta``: ``checkpoint`` (the last seq applied, in the same transaction),
  ``embedder`` (the model's name: another name clears the vectors, which then
  catch up again), ``dim``, ``epoch``.

Nothing here imports numpy at module level except through the embedder and
the cache, which are only built when an embedder is given.
"""

from __future__ import annotations

import contextlib
import pickle
import struct
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eventstore import StorageError
from eventstore.storage import SharedEnv, open_shared_env, purge_env, release_shared_env

from .protocol import Embedder

if TYPE_CHECKING:
    from .cache import MatrixCache

__all__ = ["VECTOR_DBS", "VectorIndex", "VectorOp", "VectorWorker", "purge_without_model"]

VECTOR_DBS = (b"vectors", b"changes", b"meta")
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
        self._cache: MatrixCache | None = None
        self._cache_at = -1
        self._cache_generation = -1
        self._cache_epoch = -1
        self._worker: VectorWorker | None = None
        self._reset_if_other_model()

    def _env(self) -> SharedEnv:
        if self.shared is None:
            raise StorageError("the vectors are closed")
        return self.shared

    def close(self) -> None:
        """Release the environment and drop the in-memory matrix."""
        if self.shared is not None:
            release_shared_env(self.shared)
            self.shared = None
        self._cache = None

    # -- state ----------------------------------------------------------------

    def checkpoint(self) -> int:
        """The last seq applied."""
        shared = self._env()
        return shared.read(lambda txn: _meta_u64(txn, shared.dbs[b"meta"], b"checkpoint"))

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
        self._env().write(lambda txn: _reset(txn, self._env().dbs, self.embedder.name, self.embedder.dim))
        self._cache = None

    def __len__(self) -> int:
        shared = self._env()
        return int(shared.read(lambda txn: txn.stat(shared.dbs[b"vectors"])["entries"]))

    def dump(self) -> dict[int, tuple[int, int, bytes]]:
        """Every stored vector: rseq -> (from_seq, to_seq, float16 bytes) (tests, replay checks)."""
        shared = self._env()

        def read(txn: Any) -> dict[int, tuple[int, int, bytes]]:
            out = {}
            for key, value in txn.cursor(db=shared.dbs[b"vectors"]):
                lo, hi = _HEAD.unpack_from(value)
                out[_U64.unpack(bytes(key))[0]] = (lo, hi, bytes(value[_HEAD.size :]))
            return out

        return shared.read(read)

    # -- applying ---------------------------------------------------------------

    def start_worker(self) -> None:
        """Hand the next :meth:`apply` calls to a :class:`VectorWorker` (the
        shipped model only): a replay embeds on the other core while this
        process indexes. :meth:`stop_worker` waits for it."""
        self._worker = VectorWorker(self.path)

    def stop_worker(self, ok: bool = True) -> None:
        """Wait for the worker to apply what it was given (``ok``), or stop it
        at once (its transactions are whole: the checkpoint says what it applied)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close(ok)
            self._cache = None

    def apply(self, ops: Sequence[VectorOp], upto: int) -> int:
        """Embed the added texts (one call), then apply ``ops`` in order in one
        transaction that moves the checkpoint to ``upto``. Ops at or below the
        stored checkpoint are skipped. Returns the new checkpoint (with a
        worker: ``upto``, which it will reach)."""
        if self._worker is not None:
            return self._worker.apply(ops, upto)
        texts = [op[5] for op in ops if op[1] == "add"]
        vectors = self.embedder.embed(texts) if texts else None
        added = () if vectors is None else vectors.astype("<f2")
        dbs = self._env().dbs

        def write(txn: Any) -> int:
            # Called again when the map grows (SharedEnv.write retries): start the rows over.
            rows = iter(added)
            done = _meta_u64(txn, dbs[b"meta"], b"checkpoint")
            if done == 0:  # emptied by a process without a model: the vectors are this model's again
                txn.put(b"embedder", self.embedder.name.encode(), db=dbs[b"meta"])
            for n, (seq, op, rseq, lo, hi, _) in enumerate(ops):
                row = next(rows) if op == "add" else None
                if seq <= done:
                    continue
                key = _U64.pack(rseq)
                if row is not None:
                    txn.put(key, _HEAD.pack(lo, hi) + row.tobytes(), db=dbs[b"vectors"])
                else:
                    txn.delete(key, db=dbs[b"vectors"])
                txn.put(_CHANGE.pack(seq, n), key, db=dbs[b"changes"])
            if upto > done:
                txn.put(b"checkpoint", _U64.pack(upto), db=dbs[b"meta"])
            return max(upto, done)

        return self._env().write(write)

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
        since it was loaded, or everything after a purge or a model change."""
        shared = self._env()
        with shared.operation():
            generation = shared.generation
        dbs = shared.dbs

        def load(txn: Any) -> MatrixCache:
            at = _meta_u64(txn, dbs[b"meta"], b"checkpoint")
            epoch = _meta_u64(txn, dbs[b"meta"], b"epoch")
            if self._cache is None or generation != self._cache_generation or epoch != self._cache_epoch:
                self._cache = _load_all(txn, dbs[b"vectors"], self.embedder.dim)
            elif at != self._cache_at:
                _load_changes(txn, dbs, self._cache, self._cache_at)
            self._cache_at, self._cache_epoch = at, epoch
            return self._cache

        cache = shared.read(load)
        self._cache_generation = generation
        return cache

    # -- erasure ------------------------------------------------------------------

    def purge(self, timeout: float) -> list[str]:
        """Empty the change list, then rewrite the environment with a compacting
        copy (the old file zero-filled): no vector removed before remains.
        Returns the files rewritten."""
        dbs = self._env().dbs

        def trim(txn: Any) -> None:
            txn.drop(dbs[b"changes"], delete=False)
            _next_epoch(txn, dbs)

        self._env().write(trim)
        self._cache = None
        return [str(p) for p in purge_env(self._env(), timeout).files_rewritten]

    def files(self) -> Iterable[Path]:
        """Every file of the projection."""
        return (p for p in self.path.rglob("*") if p.is_file())


class VectorWorker:
    """A child Python process applying vector chunks in order
    (``VectorIndex.apply`` with the shipped model). Chunks go pickled through
    its stdin pipe, so the parent waits when the child is behind (the pipe is
    the bound on what is in flight). A plain subprocess, not
    :mod:`multiprocessing`: nothing of the parent's ``__main__`` runs again."""

    def __init__(self, path: Path) -> None:
        code = "from projections.embed.store import _worker_main; _worker_main()"
        self._proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL)  # never into a caller's --json
        assert self._proc.stdin is not None
        self._pipe = self._proc.stdin

    def apply(self, ops: Sequence[VectorOp], upto: int) -> int:
        """Send one chunk (raises if the worker died)."""
        try:
            pickle.dump((list(ops), upto), self._pipe, protocol=pickle.HIGHEST_PROTOCOL)
        except (BrokenPipeError, OSError):
            raise StorageError(f"the vector worker stopped (exit code {self._proc.poll()})") from None
        return upto

    def close(self, ok: bool) -> None:
        """Wait for the chunks sent (``ok``), else stop the worker now."""
        if not ok:
            self._proc.kill()
        with contextlib.suppress(BrokenPipeError, OSError):
            self._pipe.close()
        code = self._proc.wait()
        if ok and code != 0:
            raise StorageError(f"the vector worker failed (exit code {code})")


def _worker_main() -> None:
    """The worker's main: apply each chunk read from stdin until it closes."""
    from . import default_embedder

    embedder = default_embedder()
    assert embedder is not None
    vectors = VectorIndex(Path(sys.argv[1]), embedder)
    try:
        while True:
            try:
                ops, upto = pickle.load(sys.stdin.buffer)
            except EOFError:
                return
            vectors.apply(ops, upto)
    finally:
        vectors.close()


def purge_without_model(path: Path, timeout: float) -> list[str]:
    """Empty the vectors at ``path`` and rewrite their file (a purge by a
    process that has no embedder, so it cannot remove the deleted documents'
    vectors one by one): the processes that have one rebuild them from seq 0."""
    shared = open_shared_env(path, VECTOR_DBS)
    try:
        shared.write(lambda txn: _reset(txn, shared.dbs, "", 0))
        return [str(p) for p in purge_env(shared, timeout).files_rewritten]
    finally:
        release_shared_env(shared)


def _next_epoch(txn: Any, dbs: dict[bytes, Any], epoch: int | None = None) -> None:
    """Move the epoch on: every in-memory matrix loaded before reloads whole."""
    epoch = _meta_u64(txn, dbs[b"meta"], b"epoch") if epoch is None else epoch
    txn.put(b"epoch", _U64.pack(epoch + 1), db=dbs[b"meta"])


def _reset(txn: Any, dbs: dict[bytes, Any], model: str, dim: int) -> None:
    epoch = _meta_u64(txn, dbs[b"meta"], b"epoch")
    for name in VECTOR_DBS:
        txn.drop(dbs[name], delete=False)
    txn.put(b"embedder", model.encode(), db=dbs[b"meta"])
    txn.put(b"dim", _U64.pack(dim), db=dbs[b"meta"])
    _next_epoch(txn, dbs, epoch)


def _meta_u64(txn: Any, db: Any, key: bytes) -> int:
    raw = txn.get(key, db=db)
    return 0 if raw is None else int(_U64.unpack(bytes(raw))[0])


def _load_all(txn: Any, db: Any, dim: int) -> MatrixCache:
    import numpy as np

    from .cache import MatrixCache

    cache = MatrixCache(dim)
    for key, value in txn.cursor(db=db):
        lo, hi = _HEAD.unpack_from(value)
        cache.put(_U64.unpack(bytes(key))[0], lo, hi, np.frombuffer(value, dtype="<f2", offset=_HEAD.size))
    return cache


def _load_changes(txn: Any, dbs: dict[bytes, Any], cache: MatrixCache, after: int) -> None:
    import numpy as np

    cursor = txn.cursor(db=dbs[b"changes"])
    if not cursor.set_range(_U64.pack(after + 1)):
        return
    touched = {bytes(value) for _, value in cursor}
    for key in sorted(touched):
        rseq = _U64.unpack(key)[0]
        value = txn.get(key, db=dbs[b"vectors"])
        if value is None:
            cache.drop(rseq)
        else:
            lo, hi = _HEAD.unpack_from(value)
            cache.put(rseq, lo, hi, np.frombuffer(value, dtype="<f2", offset=_HEAD.size))
