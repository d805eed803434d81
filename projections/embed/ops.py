"""The vector projection's operations: the search index's, with the text to embed.

:func:`vector_ops` maps :func:`projections.search.apply.search_ops` (the one
definition of what each record does to the indexed documents) to
:data:`~projections.embed.store.VectorOp` tuples, so a vector exists exactly
for each indexed document version, under the same rseq and interval. An
edited entry, whose texts share one rseq, has one vector: its current text's,
over the interval of all its documents.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eventstore import RecordedEvent

from ..search.apply import Op, search_ops
from ..search.index import OPEN_SEQ
from ..views.read import ViewReader
from .store import VectorIndex, VectorOp

__all__ = ["VectorFeed", "from_search_ops", "vector_ops"]

class _Doc(msgspec.Struct):
    """The fields of a search document the vectors need."""

    rseq: int
    from_seq: int
    content: str = ""
    to_seq: int = OPEN_SEQ


_decode = msgspec.json.Decoder(_Doc).decode


def vector_ops(rec: RecordedEvent, views: ViewReader) -> list[VectorOp]:
    """The vector operations of one record; ``views`` reads as of ``rec.seq``."""
    return from_search_ops(rec.seq, search_ops(rec, views))


def from_search_ops(seq: int, ops: Iterable[Op]) -> list[VectorOp]:
    """The vector operations of the search operations of the record at ``seq``."""
    out: list[VectorOp] = []
    for op, _, arg in ops:
        if op == "add":
            doc = _decode(arg)
            start = doc.from_seq
            if out and out[-1][1] == "add" and out[-1][2] == doc.rseq:
                # an edited entry's earlier text: one vector per rseq, its current text's,
                # over the entry's whole interval
                start = out.pop()[3]
            out.append((seq, "add", doc.rseq, start, doc.to_seq, doc.content))
        elif op == "remove":
            out.append((seq, "remove", int(arg), 0, 0, ""))
    return out


class VectorFeed:
    """Vector operations collected while the search index catches up (the
    record's search operations computed once for both), applied a chunk at a
    time; records at or below the vectors' checkpoint are left out."""

    def __init__(self, vectors: VectorIndex, chunk: int) -> None:
        self.vectors = vectors
        self.chunk = chunk
        self.done = vectors.checkpoint()
        self.last = self.done
        self.ops: list[VectorOp] = []

    def add(self, seq: int, ops: Iterable[Op]) -> None:
        """The search operations of the record at ``seq`` (none when it was skipped)."""
        if seq <= self.done:
            return
        self.ops += from_search_ops(seq, ops)
        self.last = seq
        if len(self.ops) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        """Apply what was collected, moving the checkpoint to the last record seen."""
        if self.last > self.done:
            self.done = self.vectors.apply(self.ops, self.last)
        self.ops = []

