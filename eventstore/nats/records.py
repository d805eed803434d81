"""What the NATS log stores, and the client's index of it.

One JetStream stream ``<name>`` holds three kinds of message:

- ``<name>.p``: one payload per event, ``salt(32) || payload``; erasable
  (``STREAM.MSG.DELETE`` with erase on);
- ``<name>.h``: commit chunks, :class:`Chunk`: for up to :data:`CHUNK_EVENTS`
  events each, the chain hash, the commitment, the header bytes (exactly as
  the LMDB log stores them) and the stream seq of the payload message. Never
  deleted. An append is one atomic batch of chunks and markers;
- ``<name>.v.<hex(stream)>``: one marker per log stream an append touched
  (its new version), so that JetStream checks the stream's expected version
  (``Nats-Expected-Last-Subject-Sequence``).

Every client keeps an :class:`Index` of the chunks, caught up from the server
before each operation (one batched direct get when nothing is new).
"""

from __future__ import annotations

from bisect import bisect_right

import msgspec

from ..chain import GENESIS
from ..codec import decode_header
from ..envelope import Header
from ..errors import CorruptionError, EventNotFoundError

__all__ = ["CHUNK_BYTES", "CHUNK_EVENTS", "Chunk", "Index", "Record", "decode_chunk", "encode_chunk"]

CHUNK_EVENTS = 512
CHUNK_BYTES = 600_000  # under the default max_payload of 1 MiB


class Record(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One event in a chunk."""

    chain: bytes
    commitment: bytes
    header: bytes
    payload_seq: int  # the stream seq of its payload message


class Chunk(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A commit chunk. The first chunk of an append names how many chunks the
    append has (``parts``) and the markers that follow them (``marks``)."""

    first: int
    records: tuple[Record, ...]
    parts: int = 1
    marks: tuple[tuple[str, int], ...] = ()


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Chunk).decode


def encode_chunk(chunk: Chunk) -> bytes:
    """The bytes of a commit chunk message."""
    return _encode(chunk)


def decode_chunk(data: bytes, stream_seq: int) -> Chunk:
    """Decode a commit chunk; :class:`CorruptionError` when it does not."""
    try:
        return _decode(data)
    except msgspec.DecodeError:
        raise CorruptionError(f"the commit chunk at stream seq {stream_seq} does not decode") from None


class Index:
    """The client's view of the log, built from the commit chunks in order."""

    def __init__(self) -> None:
        self.last_chunk = 0  # stream seq of the last chunk taken in
        self.seq = 0
        self.hash = GENESIS
        self.time = 0
        self.firsts: list[int] = []  # per chunk: first event seq
        self.chunk_seqs: list[int] = []  # per chunk: its stream seq
        self.times: list[int] = []  # per chunk: recorded_at of its events
        self.ids: dict[str, int] = {}
        self.streams: dict[str, list[int]] = {}  # event seqs in version order
        self.marks: dict[str, int] = {}  # log stream -> stream seq of its last marker
        self.erased: set[int] = set()

    def add(self, stream_seq: int, chunk: Chunk) -> None:
        """Take in the next chunk (at ``stream_seq``)."""
        if chunk.first != self.seq + 1 or not chunk.records:
            raise CorruptionError(f"the commit chunk at stream seq {stream_seq} starts at seq "
                                  f"{chunk.first}, not {self.seq + 1}", seq=self.seq + 1)
        for offset, (stream, _version) in enumerate(chunk.marks):
            self.marks[stream] = stream_seq + chunk.parts + offset
        seq, header = chunk.first, None
        for record in chunk.records:
            header = decode_header(record.header, seq)
            self.ids[header.id] = seq
            self.streams.setdefault(header.stream, []).append(seq)
            self.erased.update(header.erases)
            seq += 1
        assert header is not None
        self.firsts.append(chunk.first)
        self.chunk_seqs.append(stream_seq)
        self.times.append(header.recorded_at)
        self.last_chunk = stream_seq
        self.seq, self.hash, self.time = seq - 1, chunk.records[-1].chain, header.recorded_at

    def locate(self, seq: int) -> tuple[int, int]:
        """(chunk position, offset in it) of event ``seq``."""
        if not 1 <= seq <= self.seq:
            raise EventNotFoundError(f"no event at seq {seq}")
        pos = bisect_right(self.firsts, seq) - 1
        return pos, seq - self.firsts[pos]

    def last_of(self, pos: int) -> int:
        """The last event seq of chunk ``pos``."""
        return self.firsts[pos + 1] - 1 if pos + 1 < len(self.firsts) else self.seq

    def seq_at(self, time_us: int) -> int:
        """The last seq recorded at or before ``time_us``."""
        pos = bisect_right(self.times, time_us) - 1
        return 0 if pos < 0 else self.last_of(pos)

    def version(self, stream: str) -> int:
        """The stream's last version."""
        return len(self.streams.get(stream, ()))


def header_of(record: Record, seq: int) -> Header:
    """The decoded header of a record."""
    return decode_header(record.header, seq)
