"""The one error tree of memlog.

Every error memlog raises on purpose is a :class:`MemlogError`. Each class has a
stable ``code`` (a string that scripts may match on) and an ``exit_code`` that
the CLI uses. Messages name ids, fields and counts, never memory content.
"""

from __future__ import annotations

__all__ = [
    "ConcurrencyError",
    "ConflictError",
    "CorruptionError",
    "DuplicateEventError",
    "InvalidEventError",
    "InvalidInputError",
    "InvalidQueryError",
    "LockTimeoutError",
    "MemlogError",
    "NotFoundError",
    "SessionArchivedError",
    "SizeLimitError",
    "StorageError",
    "StorageFullError",
]


class MemlogError(Exception):
    """Base of every error memlog raises on purpose."""

    code: str = "E_MEMLOG"
    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        """The error as a JSON-ready mapping (``code`` and ``message``)."""
        return {"code": self.code, "message": self.message}


class InvalidInputError(MemlogError):
    """A caller passed a value that fails validation."""

    code = "E_SCHEMA_INVALID"
    exit_code = 2


class InvalidEventError(InvalidInputError):
    """An event, stream id, actor or event id is malformed."""

    code = "E_INVALID_FORMAT"


class InvalidQueryError(InvalidInputError):
    """A search or filter is malformed."""

    code = "E_INVALID_QUERY"


class SizeLimitError(InvalidInputError):
    """Content is larger than the configured limit."""

    code = "E_SIZE_LIMIT"


class NotFoundError(MemlogError):
    """An id names nothing that exists (or existed at the asked time)."""

    code = "E_NOT_FOUND"
    exit_code = 3

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class SessionArchivedError(MemlogError):
    """The session is archived; restore it first."""

    code = "E_SESSION_ARCHIVED"
    exit_code = 4


class ConflictError(MemlogError):
    """The request contradicts the current state."""

    code = "E_CONFLICT"
    exit_code = 4


class ConcurrencyError(ConflictError):
    """Optimistic concurrency failed: the stream moved on since it was read."""

    code = "E_CONCURRENT_MOD"

    def __init__(self, message: str, *, stream: str = "", expected: int = 0, actual: int = 0):
        super().__init__(message)
        self.stream = stream
        self.expected = expected
        self.actual = actual


class DuplicateEventError(ConflictError):
    """An event id was reused for a different append."""

    code = "E_DUPLICATE_EVENT"


class StorageError(MemlogError):
    """The storage layer failed (I/O, LMDB, Tantivy)."""

    code = "E_STORAGE_IO"
    exit_code = 5


class StorageFullError(StorageError):
    """The disk is full; nothing was written."""

    code = "E_STORAGE_FULL"


class CorruptionError(StorageError):
    """Stored bytes do not decode or do not match their commitment."""

    code = "E_STORAGE_CORRUPT"

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class LockTimeoutError(StorageError):
    """A maintenance lock could not be taken in time."""

    code = "E_LOCK_TIMEOUT"
