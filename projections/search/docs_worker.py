"""A second process making half of a shard's documents, for a rebuild.

A shard rebuild (a purge, ``memlog replay --projection search``) is bound by
making the documents in Python: each entry's version from the views, its text
from the log payload (read and checked against its commitment), its JSON. At
1M entries and 16 shards that is about 45 µs a document, 2.8 s for a shard of
62,500, while Tantivy's writer threads index them in about 1 s. A child
process makes the documents of the upper half of the shard's hash range on
the other core while this one makes the lower half; it sends them through its
stdout pipe in pickled batches, and a thread here collects them. They are
handed on after this process's own, so the order is exactly the one process's
(hash order): the shard is the same whichever way it was made.

Both halves must come from one state of the views. The child reads its own
snapshot, so it first reports that snapshot's checkpoint; when it differs from
the parent's (another process applied records in between), or when the child
fails in any way, the parent makes the upper half itself. Nothing is written
to a file: the texts only cross the pipe.

Only a local (LMDB) log is read by a child; a shared log (``nats://``) keeps
the one-process path. The child's main is :func:`.docs.worker_main`.
"""

from __future__ import annotations

import contextlib
import pickle
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from .._child import child_argv, child_env

__all__ = ["SPLIT_FROM", "DocWorker", "send_docs"]

SPLIT_FROM = 20_000  # entries in a shard below which one process makes all its documents
_BATCH = 2_000  # documents a pickled batch carries


class DocWorker:
    """The child making the entry documents whose ``crc32(id)`` lies in
    ``[low, high)``; it starts at once, and :meth:`docs` waits for them."""

    def __init__(self, log_path: Path, views_path: Path, low: int, high: int) -> None:
        code = "from projections.search.docs import worker_main; worker_main()"
        argv = child_argv(code, str(log_path.resolve()), str(views_path.resolve()), str(low), str(high))
        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, env=child_env())
        assert self._proc.stdout is not None
        self._out: IO[bytes] = self._proc.stdout
        self._checkpoint: int | None = None
        self._batches: list[list[str]] = []
        self._done = False
        self._reader = threading.Thread(target=self._collect, name="memlog-docs", daemon=True)
        try:
            self._reader.start()
        except RuntimeError:
            self._proc.kill()
            self._proc.wait()
            raise

    def _collect(self) -> None:
        """Read the checkpoint, then batches until the child's end mark (an
        empty batch); any failure leaves :attr:`_done` False."""
        try:
            first = pickle.load(self._out)
            if type(first) is not int:
                return
            self._checkpoint = first
            while batch := pickle.load(self._out):
                self._batches.append(batch)
            self._done = True
        except Exception:  # the child failed: the parent makes its half
            return

    def docs(self, checkpoint: int) -> list[str] | None:
        """Every document the child made, in its order, when it made them from
        the views at ``checkpoint``; None when it failed or read another state."""
        self._reader.join()
        ok = self._proc.wait() == 0 and self._done and self._checkpoint == checkpoint
        return [doc for batch in self._batches for doc in batch] if ok else None

    def close(self) -> None:
        """Stop the child (when it is still running: asked first, so it closes
        its environments and frees its LMDB reader slots) and release the pipe."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc.wait()
        self._reader.join()
        with contextlib.suppress(OSError):
            self._out.close()
        self._batches = []


def send_docs(out: IO[bytes], checkpoint: int, docs: Iterable[str]) -> None:
    """The child's side (:func:`projections.search.docs.worker_main`): the
    checkpoint of its snapshot, the documents in batches, an empty end mark."""
    _send(out, checkpoint)
    batch: list[str] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= _BATCH:
            _send(out, batch)
            batch = []
    if batch:
        _send(out, batch)
    _send(out, [])
    out.flush()


def _send(out: IO[bytes], value: Any) -> None:
    pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
