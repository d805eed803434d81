"""The vector worker of a replay, and the vectors it embeds ahead.

A replay builds the views first, then the search index, which feeds the
vectors their operations (:class:`~projections.embed.ops.VectorFeed`). The
shipped model embeds in a child process (:class:`VectorWorker`) on the other
core, but the views come first and need no vector, so that core used to idle
through them while the embedding, the largest part of the vectors' work,
waited for the search pass.

So the worker starts with the replay and, while no chunk waits on its pipe,
reads the log itself and embeds the texts of the ``entry.recorded`` records
ahead (:class:`Ahead`), up to about ``AHEAD_MAX`` bytes of rows in its memory
(nothing ahead is written to a file). When the search pass asks for a
vector, the worker takes it from what it embedded ahead if it embedded the
same text for the same rseq (a 16-byte BLAKE2b digest of the text decides),
and embeds the others as before; the rows it passed are let go, and it embeds
further ahead whenever the search pass leaves it idle. The embedding of a
text depends on the text alone (each row is summed and normalised on its
own), so the vectors are the same bytes either way. Chunks from the parent
always go first.

Chunks cross the pipe as frames (``u64`` length, then the pickled chunk), so
the worker knows when none waits without blocking.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import select
import struct
import subprocess
from array import array
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eventstore import EntryRecorded, EventLog, RecordedEvent, StorageError

from .._child import child_argv, child_env
from ..search.index import searchable_text
from .protocol import Embedder

__all__ = ["AHEAD_MAX", "AHEAD_RECORDS", "AHEAD_STEP", "Ahead", "VectorWorker", "digest", "read_frame",
           "waiting"]

AHEAD_MAX = 48 << 20  # bytes of rows embedded ahead before the worker waits (95,325 at 256 dimensions)
AHEAD_STEP = 256  # entries embedded ahead between looks at the pipe
AHEAD_RECORDS = 4_096  # records read between looks at the pipe
_LEN = struct.Struct(">Q")
_DIGEST = 16


def digest(text: str) -> bytes:
    """What identifies the text a row embedded ahead was made from."""
    return hashlib.blake2b(text.encode(), digest_size=_DIGEST).digest()


class VectorWorker:
    """A child Python process applying vector chunks in order
    (``VectorIndex.apply`` with the shipped model), and embedding ahead from
    ``log`` (records after ``after`` up to ``last``) when given. Chunks go
    pickled through its stdin pipe, so the parent waits when the child is
    behind (the pipe is the bound on what is in flight). A plain subprocess,
    not :mod:`multiprocessing`: nothing of the parent's ``__main__`` runs again."""

    def __init__(self, path: Path, log: Path | None = None, after: int = 0, last: int = 0) -> None:
        code = "from projections.embed.store import worker_main; worker_main()"
        args = [str(path)] if log is None else [str(path), str(log.resolve()), str(after), str(last)]
        self._proc = subprocess.Popen(child_argv(code, *args), stdin=subprocess.PIPE, env=child_env(),
                                      stdout=subprocess.DEVNULL)  # never into a caller's --json
        assert self._proc.stdin is not None
        self._pipe = self._proc.stdin

    def apply(self, ops: list[Any], upto: int) -> int:
        """Send one chunk (raises if the worker died)."""
        data = pickle.dumps((ops, upto), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._pipe.write(_LEN.pack(len(data)))
            self._pipe.write(data)
        except (BrokenPipeError, OSError):
            raise StorageError(f"the vector worker stopped (exit code {self._proc.poll()})") from None
        return upto

    def close(self, ok: bool) -> None:
        """Wait for the chunks sent (``ok``), else stop the worker now (asked
        first, so it closes the log and frees its LMDB reader slot)."""
        if not ok and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        with contextlib.suppress(BrokenPipeError, OSError):
            self._pipe.close()
        code = self._proc.wait()
        if ok and code != 0:
            raise StorageError(f"the vector worker failed (exit code {code})")


def waiting(fd: int) -> bool:
    """Whether the pipe at ``fd`` has something to read (a chunk, or its end)."""
    return bool(select.select([fd], [], [], 0)[0])


def read_frame(fd: int) -> bytes | None:
    """The next frame's body from ``fd``, or None at the pipe's end."""
    head = _read_exactly(fd, _LEN.size)
    if head is None:
        return None
    body = _read_exactly(fd, _LEN.unpack(head)[0])
    if body is None:
        raise EOFError("the vector worker's pipe ended inside a chunk")
    return body


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            if left == size:
                return None
            raise EOFError("the vector worker's pipe ended inside a chunk")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class Ahead:
    """The rows embedded ahead (see the module doc): :meth:`step` embeds the
    next records' texts, :meth:`take` hands a row back once, in rseq order, and
    lets go of the rows it passed. ``own``: :meth:`close` (and the end of the
    records) closes ``log``."""

    def __init__(self, log: EventLog, after: int, last: int, embedder: Embedder, own: bool = False) -> None:
        self.embedder = embedder
        self.size = _DIGEST + 2 * embedder.dim  # a row: the text's digest, the float16 vector
        self.held = 0  # bytes of the rows held
        self.taken = 0  # rows handed back
        self.passed = after  # the highest rseq asked for: nothing at or below it is embedded
        self._blocks: deque[tuple[array[int], bytes]] = deque()  # (rseqs, their rows), ascending
        self._at = 0  # the next row of the first block
        self._log: EventLog | None = log
        self._own, self._last = own, last
        self._next = after + 1  # the seq the records are read from next
        self._records: Iterator[RecordedEvent] | None = None
        if last > after:
            self._records = iter(log.read(after + 1, last))
        else:
            self.close()

    def close(self) -> None:
        """Read no more records (the log is closed when owned)."""
        self._records = None
        log, self._log = self._log, None
        if log is not None and self._own:
            log.close()

    @property
    def done(self) -> bool:
        """Whether nothing more will be read from the log."""
        return self._records is None

    @property
    def full(self) -> bool:
        """Whether ``AHEAD_MAX`` bytes of rows wait (none is embedded ahead
        until :meth:`take` lets some go)."""
        return self.held >= AHEAD_MAX

    def step(self) -> None:
        """Embed the texts of the next records past what was asked for
        (``AHEAD_STEP`` entries, ``AHEAD_RECORDS`` records at most)."""
        if self._records is None or self._log is None:
            return
        if self.passed - self._next >= AHEAD_RECORDS:  # asked far past the reading: read on from there
            if self.passed >= self._last:
                self.close()
                return
            self._records, self._next = iter(self._log.read(self.passed + 1, self._last)), self.passed + 1
        seqs, texts = array("q"), []
        for n, rec in enumerate(self._records, 1):
            self._next = rec.seq + 1
            if rec.seq > self.passed and isinstance(rec.event, EntryRecorded):
                seqs.append(rec.seq)
                texts.append(searchable_text(rec.event))
            if len(texts) == AHEAD_STEP or n == AHEAD_RECORDS:
                break
        else:
            self.close()  # the last record was read
        if texts:
            rows = self.embedder.embed(texts).astype("<f2")
            blob = b"".join(digest(t) + row.tobytes() for t, row in zip(texts, rows, strict=True))
            self._blocks.append((seqs, blob))
            self.held += len(blob)

    def take(self, rseq: int, text: str) -> bytes | None:
        """The float16 row of ``text`` embedded ahead at ``rseq``, or None (not
        embedded ahead, another text, or taken already)."""
        self.passed = max(self.passed, rseq)
        blocks = self._blocks
        while blocks:
            seqs, blob = blocks[0]
            at = self._at
            while at < len(seqs) and seqs[at] < rseq:
                at += 1
            self._at = at
            if at < len(seqs):
                break
            blocks.popleft()  # every row of the block passed
            self.held -= len(blob)
            self._at = 0
        else:
            return None
        if seqs[at] != rseq:
            return None
        self._at = at + 1
        row = blob[at * self.size : (at + 1) * self.size]
        if row[:_DIGEST] != digest(text):
            return None
        self.taken += 1
        return row[_DIGEST:]
