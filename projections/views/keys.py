"""Key layout of the views environment, temporal lookups, and the decoding
of a stored entry version (read by several modules).

A temporal database keys each entity version by ``entity | 0x00 | seq(8)``.
The version written at seq ``s`` is current until the next version's seq, so
"as of seq k" is the last key of the entity at or before ``k``: one cursor seek.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

import msgspec

from eventstore import ENTRY_KINDS

from ..models import StoredEntry

__all__ = [
    "MAX_SEQ",
    "SEP",
    "all_versions",
    "decode_stored",
    "drop_derived",
    "has_versions",
    "hash_key",
    "latest_at",
    "latest_version",
    "parse_rank_value",
    "prefix_items",
    "rank_entry_id",
    "rank_value",
    "rank_values",
    "session_key",
    "time_key",
    "u64",
    "unpack_u64",
    "version_key",
    "when_key",
]

SEP = b"\x00"
MAX_SEQ = (1 << 64) - 1
_U64 = struct.Struct(">Q")
u64 = _U64.pack
decode_stored = msgspec.msgpack.Decoder(StoredEntry).decode  # a stored entry version's value


def hash_key(entry_id: str) -> bytes:
    """``crc32(id)`` (4 bytes, big-endian) | id: entries in hash order, so a
    search shard (a crc32 range) reads only its own entries."""
    raw = entry_id.encode()
    return zlib.crc32(raw).to_bytes(4, "big") + raw


_RANK = struct.Struct(">Bdq")  # kind code, importance, occurred_at
_KIND_CODES = {kind: code for code, kind in enumerate(ENTRY_KINDS)}


def rank_value(kind: str, importance: float, occurred_at: int, entry_id: str) -> bytes:
    """Value of ``by_seq``: kind code | importance | occurred_at | entry id."""
    return _RANK.pack(_KIND_CODES[kind], importance, occurred_at) + entry_id.encode()


def rank_values(kinds: list[str], importance: list[float], occurred: list[int],
                raw_ids: list[bytes]) -> list[bytes]:
    """:func:`rank_value` of each entry of a column (``raw_ids``: the ids encoded)."""
    pack, codes = _RANK.pack, _KIND_CODES
    return [pack(codes[k], i, a) + r for k, i, a, r in zip(kinds, importance, occurred, raw_ids, strict=True)]


def parse_rank_value(raw: bytes | memoryview) -> tuple[str, str, float, int]:
    """(entry id, kind, importance, occurred_at) of a ``by_seq`` value."""
    code, importance, occurred_at = _RANK.unpack_from(raw)
    return bytes(raw[_RANK.size :]).decode(), ENTRY_KINDS[code], importance, occurred_at


def rank_entry_id(raw: bytes | memoryview) -> str:
    """The entry id of a ``by_seq`` value."""
    return bytes(raw[_RANK.size :]).decode()


def unpack_u64(raw: bytes | memoryview) -> int:
    """Decode an 8-byte big-endian integer."""
    return int(_U64.unpack(raw)[0])


def version_key(entity: str, seq: int) -> bytes:
    """Key of one entity version."""
    return entity.encode() + SEP + u64(seq)


def time_key(*parts: str | int) -> bytes:
    """A composite key: strings joined by 0x00, integers as 8 bytes."""
    out = bytearray()
    for i, part in enumerate(parts):
        if i:
            out += SEP
        out += u64(part) if isinstance(part, int) else part.encode()
    return bytes(out)


def has_versions(txn: Any, db: Any, entity: str) -> bool:
    """Whether the entity has any version (one seek, no value copied)."""
    prefix = entity.encode() + SEP
    cursor = txn.cursor(db=db)
    return bool(cursor.set_range(prefix)) and bytes(cursor.key()[: len(prefix)]) == prefix


def session_key(session_id: str, occurred_at: int, entry_id: str) -> bytes:
    """Key of ``by_session``: session | 0x00 | occurred_at(8) | 0x00 | entry id."""
    return session_id.encode() + SEP + u64(occurred_at) + SEP + entry_id.encode()


def when_key(occurred_at: int, entry_id: str) -> bytes:
    """Key of ``by_time``: occurred_at(8) | 0x00 | entry id."""
    return u64(occurred_at) + SEP + entry_id.encode()


def latest_version(txn: Any, db: Any, entity: str, as_of: int | None) -> bytes | None:
    """The value of the entity's last version at or before ``as_of`` (None: current)."""
    return latest_at(txn.cursor(db=db), entity, as_of)


def latest_at(cursor: Any, entity: str, as_of: int | None) -> bytes | None:
    """:func:`latest_version` with a cursor of the database (reusable across calls)."""
    prefix = entity.encode() + SEP
    bound = prefix + u64(MAX_SEQ if as_of is None else as_of)
    if cursor.set_range(bound):
        key = cursor.key()
        if bytes(key) == bound:
            return bytes(cursor.value())
        if not cursor.prev():
            return None
    elif not cursor.last():
        return None
    key = bytes(cursor.key())
    if key[: len(prefix)] != prefix or len(key) != len(prefix) + 8:
        return None
    return bytes(cursor.value())


def all_versions(txn: Any, db: Any, entity: str) -> Iterator[tuple[int, bytes]]:
    """Every version of an entity, oldest first, as ``(seq, value)``."""
    prefix = entity.encode() + SEP
    for key, value in prefix_items(txn, db, prefix):
        if len(key) == len(prefix) + 8:
            yield unpack_u64(key[len(prefix):]), value


def prefix_items(txn: Any, db: Any, prefix: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
    """Items whose key starts with ``prefix`` (keys and values as bytes)."""
    cursor = txn.cursor(db=db)
    if reverse:
        ok = cursor.prev() if cursor.set_range(prefix + b"\xff" * 9) else cursor.last()
        while ok:
            key = bytes(cursor.key())
            if not key.startswith(prefix):
                return
            yield key, bytes(cursor.value())
            ok = cursor.prev()
        return
    if not cursor.set_range(prefix):
        return
    for key, value in cursor.iternext():
        key = bytes(key)
        if not key.startswith(prefix):
            return
        yield key, bytes(value)


def drop_derived(txn: Any, db: Any, children: set[str]) -> None:
    """Drop the ``derived`` links (``parent | 0x00 | child``) whose child is
    among ``children`` (erased entries): a replay, where an erased child's
    record never appears, has none of them. One pass over the links."""
    if not children:
        return
    wanted = {c.encode() for c in children}
    gone = [bytes(key) for key, _ in prefix_items(txn, db, b"") if bytes(key).rpartition(SEP)[2] in wanted]
    for key in gone:
        txn.delete(key, db=db)
