"""Input checks for the write side: every check runs before anything is written.

Messages name the field and the rule, never the value of content fields.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path

from eventstore import (
    ENTRY_KINDS,
    InvalidInputError,
    NotWritableError,
    SizeLimitError,
    StoreNotFoundError,
    shown,
    to_micros,
)

__all__ = [
    "MAX_MICROS",
    "check_choice",
    "check_content",
    "check_data_dir",
    "check_flag",
    "check_id",
    "check_ids",
    "check_key",
    "check_labels",
    "check_rates",
    "check_unit",
    "optional_text",
    "to_time",
    "writable",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}\Z")
_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
_RESERVED = ("system_", "internal_")
# The last microsecond of year 9999: the latest time ISO 8601 (and datetime) can write.
MAX_MICROS = 253_402_300_799_999_999


def check_id(value: object, field: str) -> str:
    """An id: letters, digits and ``. _ : @ + -``, at most 128 characters."""
    if not isinstance(value, str) or not _ID.match(value):
        raise InvalidInputError(
            f"{field} must be 1-128 characters of letters, digits and . _ : @ + - (got {shown(value)})"
        )
    return value


def check_flag(value: object, field: str) -> bool:
    """A real boolean: consent and switches take ``True`` or ``False`` only, never
    ``"yes"``, ``"true"`` or ``1`` (which a lax caller would read as consent)."""
    if type(value) is not bool:
        raise InvalidInputError(f"{field} must be true or false (got {type(value).__name__})")
    return value


def check_ids(values: Iterable[object] | None, field: str) -> tuple[str, ...]:
    """A tuple of ids (``None`` is empty)."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise InvalidInputError(f"{field} must be a list of ids, not a string")
    return tuple(dict.fromkeys(check_id(v, field) for v in values))


def check_labels(values: Iterable[object] | None, field: str) -> tuple[str, ...]:
    """Tags and similar labels: non-empty, at most 200 characters each."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise InvalidInputError(f"{field} must be a list, not a string")
    out = []
    for v in values:
        if not isinstance(v, str) or not v.strip() or len(v) > 200:
            raise InvalidInputError(f"each of {field} must be 1-200 characters")
        out.append(v.strip())
    return tuple(dict.fromkeys(out))


def check_content(value: object, field: str, limit: int) -> str:
    """Content: a non-empty string of at most ``limit`` UTF-8 bytes."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string")
    if not value.strip():
        raise InvalidInputError(f"{field} must not be empty")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise SizeLimitError(f"{field} is {size} bytes; the limit is {limit} bytes")
    return value


def optional_text(value: object, field: str, limit: int) -> str | None:
    """Optional content (``None`` or empty means absent)."""
    if value is None or value == "":
        return None
    return check_content(value, field, limit)


def check_choice(value: object, field: str, choices: Iterable[str]) -> str:
    """One of a fixed set of values."""
    allowed = tuple(choices)
    if value not in allowed:
        raise InvalidInputError(f"{field} must be one of {', '.join(allowed)} (got {shown(value)})")
    return str(value)


def check_unit(value: object, field: str) -> float | None:
    """A number from 0 to 1, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"{field} must be a number from 0 to 1 (got {shown(value)})")
    return float(value)


def check_key(value: object) -> str:
    """A memory key (seed 001): ``^[a-z][a-z0-9_]*$``, at most 64, not reserved."""
    if not isinstance(value, str) or not _KEY.match(value) or len(value) > 64:
        raise InvalidInputError(
            f"invalid key {shown(value)}: use a lowercase letter then lowercase letters, digits "
            "or _ (at most 64 characters)"
        )
    if value.startswith(_RESERVED):
        raise InvalidInputError(f"invalid key {shown(value)}: the prefixes system_ and internal_ "
                                "are reserved")
    return value


def to_time(value: datetime | str | int | None, field: str) -> int | None:
    """A time (ISO 8601 with zone, aware datetime or microseconds), or None."""
    if value is None:
        return None
    try:
        micros = to_micros(value)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{field}: {exc.message}") from None
    if micros > MAX_MICROS:
        raise InvalidInputError(f"{field}: time {micros} is after the end of year 9999")
    return micros


def check_rates(rates: object) -> dict[str, float]:
    """Decay rates: a mapping of entry kinds to finite numbers >= 0 (per hour)."""
    if rates is None:
        return {}
    if not isinstance(rates, Mapping):
        raise InvalidInputError("decay rates must map entry kinds to numbers")
    out: dict[str, float] = {}
    for kind, rate in rates.items():
        check_choice(kind, "kind", ENTRY_KINDS)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate < math.inf:
            raise InvalidInputError(f"decay rate for {kind} must be a finite number >= 0 (got {shown(rate)})")
        out[kind] = float(rate)
    return out


_WRITES = "memlog writes to its data directory, lock files included, even to read"


def writable(directory: Path) -> bool:
    """Whether this process may create files in ``directory`` (False on a
    read-only file system, even for root)."""
    return os.access(directory, os.W_OK | os.X_OK)


def check_data_dir(data_dir: Path, write: bool) -> None:
    """Refuse a data directory that cannot hold a store, before anything opens it.

    A path that exists but is not a directory (a file, ``/dev/null``) is
    :class:`~eventstore.StoreNotFoundError` for a read and
    :class:`~eventstore.NotWritableError` for a write. A write also needs the
    directory, or the nearest existing parent it will be created in, to be a
    writable directory.
    """
    where = repr(os.fspath(data_dir))
    if data_dir.exists() and not data_dir.is_dir():
        if not write:
            raise StoreNotFoundError(f"no memlog store in {where}: it is not a directory; check the data "
                                     "directory (--dir, MEMLOG_DIR)")
        raise NotWritableError(f"{where} is not a directory; a data directory (--dir, MEMLOG_DIR) "
                               "must be one")
    if not write:
        return
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotWritableError(f"{os.fspath(existing)!r} is not a directory, so {where} cannot be "
                               "created in it")
    if not writable(existing):
        raise NotWritableError(f"cannot write to {os.fspath(existing)!r}: permission denied or a read-only "
                               f"file system; {_WRITES}")
