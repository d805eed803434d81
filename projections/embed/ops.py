"""The vector projection's operations: the search index's, with the text to embed.

:func:`vector_ops` maps :func:`projections.search.apply.search_ops` (the one
definition of what each record does to the indexed documents) to
:data:`~projections.embed.store.VectorOp` tuples, so a vector exists exactly
for each indexed document version, under the same rseq and interval.
"""

from __future__ import annotations

from typing import Any

import msgspec

from eventstore import RecordedEvent

from ..search.apply import search_ops
from ..views.read import ViewReader
from .store import VectorOp

__all__ = ["vector_ops"]

_OPEN = (1 << 63) - 1


class _Doc(msgspec.Struct):
    """The fields of a search document the vectors need."""

    rseq: int
    from_seq: int
    content: str = ""
    to_seq: int = _OPEN


_decode = msgspec.json.Decoder(_Doc).decode


def vector_ops(rec: RecordedEvent, views: ViewReader) -> list[VectorOp]:
    """The vector operations of one record; ``views`` reads as of ``rec.seq``."""
    out: list[VectorOp] = []
    for op, _, arg in search_ops(rec, views):
        if op == "add":
            doc = _decode(_as_bytes(arg))
            out.append((rec.seq, "add", doc.rseq, doc.from_seq, doc.to_seq, doc.content))
        elif op == "remove":
            out.append((rec.seq, "remove", int(arg), 0, 0, ""))
    return out


def _as_bytes(doc: Any) -> bytes:
    return doc.encode() if isinstance(doc, str) else bytes(doc)
