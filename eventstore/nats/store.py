"""The stream behind a NATS log: creating it, catching the index up, and
fetching chunks and payloads in batches (batched direct gets, server >= 2.11).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from hashlib import sha256

from ..chain import SALT_SIZE
from ..codec import decode_payload
from ..envelope import RecordedEvent
from ..errors import CorruptionError
from .client import NatsApiError, NatsClient, NatsUnsupportedError
from .records import Chunk, Index, Record, decode_chunk, header_of
from .url import NatsLocation

__all__ = ["Store"]

_STREAM_NOT_FOUND = 10059
_FETCH = 256  # chunks or payloads per batched direct get
_MAX_BYTES = 8 << 20
_CACHE = 512


class Store:
    """One NATS log stream as seen by this client."""

    def __init__(self, location: NatsLocation) -> None:
        self.name = location.stream
        self.h_subject = f"{self.name}.h"
        self.p_subject = f"{self.name}.p"
        self.client = NatsClient(location)
        self.lock = threading.RLock()
        self.index = Index()
        self._chunks: dict[int, Chunk] = {}
        self.erased_done: set[int] = set()  # erased event seqs whose payload this client deleted
        self.swept_to = 0  # stream seq up to which this client's purges swept orphan payloads
        # Whether other writers are appending: then an append catches the index up
        # beside its payloads; else it relies on its commit's compare-and-set
        # (write.py, step 2). Set by each append's first commit attempt.
        self.contended = True
        try:
            self.replicas = self.client.run(self._ensure_stream(location.replicas))
        except BaseException:
            self.client.close()
            raise

    def marker_subject(self, stream: str) -> str:
        """The subject of a log stream's version markers."""
        return f"{self.name}.v.{stream.encode().hex()}"

    async def _ensure_stream(self, replicas: int | None) -> int:
        """Create the stream if missing; check (or turn on) what the log needs."""
        try:
            info = await self.client.api(f"$JS.API.STREAM.INFO.{self.name}")
        except NatsApiError as exc:
            if exc.err_code != _STREAM_NOT_FOUND:
                raise
            clustered = bool(self.client.server_info.get("cluster"))
            config = {
                "name": self.name, "subjects": [self.h_subject, self.p_subject, f"{self.name}.v.*"],
                "storage": "file", "retention": "limits", "discard": "new",
                "num_replicas": replicas or (3 if clustered else 1),
                "allow_atomic": True, "allow_direct": True, "deny_purge": True,
                "duplicate_window": 120_000_000_000,
            }
            info = await self.client.api(f"$JS.API.STREAM.CREATE.{self.name}", config)
        config = info["config"]
        if config.get("deny_delete") or config.get("max_msgs", -1) != -1 or config.get("max_age", 0):
            raise NatsUnsupportedError(f"stream {self.name} may lose or keep messages against the log's "
                                       "needs (deny_delete, max_msgs or max_age is set)")
        if not config.get("allow_atomic") or not config.get("allow_direct"):
            config.update(allow_atomic=True, allow_direct=True)
            info = await self.client.api(f"$JS.API.STREAM.UPDATE.{self.name}", config)
        return int(info["config"].get("num_replicas", 1))

    def close(self) -> None:
        """Close the connection."""
        self.client.close()

    # -- the index ---------------------------------------------------------

    def catch_up(self) -> Index:
        """Take in every chunk committed since the last look."""
        with self.lock:
            while True:
                msgs, pending = self.client.run(self.client.direct_page(self.name, {
                    "seq": self.index.last_chunk + 1, "next_by_subj": self.h_subject,
                    "batch": _FETCH, "max_bytes": _MAX_BYTES}))
                for msg in msgs:
                    stream_seq = int(msg.headers["Nats-Sequence"])  # type: ignore[index]
                    self.add(stream_seq, decode_chunk(msg.data, stream_seq))
                if not msgs or pending == 0:  # the end marker says nothing follows
                    return self.index

    def add(self, stream_seq: int, chunk: Chunk) -> None:
        """Take in a chunk known to be committed at ``stream_seq``."""
        self.index.add(stream_seq, chunk)
        self._remember(stream_seq, chunk)

    def _remember(self, stream_seq: int, chunk: Chunk) -> None:
        if len(self._chunks) >= _CACHE:
            self._chunks.clear()
        self._chunks[stream_seq] = chunk

    def chunks(self, positions: Sequence[int]) -> dict[int, Chunk]:
        """The chunks at index ``positions`` (sorted), fetched in batches."""
        index, out = self.index, {}
        missing = []
        for pos in positions:
            found = self._chunks.get(index.chunk_seqs[pos])
            if found is None:
                missing.append(pos)
            else:
                out[pos] = found
        while missing:
            lo = missing[0]
            span = [p for p in missing if p - lo < _FETCH]
            msgs = self.client.run(self.client.direct_batch(self.name, {
                "seq": index.chunk_seqs[lo], "next_by_subj": self.h_subject,
                "batch": span[-1] - lo + 1, "max_bytes": _MAX_BYTES}))
            by_seq = {int(m.headers["Nats-Sequence"]): m for m in msgs}  # type: ignore[index]
            for pos in span:
                msg = by_seq.get(index.chunk_seqs[pos])
                if msg is None:
                    raise CorruptionError(f"the commit chunk of seq {index.firsts[pos]} is missing",
                                          seq=index.firsts[pos])
                out[pos] = decode_chunk(msg.data, index.chunk_seqs[pos])
                self._remember(index.chunk_seqs[pos], out[pos])
            missing = missing[len(span):]
        return out

    def payloads(self, stream_seqs: Iterable[int]) -> dict[int, bytes]:
        """The payload messages at ``stream_seqs`` that exist (erased ones do not)."""
        want = set(stream_seqs)
        wanted = sorted(want)
        out: dict[int, bytes] = {}
        i = 0
        while i < len(wanted):
            start, stop = wanted[i], wanted[min(i + _FETCH, len(wanted)) - 1]
            msgs = self.client.run(self.client.direct_batch(self.name, {
                "seq": start, "next_by_subj": self.p_subject, "batch": min(stop - start + 1, 4096),
                "max_bytes": _MAX_BYTES}))
            if not msgs:
                break
            for msg in msgs:
                seq = int(msg.headers["Nats-Sequence"])  # type: ignore[index]
                if seq in want:
                    out[seq] = msg.data
            last = int(msgs[-1].headers["Nats-Sequence"])  # type: ignore[index]
            while i < len(wanted) and wanted[i] <= last:
                i += 1
        return out

    def payload_stamps(self, start: int = 1) -> list[tuple[int, float]]:
        """Every stored payload message from stream seq ``start``: (stream seq,
        publish time in seconds)."""
        out: list[tuple[int, float]] = []
        while True:
            msgs = self.client.run(self.client.direct_batch(self.name, {
                "seq": start, "next_by_subj": self.p_subject, "batch": 1024, "max_bytes": _MAX_BYTES}))
            if not msgs:
                return out
            for msg in msgs:
                headers = msg.headers or {}
                out.append((int(headers["Nats-Sequence"]), _stamp(headers.get("Nats-Time-Stamp", ""))))
            start = out[-1][0] + 1

    # -- records -----------------------------------------------------------

    def chunk_records(self, seqs: Sequence[int]) -> list[Record]:
        """The stored records (chain, commitment, header, payload pointer) of ``seqs``."""
        located = [self.index.locate(seq) for seq in seqs]
        chunks = self.chunks(sorted({pos for pos, _ in located}))
        return [chunks[pos].records[off] for pos, off in located]

    def records(self, seqs: Sequence[int]) -> list[RecordedEvent]:
        """The records of ``seqs`` (each <= the index head), payloads checked
        against their commitments; an erased payload reads as None."""
        index = self.index
        wanted = self.chunk_records(seqs)
        stored = self.payloads(r.payload_seq for seq, r in zip(seqs, wanted, strict=True)
                               if seq not in index.erased)
        out = []
        for seq, record in zip(seqs, wanted, strict=True):
            out.append(self._record(seq, record, stored.get(record.payload_seq)))
        return out

    def _record(self, seq: int, record: Record, payload: bytes | None) -> RecordedEvent:
        header = header_of(record, seq)
        if header.seq != seq:
            raise CorruptionError(f"the header stored for seq {seq} names seq {header.seq}", seq=seq)
        if seq in self.index.erased:
            return RecordedEvent(header, None)
        if payload is None:
            if seq in self.catch_up().erased:  # erased since the last look
                return RecordedEvent(header, None)
            raise CorruptionError(f"the payload of seq {seq} is missing but was never erased", seq=seq)
        if sha256(payload).digest() != record.commitment:
            raise CorruptionError(f"the payload of seq {seq} does not match its commitment", seq=seq)
        return RecordedEvent(header, decode_payload(payload[SALT_SIZE:], header))


def _stamp(text: str) -> float:
    """Seconds since the epoch of a JetStream time stamp (nanosecond ISO 8601)."""
    try:
        return datetime.fromisoformat(text[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0
