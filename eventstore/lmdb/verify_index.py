"""Verifying the LMDB log's indexes against its headers.

The headers are chained, so the walk in :mod:`.verify` trusts them and checks
that the indexes the write path keeps beside them say the same:

- every header's ``(stream, version)`` has its ``stream_index`` entry, and it
  points at the header's seq; a stream's versions run 1, 2, 3... in seq order;
- the ``streams`` database holds, for every stream, its highest version (an
  append reads it to number the next event: a lowered version would make the
  next append reuse one, and ``read_stream`` would lose an event);
- every header's event id is in ``event_ids`` and points at its seq;
- neither index holds an entry no header accounts for (counted: the index
  entries of the headers are distinct, so equal counts mean no extra entry;
  only when the counts differ is the index walked to name the first extra).

Two point lookups per event; the walk's state is one counter per stream.
"""

from __future__ import annotations

from typing import Any

from ..chain import HASH_SIZE
from ..codec import decode_header
from ..envelope import Header
from ..errors import CorruptionError
from .layout import EVENT_IDS, HEADERS, STREAM_INDEX, STREAMS, seq_key, seq_of_key, stream_key

__all__ = ["IndexCheck", "Problems"]

_PREFIX = 2 * HASH_SIZE


class Problems:
    """The first problem found: the smallest seq and what is wrong there."""

    def __init__(self) -> None:
        self.bad_seq: int | None = None
        self.problem: str | None = None

    def fail(self, seq: int, problem: str) -> None:
        """Record a problem at ``seq`` (kept if it is the smallest so far)."""
        if self.bad_seq is None or seq < self.bad_seq:
            self.bad_seq, self.problem = seq, problem


class IndexCheck:
    """Checks the indexes, one header at a time, then as a whole."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any], problems: Problems) -> None:
        self.txn = txn
        self.dbs = dbs
        self.problems = problems
        self.streams: dict[str, list[int]] = {}  # stream -> [events seen, last seq]

    def add(self, seq: int, header: Header) -> None:
        """Check the index entries of one header."""
        key = seq_key(seq)
        state = self.streams.get(header.stream)
        if state is None:
            state = self.streams[header.stream] = [0, 0]
        state[0] += 1
        state[1] = seq
        fail = self.problems.fail
        if header.version != state[0]:
            fail(seq, f"seq {seq} has version {header.version} of stream {header.stream}, "
                      f"but it is the stream's event {state[0]}")
        where = stream_key(header.stream, header.version)
        if self.txn.get(where, db=self.dbs[STREAM_INDEX]) != key:
            fail(seq, f"the stream index entry of seq {seq} is missing or points elsewhere")
        if self.txn.get(header.id.encode(), db=self.dbs[EVENT_IDS]) != key:
            fail(seq, f"the event id of seq {seq} is missing from the id index or points elsewhere")

    def finish(self, events: int, head: int) -> None:
        """Check the stream versions and look for entries no header accounts for."""
        self._check_versions(head)
        if self.txn.stat(self.dbs[STREAM_INDEX])["entries"] != events:
            self._find_extra(STREAM_INDEX, head, lambda h, key: key == stream_key(h.stream, h.version))
        if self.txn.stat(self.dbs[EVENT_IDS])["entries"] != events:
            self._find_extra(EVENT_IDS, head, lambda h, key: key == h.id.encode())

    def _check_versions(self, head: int) -> None:
        seen = 0
        for key, value in self.txn.cursor(db=self.dbs[STREAMS]).iternext():
            stream = bytes(key).decode(errors="replace")
            state = self.streams.get(stream)
            if state is None:
                self.problems.fail(head + 1, f"stream {stream} has a version but no events")
                continue
            seen += 1
            if seq_of_key(value) != state[0]:
                self.problems.fail(state[1], f"stream {stream} is recorded at version "
                                             f"{seq_of_key(value)}, but its last event is {state[0]}")
        if seen != len(self.streams):
            missing = [s for s in self.streams if self.txn.get(s.encode(), db=self.dbs[STREAMS]) is None]
            for stream in missing:
                self.problems.fail(self.streams[stream][1], f"stream {stream} has no recorded version")

    def _find_extra(self, name: bytes, head: int, matches: Any) -> None:
        """Name the first entry of index ``name`` that no header accounts for."""
        for key, value in self.txn.cursor(db=self.dbs[name]).iternext():
            seq = seq_of_key(value) if len(value) == 8 else 0
            raw = self.txn.get(seq_key(seq), db=self.dbs[HEADERS]) if seq >= 1 else None
            try:
                ok = raw is not None and matches(decode_header(raw[_PREFIX:], seq), bytes(key))
            except CorruptionError:
                ok = False  # the walk reports the header itself
            if not ok:
                where = seq if 1 <= seq <= head else head + 1
                self.problems.fail(where, f"the {name.decode()} index holds an entry for seq {seq} "
                                          "that no header accounts for")
                return
