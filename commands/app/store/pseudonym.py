"""Keyed pseudonyms of user ids: what the log keeps where it must name a user.

A user id is personal data (a phone number, an email). The log's headers are
chained and never rewritten, and a deletion's request stays in the log for
the audit, so neither may hold a user id that a deletion of the user must
erase. Where the log needs to name a user it keeps the id's pseudonym
instead: ``uh-`` and the first 32 hex digits of HMAC-SHA256 of the id under
the store's secret. That is the name of a user's stream (``user:uh-...``),
the ``user_id`` of a deletion's stored criteria, and a requester who is a
user of the store.

The secret is 32 random bytes in ``pseudonym.key`` in the data directory,
created on first use, readable by its owner only. Without it a pseudonym
says nothing of the id; with it, the store maps an id it is given to the
pseudonym (never back), so an auditor holding an id can find its requests.
Deleting the data directory destroys the secret, and with it every link
from a pseudonym to an id.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

import msgspec

from eventstore import CorruptionError, ReadOnlyError
from eventstore.storage import fsync_dir

__all__ = ["PREFIX", "SECRET_FILE", "Pseudonyms", "id_needles", "is_pseudonym"]

PREFIX = "uh-"
SECRET_FILE = "pseudonym.key"
_SECRET_BYTES = 32
_HEX = 32  # 128 bits of the HMAC: no two ids of a store meet by chance
_PSEUDONYM = re.compile(rf"{PREFIX}[0-9a-f]{{{_HEX}}}\Z")
RAW_FROM = 12  # bytes from which an id is also scanned for bare (shorter ones turn up by chance)


def is_pseudonym(value: str) -> bool:
    """Whether ``value`` has a pseudonym's form."""
    return _PSEUDONYM.match(value) is not None


class Pseudonyms:
    """The pseudonyms of one store, keyed by its secret (read, or created, on first use)."""

    def __init__(self, data_dir: Path, read_only: bool = False) -> None:
        self.path = data_dir / SECRET_FILE
        self._read_only = read_only
        self._secret: bytes | None = None

    def of(self, user_id: str) -> str:
        """The pseudonym of ``user_id`` (a pseudonym is its own)."""
        if is_pseudonym(user_id):
            return user_id
        digest = hmac.new(self._key(), user_id.encode(), hashlib.sha256).hexdigest()
        return PREFIX + digest[:_HEX]

    def _key(self) -> bytes:
        if self._secret is None:
            self._secret = self._read() or self._create()
        return self._secret

    def _read(self) -> bytes | None:
        try:
            secret = self.path.read_bytes()
        except FileNotFoundError:
            return None
        if len(secret) != _SECRET_BYTES:
            raise CorruptionError(f"{SECRET_FILE} holds {len(secret)} bytes, not {_SECRET_BYTES}")
        return secret

    def _create(self) -> bytes:
        """A new secret, written whole before it is linked into place: of two
        processes creating it at once, one link wins and both read its secret."""
        if self._read_only:
            raise ReadOnlyError("the store is open read-only and has no pseudonym secret yet")
        tmp = self.path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, os.urandom(_SECRET_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(self.path.parent)  # the name lasts as the events written under it do
        secret = self._read()
        if secret is None:
            raise CorruptionError(f"{SECRET_FILE} vanished while it was created")
        return secret


def id_needles(user_id: str) -> dict[bytes, bytes]:
    """The byte strings a purge scans for to find ``user_id`` (needle -> the
    id's bytes): the id as msgpack, JSON and a stream name frame it, whatever
    its length, and bare from :data:`RAW_FROM` bytes."""
    raw = user_id.encode()
    forms = {msgspec.msgpack.encode(user_id), msgspec.json.encode(user_id), b"user:" + raw}
    if len(raw) >= RAW_FROM:
        forms.add(raw)
    return dict.fromkeys(forms, raw)
