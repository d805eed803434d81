"""Commitments and the hash chain.

``commitment = H(salt || payload)`` hides the payload behind a 32-byte random
salt, so an erased payload cannot be guessed back from its commitment.
``chain_i = H(chain_{i-1} || header_i || commitment_i)`` links every header.
H is SHA-256 (hardware-accelerated on x86-64 and ARMv8, faster than BLAKE2b here).
"""

from __future__ import annotations

import os
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


def new_salts(count: int) -> bytes:
    """``count`` fresh salts from the OS CSPRNG, in one call."""
    return os.urandom(SALT_SIZE * count)
