"""The head, vouched for by the segments when a log is opened.

The main environment's head is the one source of truth for what was
committed, and a lost or stale main data file would silently shorten the log.
The payload segments can vouch for it, cheaply, because of the write order
(payloads first, then the headers and the head) and the append mark every
append leaves in each segment it writes (:data:`~.segments.MARK`: the head it
started from):

- every segment holding a seq at or below the head exists, unless every one
  of those seqs was erased (``erased``); its data file must be whole (checked
  against its meta pages, without mapping it);
- the head's own payload is stored, in ``recent`` or its segment (no tombstone can erase the last event:
  it would need a later one);
- no segment at or after the head's carries a mark beyond the head: that
  append started from a head this main environment never had, so the main
  file lost commits. A mark equal to the head is the one legal case: payloads
  of an append that crashed before its headers committed (they lie after the
  head; the next append overwrites them, a purge drops them);
- payloads after the head in a segment without a mark are no append's
  leftovers either.

The one loss these checks cannot see is the loss of exactly the last append,
which looks like that append's crash. The projections' checkpoints can vouch
for more later. Run on every open (and reopen) of a format 3 log; the cost is
a directory listing, two ``pread`` of each segment's meta pages, and one or
two small reads in the head's segment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import CorruptionError
from ..storage.shape import check_data_file
from .layout import ERASED, META, RECENT, read_head_state, seq_key
from .recent import read_sealed
from .segments import Segments

__all__ = ["check_head"]


def check_head(env: Any, dbs: dict[bytes, Any], segments: Segments, data_file: Path) -> None:
    """Check the head of the main environment ``env`` against ``segments``;
    :class:`CorruptionError` naming the file that lost data."""
    with env.begin() as txn:
        head = read_head_state(txn, dbs[META]).seq
        segments.required_upto = segments.index_of(head) if head else -1
        on_disk = set(segments.on_disk())
        for index in range(segments.required_upto + 1):
            if index not in on_disk and not _all_erased(txn, dbs[ERASED], segments, index, head):
                raise CorruptionError(
                    f"{segments.path(index)} is missing, but it holds payloads of seqs at or "
                    f"below the log's head (seq {head})")
    for index in sorted(i for i in on_disk if i <= segments.required_upto):
        check_data_file(segments.data_file(index), must_exist="the log's head lies after this segment")
    if head and not _head_payload_stored(env, dbs, segments, head):
        raise CorruptionError(
            f"{segments.data_file(segments.index_of(head))} lacks the payload of the log's "
            f"head (seq {head})", seq=head)
    for index in sorted(i for i in on_disk if i >= max(segments.required_upto, 0)):
        _check_mark(env, dbs, segments, index, head, data_file)


def _head_payload_stored(env: Any, dbs: dict[bytes, Any], segments: Segments, head: int) -> bool:
    """Whether the head's payload is stored: in ``recent`` when it was not
    sealed yet (:mod:`.recent`), else in its segment."""
    with env.begin() as txn:
        sealed = read_sealed(txn, dbs[META])
        if sealed is not None and head > sealed:
            return txn.get(seq_key(head), db=dbs[RECENT]) is not None
    return segments.payload(head) is not None


def _all_erased(txn: Any, erased: Any, segments: Segments, index: int, head: int) -> bool:
    """Whether every seq of segment ``index`` up to ``head`` was erased."""
    first, last = index * segments.span + 1, min((index + 1) * segments.span, head)
    cursor = txn.cursor(db=erased)
    count = 0
    if cursor.set_range(seq_key(first)):
        for key in cursor.iternext(values=False):
            if bytes(key) > seq_key(last):
                break
            count += 1
    return count == last - first + 1


def _check_mark(env: Any, dbs: dict[bytes, Any], segments: Segments, index: int, head: int,
                data_file: Path) -> None:
    mark = segments.mark(index)
    if mark is not None and mark > head:
        # Another process's append may have begun since the head was read: it
        # marks the head it found, which a fresh look sees.
        with env.begin() as txn:
            head = read_head_state(txn, dbs[META]).seq
    if mark is not None and mark > head:
        raise CorruptionError(
            f"{data_file} lost commits: its head is seq {head}, but "
            f"{segments.data_file(index)} holds payloads of an append that started "
            f"after seq {mark}", seq=head + 1)
    if mark is None and segments.last_seq(index) > head:
        raise CorruptionError(
            f"{segments.data_file(index)} holds payloads after the log's head (seq {head}) "
            f"that no append marked; {data_file} may have lost commits", seq=head + 1)
