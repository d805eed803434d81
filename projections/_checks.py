"""What a projection directory must look like before it is opened.

LMDB and Tantivy trust their files. LMDB maps the views file and follows the
page numbers of its meta pages: a truncated or scrambled file can kill the
process with SIGBUS or SIGSEGV instead of raising. Tantivy checks a segment
file's checksum only when asked, so a flipped byte can give wrong hits in
silence. Before the runner opens a projection directory, these checks read
the bytes that decide whether opening it is safe:

- the ``proj`` link names a ``proj-*`` directory that exists, with a readable
  ``layout`` mark;
- views: both LMDB meta pages (flags, magic, version, page size, last page,
  roots), a file long enough for the newest one, and the two root pages;
- search: each shard link names a sibling shard directory; its ``meta.json``
  and ``.managed.json`` parse; every file of every live segment is there and
  the CRC32 in its Tantivy footer matches. Segment files never change once
  written, so a file is checked once: ``search/checked`` remembers the files
  that passed by size, times and inode.

A :class:`Problem` names the file and what is wrong with it, never content.
Deeper damage (a flipped byte inside an LMDB B-tree page) is out of reach:
LMDB keeps no checksums.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

import msgspec

from eventstore.storage import open_private

__all__ = ["Problem", "layout_of", "link_target", "search_problem", "views_problem"]

_PROJ_TARGET = re.compile(r"proj-[0-9A-Za-z]+")
_SHARD_TARGET = re.compile(r"shard-[0-9]{2}\.[0-9a-f]+")
_SEGMENT = re.compile(r"[0-9a-f]{32}")


class Problem(NamedTuple):
    """A projection file that cannot be trusted, and why (no content)."""

    path: Path
    what: str

    def __str__(self) -> str:
        return f"{os.fspath(self.path)} {self.what}"


# -- the proj link and the layout mark ---------------------------------------

def link_target(link: Path) -> tuple[str, Problem | None]:
    """The ``proj-*`` directory the link names, or what is wrong with the link."""
    if not link.is_symlink():
        return "", Problem(link, "is not a link" if link.exists() else "is missing")
    target = os.readlink(link)
    if not _PROJ_TARGET.fullmatch(target):
        return "", Problem(link, "names no projection directory of this store")
    if not (link.parent / target).is_dir():
        return "", Problem(link, f"names {target}, which is missing")
    return target, None


def layout_of(root: Path) -> str | None:
    """The layout mark of a projection directory: '' when absent, None when unreadable."""
    try:
        raw = (root / "layout").read_bytes()
    except FileNotFoundError:
        return ""
    try:
        return raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return None


# -- views: the LMDB meta pages ------------------------------------------------

_PAGE = struct.Struct("<QHHHH")  # pgno, pad, flags, lower, upper (the 16-byte page header)
_DB = "IHHQQQQQ"  # pad (page size in the free DB), flags, depth, branch, leaf, overflow, entries, root
_META = struct.Struct("<IIQQ" + _DB + _DB + "QQ")  # magic, version, address, mapsize, 2 DBs, last, txn
_MAGIC, _VERSION = 0xBEEFC0DE, 1
_P_BRANCH, _P_LEAF, _P_OVERFLOW, _P_META = 0x01, 0x02, 0x04, 0x08
_NO_PAGE = (1 << 64) - 1


class _Meta(NamedTuple):
    psize: int
    roots: tuple[int, int]
    last: int
    txnid: int


def views_problem(views: Path) -> Problem | None:
    """What is wrong with the views LMDB file, if anything (None when it is
    absent or empty: LMDB starts a new one and the views catch up from the log)."""
    data = views / "data.mdb"
    try:
        fd = open_private(data, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Problem(data, f"cannot be read ({type(exc).__name__})")
    try:
        what = _env_problem(fd)
    finally:
        os.close(fd)
    return None if what is None else Problem(data, what)


def _env_problem(fd: int) -> str | None:
    size = os.fstat(fd).st_size
    if size == 0:
        return None
    first = _meta(os.pread(fd, _PAGE.size + _META.size, 0), 0)
    if first is None:
        return "has a damaged LMDB meta page (page 0)"
    second = _meta(os.pread(fd, _PAGE.size + _META.size, first.psize), 1)
    if second is None or second.psize != first.psize:
        return "has a damaged LMDB meta page (page 1)"
    newest = second if second.txnid > first.txnid else first  # as LMDB picks
    if size < (newest.last + 1) * newest.psize:
        return "is shorter than its LMDB meta page says (truncated)"
    for root in newest.roots:
        if root != _NO_PAGE and not _is_tree_page(os.pread(fd, _PAGE.size, root * newest.psize),
                                                  root, newest.psize):
            return f"has a damaged LMDB root page ({root})"
    return None


def _meta(raw: bytes, pgno: int) -> _Meta | None:
    """The meta page ``pgno`` if it is sound, else None."""
    if len(raw) < _PAGE.size + _META.size:
        return None
    page, _, flags, _, _ = _PAGE.unpack_from(raw)
    fields = _META.unpack_from(raw, _PAGE.size)
    magic, version, psize = fields[0], fields[1], fields[4]
    roots, depths, last, txnid = (fields[11], fields[19]), (fields[6], fields[14]), fields[20], fields[21]
    if page != pgno or not flags & _P_META or magic != _MAGIC or version != _VERSION:
        return None
    if psize < 512 or psize > 65536 or psize & (psize - 1) or last < 1:
        return None
    for root, depth in zip(roots, depths, strict=True):
        if root != _NO_PAGE and not (2 <= root <= last and 1 <= depth <= 32):
            return None
    return _Meta(psize, roots, last, txnid)


def _is_tree_page(raw: bytes, pgno: int, psize: int) -> bool:
    if len(raw) < _PAGE.size:
        return False
    page, _, flags, lower, upper = _PAGE.unpack(raw)
    kind = flags & (_P_BRANCH | _P_LEAF | _P_OVERFLOW | _P_META)
    return page == pgno and kind in (_P_BRANCH, _P_LEAF) and _PAGE.size <= lower <= upper <= psize


# -- search: shard links, meta.json, segment footers ---------------------------

_COMPONENTS = ("idx", "term", "pos", "fieldnorm", "fast", "store")
_FOOTER = struct.Struct("<II")  # footer length, magic
_FOOTER_MAGIC = 1337
_CHUNK = 4 << 20
_Signature = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
_signatures = msgspec.msgpack.Decoder(dict[str, tuple[int, int, int, int]])


def search_problem(search: Path, shards: int) -> Problem | None:
    """What is wrong with the search index, if anything (None for a new one,
    which is created empty and catches up from the log)."""
    links = [search / f"shard-{i:02d}" for i in range(shards)]
    if not search.is_dir() or not any(p.is_symlink() or p.exists() for p in search.glob("shard-*")):
        return None
    checked = _Checked(search / "checked")
    for link in links:
        if problem := _shard_problem(link, checked):
            return problem
    checked.save()
    return None


def _shard_problem(link: Path, checked: _Checked) -> Problem | None:
    if not link.is_symlink():
        return Problem(link, "is not a link" if link.exists() else "is missing")
    target = os.readlink(link)
    if not _SHARD_TARGET.fullmatch(target) or not target.startswith(link.name + "."):
        return Problem(link, "names no shard directory of this index")
    shard = link.parent / target
    if not shard.is_dir():
        return Problem(link, f"names {target}, which is missing")
    meta = shard / "meta.json"
    try:
        segments = _segments(meta.read_bytes())
    except FileNotFoundError:
        empty = all(p.name.startswith(".tantivy-") for p in shard.iterdir())
        return None if empty else Problem(meta, "is missing")
    except ValueError:
        return Problem(meta, "does not parse")
    managed = shard / ".managed.json"
    if managed.exists() and not _is_name_list(managed):
        return Problem(managed, "does not parse")
    for segment, deletes in segments:
        names = [f"{segment}.{ext}" for ext in _COMPONENTS]
        names += [] if deletes is None else [f"{segment}.{deletes}.del"]
        for name in names:
            if problem := checked.verify(shard / name):
                return problem
    return None


def _segments(raw: bytes) -> list[tuple[str, int | None]]:
    """(segment file stem, opstamp of its deletes or None) for each live segment."""
    try:
        meta = json.loads(raw.decode("utf-8"))
        out = []
        for seg in meta["segments"]:
            stem, deletes = seg["segment_id"].replace("-", ""), seg.get("deletes")
            opstamp = None if deletes is None else deletes["opstamp"]
            if not _SEGMENT.fullmatch(stem) or not (opstamp is None or type(opstamp) is int):
                raise ValueError("not a segment")
            out.append((stem, opstamp))
        return out
    except (UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(str(exc)) from None


def _is_name_list(path: Path) -> bool:
    try:
        names = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(names, list) and all(isinstance(n, str) for n in names)


def footer_problem(path: Path) -> str | None:
    """What is wrong with a Tantivy file: its footer (JSON with the CRC32 of the
    body, its length, the magic number) or the CRC32 itself."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < _FOOTER.size:
            return "is truncated"
        length, magic = _FOOTER.unpack(os.pread(f.fileno(), _FOOTER.size, size - _FOOTER.size))
        body = size - _FOOTER.size - length
        if magic != _FOOTER_MAGIC or body < 0:
            return "has no Tantivy footer (truncated or overwritten)"
        try:
            crc = json.loads(os.pread(f.fileno(), length, body))["crc"]
        except (ValueError, KeyError, TypeError):
            return "has a damaged Tantivy footer"
        actual = 0
        while f.tell() < body:
            actual = zlib.crc32(f.read(min(_CHUNK, body - f.tell())), actual)
    return None if actual == crc else "fails its checksum"


class _Checked:
    """The segment files that passed :func:`footer_problem`, by signature."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.known: dict[str, _Signature] = _signatures.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError):
            self.known = {}
        self.seen: dict[str, _Signature] = {}

    def verify(self, file: Path) -> Problem | None:
        try:
            st = os.stat(file)
        except FileNotFoundError:
            return Problem(file, "is missing")
        key = f"{file.parent.name}/{file.name}"
        signature = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if self.known.get(key) != signature and (what := footer_problem(file)):
            return Problem(file, what)
        self.seen[key] = signature
        return None

    def save(self) -> None:
        """Remember the files seen (a cache: losing it only costs a new check)."""
        if self.seen == self.known:
            return
        tmp = self.path.with_name(f".checked.{secrets.token_hex(4)}")
        try:
            fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            try:
                os.write(fd, msgspec.msgpack.encode(self.seen))
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
