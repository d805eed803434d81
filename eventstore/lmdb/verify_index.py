"""Verifying the LMDB log's indexes against its headers.

The headers are chained, so the walk in :mod:`.verify` trusts the intact ones
and checks that the indexes the write path keeps beside them say the same:

- every header's ``(stream, version)`` has its ``stream_index`` entry, and it
  points at the header's seq; a stream's versions run 1, 2, 3... in seq order;
- the ``streams`` database holds, for every stream, its highest version (an
  append reads it to number the next event: a lowered version would make the
  next append reuse one);
- every header's event id is in ``event_ids`` and points at its seq;
- neither index holds an entry no header accounts for: the entries of the
  headers are distinct keys, so an index holding as many entries as there
  are events holds no other; only when the counts differ is it walked to name
  the first extra entry.

Two point lookups per event, in seq order (about 0.5 us each: time-ordered
event ids and a stream's versions sit next to each other in their B-trees;
reading each index in its own order and matching hashes of the keys measured
slower); the walk keeps one counter per stream.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from ..chain import HASH_SIZE
from ..codec import decode_header
from ..envelope import Header
from ..errors import CorruptionError
from .layout import EVENT_IDS, HEADERS, STREAM_INDEX, STREAMS, seq_key, seq_of_key, stream_key

__all__ = ["IndexCheck", "Problems"]

_U64 = struct.Struct(">Q").pack
_PREFIX = 2 * HASH_SIZE
Buffer = bytes | memoryview  # read buffers stay valid for the whole walk


class Problems:
    """The first problem found: the smallest seq and what is wrong there."""

    def __init__(self) -> None:
        self.bad_seq: int | None = None
        self.problem: str | None = None

    def fail(self, seq: int, problem: str) -> None:
        """Record a problem at ``seq`` (kept if it is the smallest so far)."""
        if self.bad_seq is None or seq < self.bad_seq:
            self.bad_seq, self.problem = seq, problem


class _Stream:
    """What the walk saw of one stream."""

    __slots__ = ("events", "last", "prefix")

    def __init__(self, stream: str) -> None:
        self.events = 0  # events seen, so the last version
        self.last = 0  # seq of the last one
        self.prefix = stream.encode() + b"\x00"  # its stream index keys start so


class IndexCheck:
    """Checks the indexes: one header at a time as the walk goes, then each
    index as a whole."""

    def __init__(self, txn: Any, dbs: dict[bytes, Any], problems: Problems) -> None:
        self.txn = txn
        self.dbs = dbs
        self.problems = problems
        self.streams: dict[str, _Stream] = {}
        self.events = 0

    def add(self, key: Buffer, header: Header | None) -> None:
        """Check the index entries of one header (``key``: its seq as stored;
        ``header``: None when it is not intact, which the walk reports)."""
        self.events += 1
        if header is None:
            return
        state = self.streams.get(header.stream)
        if state is None:
            state = self.streams[header.stream] = _Stream(header.stream)
        state.events += 1
        state.last = header.seq
        get, dbs = self.txn.get, self.dbs
        if header.version != state.events:
            self.problems.fail(header.seq, f"seq {header.seq} has version {header.version} of stream "
                                           f"{header.stream}, but it is the stream's event {state.events}")
        if get(state.prefix + _U64(header.version), db=dbs[STREAM_INDEX]) != key:
            self.problems.fail(header.seq, f"the stream_index entry of seq {header.seq} is missing "
                                           "or points elsewhere")
        if get(header.id.encode(), db=dbs[EVENT_IDS]) != key:
            self.problems.fail(header.seq, f"the event_ids entry of seq {header.seq} is missing "
                                           "or points elsewhere")

    def finish(self, head: int) -> None:
        """Check the stream versions, and look for entries no header accounts for."""
        self._check_versions(head)
        if self.txn.stat(self.dbs[STREAM_INDEX])["entries"] != self.events:
            self._find_extra(STREAM_INDEX, head, lambda h, key: key == stream_key(h.stream, h.version))
        if self.txn.stat(self.dbs[EVENT_IDS])["entries"] != self.events:
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
            if seq_of_key(value) != state.events:
                self.problems.fail(state.last, f"stream {stream} is recorded at version "
                                               f"{seq_of_key(value)}, but its last event is {state.events}")
        if seen != len(self.streams):
            missing = [s for s in self.streams if self.txn.get(s.encode(), db=self.dbs[STREAMS]) is None]
            for stream in missing:
                self.problems.fail(self.streams[stream].last, f"stream {stream} has no recorded version")

    def _find_extra(self, name: bytes, head: int, matches: Callable[[Header, bytes], bool]) -> None:
        """Name the first entry of index ``name`` that no header accounts for."""
        for key, value in self.txn.cursor(db=self.dbs[name]).iternext():
            try:
                seq = seq_of_key(value)
                raw = self.txn.get(seq_key(seq), db=self.dbs[HEADERS]) if seq >= 1 else None
                ok = raw is not None and matches(decode_header(raw[_PREFIX:], seq), bytes(key))
            except CorruptionError:
                seq, ok = 0, False
            if not ok:
                where = min(max(seq, 1), head + 1)
                self.problems.fail(where, f"the {name.decode()} index holds an entry for seq {seq} "
                                          "that no header accounts for")
                return
