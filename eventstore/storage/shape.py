"""Checking an LMDB data file's shape before it is mapped.

LMDB maps ``data.mdb`` and trusts it: a file shorter than the pages its meta
page names kills the process with SIGBUS on the first read past the end, and an
empty file is silently initialised as a new, empty environment. So before any
``lmdb.open`` the storage kit reads the file's two meta pages itself (with
``pread``, never through a map) and refuses, with a :class:`CorruptionError`
naming the file, when:

- the file is missing or empty although it must exist (the caller decides; see
  :mod:`eventstore.storage.env` for the rule);
- a meta page is too short, does not carry LMDB's magic (``0xBEEFC0DE``), data
  version 1 and the meta flag, or names a page size that is not a power of two
  between 512 B and 64 KiB;
- the current meta (the one with the higher transaction id, as LMDB picks it)
  names a last page beyond the map size, or a database root beyond its last
  page;
- the file is shorter than ``(last page + 1) * page size``.

Layout of a meta page (LMDB 0.9, 64-bit, native byte order): a 16-byte page
header (page number, pad, flags, lower/upper), then ``MDB_meta``: magic(4),
version(4), address(8), map size(8), two ``MDB_db`` records of 48 bytes (the
first one's pad holds the page size; each ends with its root page), last
page(8), transaction id(8).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

import lmdb

from ..errors import CorruptionError, StorageError
from .files import storage_error

__all__ = ["DataFileMeta", "check_data_file", "lmdb_error", "read_meta"]

# What LMDB raises when the pages it follows are not what it wrote. A
# transaction that met such a page is flagged failed, and LMDB answers every
# later call in it with MDB_BAD_TXN (our code never reuses a finished one).
_CORRUPT = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.InvalidError,
            lmdb.VersionMismatchError, lmdb.PanicError, lmdb.IncompatibleError,
            lmdb.BadTxnError, lmdb.BadDbiError)

_MAGIC = 0xBEEFC0DE
_DATA_VERSION = 1
_P_META = 0x08
_NO_PAGE = (1 << 64) - 1  # P_INVALID: the root of an empty database
_MAX_MAP = 1 << 48  # no sane map is larger than 256 TiB
_HEADER = struct.Struct("=QHH")  # page number, pad, flags
_META = struct.Struct("=IIQQ")  # magic, version, address, map size (at 16)
_DB = struct.Struct("=IHHQQQQQ")  # pad (page size in the first), flags, depth, ..., root
_TAIL = struct.Struct("=QQ")  # last page, transaction id (at 136)
_META_BYTES = 152


class DataFileMeta(NamedTuple):
    """The current meta page of an LMDB data file."""

    page_size: int
    map_size: int
    last_page: int
    txnid: int
    file_size: int


def read_meta(data: Path) -> DataFileMeta:
    """The current meta of ``data`` (an existing, non-empty file), checked
    against the file's size; :class:`CorruptionError` naming the file if not.

    A failed check is read again once: a commit in another process rewrites
    the meta page in place, and a read racing it may see half of it.
    """
    try:
        return _read_meta(data)
    except CorruptionError:
        return _read_meta(data)


def check_data_file(data: Path, *, must_exist: str | None) -> bool:
    """Check ``data`` before it is mapped; return False when it is absent or
    empty (a new environment). ``must_exist`` says why the file must be there
    (None: it may be new); then an absent or empty file is corrupt."""
    try:
        size = data.stat().st_size
    except FileNotFoundError:
        size = -1
    if size <= 0:
        if must_exist is not None:
            state = "missing" if size < 0 else "empty"
            raise CorruptionError(f"{data} is {state}, but {must_exist}")
        return False
    read_meta(data)
    return True


def lmdb_error(exc: BaseException, what: str, data: Path) -> StorageError:
    """An LMDB error as a memlog error: :class:`CorruptionError` naming the
    data file when LMDB found pages it did not write, else a storage error."""
    if isinstance(exc, _CORRUPT):
        return CorruptionError(f"{data} is corrupt ({what}): {type(exc).__name__}")
    return storage_error(exc, f"{what} ({data.parent})", data.parent)


def _read_meta(data: Path) -> DataFileMeta:
    try:
        fd = os.open(data, os.O_RDONLY)
    except FileNotFoundError:
        raise CorruptionError(f"{data} is missing") from None
    except OSError as exc:
        raise CorruptionError(f"{data} cannot be read: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        first = os.pread(fd, _META_BYTES, 0)
        page_size = _page_size(data, first)
        second = os.pread(fd, _META_BYTES, page_size)
    finally:
        os.close(fd)
    metas = [_parse(data, first, 0), _parse(data, second, 1)]
    current = max(metas, key=lambda m: m[0])
    txnid, map_size, last_page, roots = current
    pages = last_page + 1
    if map_size > _MAX_MAP or last_page < 1 or (map_size and pages * page_size > map_size):
        raise CorruptionError(f"{data} has an impossible meta page (last page {last_page})")
    if any(root != _NO_PAGE and root > last_page for root in roots):
        raise CorruptionError(f"{data} has a meta page naming a root beyond its last page")
    if size < pages * page_size:
        raise CorruptionError(
            f"{data} is truncated: {size} bytes, but its meta page names {pages} pages "
            f"of {page_size} bytes ({pages * page_size} bytes)")
    return DataFileMeta(page_size, map_size, last_page, txnid, size)


def _page_size(data: Path, first: bytes) -> int:
    if len(first) < _META_BYTES:
        raise CorruptionError(f"{data} is truncated: it is shorter than one meta page")
    page_size = int(_DB.unpack_from(first, 40)[0])
    if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        raise CorruptionError(f"{data} has no valid LMDB meta page (page size {page_size})")
    return page_size


def _parse(data: Path, raw: bytes, number: int) -> tuple[int, int, int, tuple[int, int]]:
    """(txnid, map size, last page, roots) of meta page ``number``."""
    if len(raw) < _META_BYTES:
        raise CorruptionError(f"{data} is truncated: meta page {number} is incomplete")
    pgno, _, flags = _HEADER.unpack_from(raw, 0)
    magic, version, _, map_size = _META.unpack_from(raw, 16)
    if magic != _MAGIC or version != _DATA_VERSION or pgno != number or not flags & _P_META:
        raise CorruptionError(f"{data} has no valid LMDB meta page {number}")
    roots = (_DB.unpack_from(raw, 40)[7], _DB.unpack_from(raw, 88)[7])
    last_page, txnid = _TAIL.unpack_from(raw, 136)
    return txnid, map_size, last_page, roots
