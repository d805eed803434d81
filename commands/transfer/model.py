"""The neutral records every reader yields, and what readers share: ids
derived from source ids, source times, JSON and JSONL read with line numbers.

A reader never validates memlog's rules (the ingest does, through the app
layer); it maps a source's fields onto a record and says where the record
came from (``file:line``). A record it cannot map at all is a :class:`Bad`
record: the reason names fields, never content.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from json.decoder import JSONObject  # type: ignore[attr-defined]
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

import msgspec

from eventstore import ID_PREFIXES

__all__ = [
    "Bad",
    "EntryRec",
    "Located",
    "MemoryRec",
    "Origin",
    "Record",
    "SessionRec",
    "derived_id",
    "event_id",
    "line_of",
    "load_json",
    "read_jsonl",
    "session_id_for",
    "source_time",
]

_decode = msgspec.json.Decoder().decode
_ID = re.compile(r"^[A-Za-z0-9._:@+-]{1,128}\Z")


class Origin(msgspec.Struct, frozen=True):
    """Where a record came from: a file (relative to the import's root) and a
    line (1-based; 0 for the file as a whole)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class SessionRec(msgspec.Struct, frozen=True):
    """A session to start (unless the store has it already)."""

    origin: Origin
    event_id: str
    session_id: str
    user_id: Any = None
    agent_ids: Any = ()
    tags: Any = ()
    metadata: Any = None
    channel: Any = None
    archived: bool = False
    closed: bool = False


class EntryRec(msgspec.Struct, frozen=True):
    """An entry of any kind; ``details`` holds the kind's fields (see
    :mod:`eventstore.events`), checked by the ingest."""

    origin: Origin
    event_id: str
    entry_id: str
    kind: str
    content: Any
    session_id: Any = None
    user_id: Any = None
    agent_id: Any = None
    role: Any = None
    tags: Any = ()
    importance: Any = None
    occurred_at: Any = None
    derived_from: Any = ()
    details: Any = None
    redactions: Any = None


class MemoryRec(msgspec.Struct, frozen=True):
    """A user memory (seed 001): a key and its content."""

    origin: Origin
    event_id: str
    memory_id: str
    user_id: Any
    key: Any
    content: Any
    session_id: Any = None


class Bad(msgspec.Struct, frozen=True):
    """A record a reader could not map: where, and why (fields, never content)."""

    origin: Origin
    reason: str


Record = SessionRec | EntryRec | MemoryRec | Bad


def _digest(fmt: str, source_id: str) -> str:
    return hashlib.sha256(f"memlog-import\x00{fmt}\x00{source_id}".encode()).hexdigest()


def event_id(fmt: str, source_id: str) -> str:
    """The client event id of a source record: the same source id gives the
    same event id, so a second import of the same files adds nothing."""
    return f"imp-{_digest(fmt, source_id)[:32]}"


def derived_id(fmt: str, kind: str, source_id: str) -> str:
    """A stable entry (or memory: ``kind`` ``"memory"``) id for a source record."""
    prefix = "mem" if kind == "memory" else ID_PREFIXES.get(kind, "ent")
    return f"{prefix}-{_digest(fmt, 'id:' + source_id)[:16]}"


_PERSONAL = re.compile(r"@|\d{7}")


def session_id_for(fmt: str, source_id: object) -> str:
    """The source's session id when memlog accepts it as an id and it names no
    person (no ``@``, no run of 7 digits: seed 001 keys sessions by a phone
    number or an address, which the log's stream names would keep after the
    user's erasure), else one derived from it."""
    if isinstance(source_id, str) and _ID.match(source_id) and not _PERSONAL.search(source_id):
        return source_id
    return f"sess-{_digest(fmt, 'session:' + str(source_id))[:16]}"


def source_time(value: object) -> object:
    """A source time as memlog takes it: ISO 8601 strings without a zone are
    UTC (a date alone is its midnight), numbers are epoch milliseconds (or
    seconds, below 10^11); anything else passes through for the ingest to refuse."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) >= 1e11 else value
        return int(seconds * 1_000_000)
    if not isinstance(value, str):
        return value
    text = value.strip().replace(" ", "T", 1)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return f"{text}T00:00:00Z"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


class Located(dict[str, Any]):
    """A JSON object that knows the line it starts on."""

    line: int = 0


def load_json(path: Path, rel: str) -> Any:
    """A JSON document whose objects are :class:`Located` (line numbers kept),
    or a :class:`Bad` record at the line of its syntax error."""
    text = path.read_text(encoding="utf-8")
    starts = [i for i, ch in enumerate(text) if ch == "\n"]

    decoder = json.JSONDecoder()

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *rest: Any) -> Any:
        obj, end = JSONObject(s_and_end, strict, scan_once, None, None, *rest[2:])
        located = Located(obj)
        located.line = bisect.bisect_left(starts, s_and_end[1] - 1) + 1
        return located, end

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        return decoder.decode(text)
    except json.JSONDecodeError as exc:
        return Bad(Origin(rel, exc.lineno), f"invalid JSON ({exc.msg})")


def line_of(value: object, default: int = 0) -> int:
    """The line a JSON value starts on, when it is a :class:`Located` object."""
    return value.line if isinstance(value, Located) else default


def read_jsonl(path: Path, rel: str) -> Iterator[tuple[Origin, dict[str, Any] | None, str]]:
    """Each non-blank line of a JSONL file: its origin, the object (None when
    the line is not a JSON object) and the reason when it is not."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            origin = Origin(rel, number)
            try:
                obj = _decode(line)
            except msgspec.DecodeError as exc:
                yield origin, None, f"invalid JSON ({str(exc).split(' - ')[0]})"
                continue
            if not isinstance(obj, dict):
                yield origin, None, "a line must be a JSON object"
                continue
            yield origin, obj, ""
