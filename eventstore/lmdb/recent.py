"""Recent payloads: one durable commit per small append, sealed into segments later.

A small append (at most :data:`RECENT_MAX` events) stores its payloads in the
main environment's ``recent`` database, in the same transaction as its
headers: one commit, one pair of syncs, as raw LMDB pays for the same records.
The append that takes ``recent`` :data:`SEAL_AT` seqs past S (below), any
larger append, a purge and a clean close *seal* them: the payloads go to their segments (one durable segment
commit), then the transaction that commits next empties ``recent``. Meta
``sealed`` (S) says where they are: a seq at or below S has its payload in a
segment, a seq after it in ``recent``; absent, ``recent`` is empty.

The main environment is never compacted by a purge (it is large), so no
content may be readable in its freed pages once erased. A recent value is
therefore stored concealed: ``nonce(16) | (salt | payload) XOR
SHAKE-256(key | nonce)``, under the key of the seq's payload segment
(:data:`~.segments.KEY`, 32 random bytes, created durably in the segment
before the first append that uses it). The salt is concealed too: with it, the
commitment would let a guess be checked. A purge seals every recent payload,
then deletes the key of every segment it rewrites, so the compacting copy
holds no key and the old file is zero-filled: the concealed bytes left in the
main environment's freed pages can no longer be revealed. A seq's key stays
its segment's key until a purge of that segment, which follows the erasure of
any of its seqs; so an erased seq's key is gone once the purge is done.

Write order, so that a crash at any point loses nothing acknowledged:

- a key is committed to its segment before the main commit that uses it;
- sealing commits the payloads to the segments (with the append mark: the
  head the last sealed append started from) before the main commit that empties ``recent``; a crash in between
  leaves copies in the segments after S, which reads ignore and the next seal
  overwrites;
- an erase deletes a recent payload in the tombstone's own transaction.

The seal itself is :func:`.seal.seal_all`; a seq's key is
:meth:`.segments.Segments.key_of`. A process keeps a copy of the stored bytes
of each recent payload it committed (``Segments.own_recent``, in memory only):
a seal or a read takes the copy instead of revealing the value (a committed
seq's payload never changes), and reveals only what other processes appended.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable
from hashlib import shake_256
from typing import Any

from .layout import META, RECENT, SEALED, seq_key, seq_of_key

__all__ = [
    "NONCE_SIZE",
    "RECENT_MAX",
    "SEAL_AT",
    "conceal",
    "last_recent_base",
    "read_sealed",
    "reveal",
    "take_recent",
    "write_sealed",
]

NONCE_SIZE = 16
# Appends of at most this many events keep their payloads in ``recent`` (an
# agent's turn appends 1-3); larger ones pay the segments' commit directly.
RECENT_MAX = 8
SEAL_AT = 1024  # ``recent`` is sealed once this many seqs are past S (at most this many payloads)


def _xor(key: bytes, nonce: bytes, data: bytes) -> bytes:
    pad = shake_256(key + nonce).digest(len(data))
    size = len(data)
    return (int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")).to_bytes(size, "little")


# Nonces under one key must not repeat: 8 random bytes drawn once per process
# (again in a forked child), then a count of this process's nonces from a
# random 7-byte start, so two processes would have to draw the same prefix and
# overlapping counts.
_nonce_prefix = secrets.token_bytes(NONCE_SIZE // 2)
_nonces = itertools.count(int.from_bytes(secrets.token_bytes(7)))


def _redraw_nonce_prefix() -> None:
    global _nonce_prefix, _nonces
    _nonce_prefix = secrets.token_bytes(NONCE_SIZE // 2)
    _nonces = itertools.count(int.from_bytes(secrets.token_bytes(7)))


os.register_at_fork(after_in_child=_redraw_nonce_prefix)


def conceal(key: bytes, stored: bytes) -> bytes:
    """The recent value of ``stored`` (salt | payload) under ``key``."""
    nonce = _nonce_prefix + next(_nonces).to_bytes(NONCE_SIZE // 2, "little")
    return nonce + _xor(key, nonce, stored)


def reveal(key: bytes, value: Any) -> bytes:
    """The stored payload (salt | payload) of a recent value."""
    value = bytes(value)
    return _xor(key, value[:NONCE_SIZE], value[NONCE_SIZE:])


def read_sealed(txn: Any, meta: Any) -> int | None:
    """S: payloads of seqs after it are in ``recent``; None when it is empty."""
    raw = txn.get(SEALED, db=meta)
    return None if raw is None else seq_of_key(bytes(raw)[:8])


def last_recent_base(txn: Any, meta: Any) -> int:
    """The head the last append into ``recent`` started from (S when none did)."""
    raw = bytes(txn.get(SEALED, db=meta) or b"")
    return seq_of_key(raw[8:] if len(raw) == 16 else raw)


def write_sealed(txn: Any, meta: Any, sealed: int | None, last_base: int = 0) -> None:
    """Store S and the head the last append into ``recent`` started from
    (None: ``recent`` is empty)."""
    if sealed is None:
        txn.delete(SEALED, db=meta)
    else:
        txn.put(SEALED, seq_key(sealed) + seq_key(max(sealed, last_base)), db=meta)


def take_recent(txn: Any, dbs: dict[bytes, Any],
                reveal_value: Callable[[bytes, Any], bytes]) -> list[tuple[bytes, bytes]]:
    """Every recent payload, revealed (``reveal_value(key, value)``: the
    stored payload at seq key ``key``, :meth:`.segments.Segments.reveal`), as
    (key, stored) in seq order; ``recent`` is emptied and S dropped in ``txn``
    (the caller commits the payloads to the segments before ``txn`` commits)."""
    items = []
    for key, value in txn.cursor(db=dbs[RECENT]):
        key = bytes(key)
        items.append((key, reveal_value(key, value)))
    if items:
        txn.drop(dbs[RECENT], delete=False)
    write_sealed(txn, dbs[META], None)
    return items
