"""Commitments and the hash chain.

``commitment = H(salt || payload)`` hides the payload behind a 32-byte random
salt, so an erased payload cannot be guessed back from its commitment.
``chain_i = H(chain_{i-1} || header_i || commitment_i)`` links every header.
H is SHA-256 (hardware-accelerated on x86-64 and ARMv8, faster than BLAKE2b here).
"""

from __future__ import annotations

import os
import threading
from hashlib import sha256

__all__ = ["GENESIS", "HASH_SIZE", "SALT_SIZE", "chain_link", "commit", "new_salts"]

HASH_SIZE = 32
SALT_SIZE = 32
GENESIS = bytes(HASH_SIZE)


def commit(salt: bytes, payload: bytes) -> bytes:
    """The salted commitment to a payload."""
    return sha256(salt + payload).digest()


def chain_link(previous: bytes, header: bytes, commitment: bytes) -> bytes:
    """The chain hash of one record given the previous one."""
    return sha256(previous + header + commitment).digest()


# Salts of small appends come from a block drawn from the OS CSPRNG ahead of
# use, each byte handed out once (a draw per append cost a single append one
# ``getrandom`` call, 2 to 3 us); a forked child drops its parent's block.
_BLOCK = 128 * SALT_SIZE
_block = b""
_taken = 0
_block_lock = threading.Lock()


def _drop_block() -> None:
    global _block, _taken, _block_lock
    _block, _taken = b"", 0
    _block_lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_drop_block)


def new_salts(count: int) -> bytes:
    """``count`` fresh salts from the OS CSPRNG (never handed out twice)."""
    global _block, _taken
    size = SALT_SIZE * count
    if size > _BLOCK // 4:
        return os.urandom(size)
    with _block_lock:
        if _taken + size > len(_block):
            _block, _taken = os.urandom(_BLOCK), 0
        start = _taken
        _taken += size
        return _block[start:_taken]
