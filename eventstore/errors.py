"""The one error tree of memlog.

Every error memlog raises on purpose is a :class:`MemlogError`. Each class has a
stable ``code`` (a named constant below, which scripts may match on) and an
``exit_code`` that the CLI uses. Messages name ids, fields and counts, never
memory content. ``docs/cli.md`` has a table of every code in :data:`CODES`
(``tests/test_errors.py`` checks it).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CODES",
    "E_ABORTED",
    "E_CONCURRENT_MOD",
    "E_CONFLICT",
    "E_DUPLICATE_EVENT",
    "E_ENTRY_NOT_FOUND",
    "E_EVENT_NOT_FOUND",
    "E_IMPORT_BAD_RECORD",
    "E_INTERNAL",
    "E_INVALID_FORMAT",
    "E_INVALID_PATTERN",
    "E_INVALID_QUERY",
    "E_LOCK_TIMEOUT",
    "E_MEMLOG",
    "E_MEMORY_NOT_FOUND",
    "E_NOT_FOUND",
    "E_NOT_WRITABLE",
    "E_NO_STORE",
    "E_PURGE_UNVERIFIED",
    "E_QUERY_TIMEOUT",
    "E_READ_ONLY",
    "E_SCHEMA_INVALID",
    "E_SESSION_ARCHIVED",
    "E_SESSION_CLOSED",
    "E_SESSION_CORRUPT",
    "E_SESSION_NOT_FOUND",
    "E_SIZE_LIMIT",
    "E_STORAGE_CORRUPT",
    "E_STORAGE_FULL",
    "E_STORAGE_IO",
    "E_STORE_REPLACED",
    "E_UNSAFE_STORE",
    "E_USAGE",
    "INTERNAL_EXIT_CODE",
    "AbortedError",
    "ConcurrencyError",
    "ConflictError",
    "CorruptionError",
    "DuplicateEventError",
    "EntryNotFoundError",
    "EventNotFoundError",
    "ImportRecordError",
    "InvalidEventError",
    "InvalidInputError",
    "InvalidPatternError",
    "InvalidQueryError",
    "LockTimeoutError",
    "MemlogError",
    "MemoryNotFoundError",
    "NatsApiError",
    "NatsUnavailableError",
    "NatsUnsupportedError",
    "NotFoundError",
    "NotWritableError",
    "PurgeUnverifiedError",
    "QueryTimeoutError",
    "ReadOnlyError",
    "RetiredError",
    "SessionArchivedError",
    "SessionClosedError",
    "SessionCorruptError",
    "SessionNotFoundError",
    "SizeLimitError",
    "StorageError",
    "StorageFullError",
    "StoreNotFoundError",
    "UnsafeStoreError",
    "UsageError",
]

E_MEMLOG: Final = "E_MEMLOG"
E_SCHEMA_INVALID: Final = "E_SCHEMA_INVALID"
E_INVALID_FORMAT: Final = "E_INVALID_FORMAT"
E_INVALID_QUERY: Final = "E_INVALID_QUERY"
E_SIZE_LIMIT: Final = "E_SIZE_LIMIT"
E_USAGE: Final = "E_USAGE"
E_ABORTED: Final = "E_ABORTED"
E_NOT_FOUND: Final = "E_NOT_FOUND"
E_SESSION_NOT_FOUND: Final = "E_SESSION_NOT_FOUND"
E_ENTRY_NOT_FOUND: Final = "E_ENTRY_NOT_FOUND"
E_MEMORY_NOT_FOUND: Final = "E_MEMORY_NOT_FOUND"
E_EVENT_NOT_FOUND: Final = "E_EVENT_NOT_FOUND"
E_NO_STORE: Final = "E_NO_STORE"
E_SESSION_ARCHIVED: Final = "E_SESSION_ARCHIVED"
E_SESSION_CLOSED: Final = "E_SESSION_CLOSED"
E_READ_ONLY: Final = "E_READ_ONLY"
E_IMPORT_BAD_RECORD: Final = "E_IMPORT_BAD_RECORD"
E_CONFLICT: Final = "E_CONFLICT"
E_CONCURRENT_MOD: Final = "E_CONCURRENT_MOD"
E_DUPLICATE_EVENT: Final = "E_DUPLICATE_EVENT"
E_STORAGE_IO: Final = "E_STORAGE_IO"
E_STORAGE_FULL: Final = "E_STORAGE_FULL"
E_STORAGE_CORRUPT: Final = "E_STORAGE_CORRUPT"
E_LOCK_TIMEOUT: Final = "E_LOCK_TIMEOUT"
E_STORE_REPLACED: Final = "E_STORE_REPLACED"
E_NOT_WRITABLE: Final = "E_NOT_WRITABLE"
E_UNSAFE_STORE: Final = "E_UNSAFE_STORE"
E_INVALID_PATTERN: Final = "E_INVALID_PATTERN"
E_PURGE_UNVERIFIED: Final = "E_PURGE_UNVERIFIED"
E_SESSION_CORRUPT: Final = "E_SESSION_CORRUPT"
E_QUERY_TIMEOUT: Final = "E_QUERY_TIMEOUT"
# Not an error class: the CLI's answer to a bug (any exception memlog did not raise on purpose).
E_INTERNAL: Final = "E_INTERNAL"
INTERNAL_EXIT_CODE: Final = 70


class MemlogError(Exception):
    """Base of every error memlog raises on purpose."""

    code: str = E_MEMLOG
    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        """The error as a JSON-ready mapping (``code`` and ``message``)."""
        return {"code": self.code, "message": self.message}


class AbortedError(MemlogError):
    """The user declined a confirmation; nothing was written."""

    code = E_ABORTED


class InvalidInputError(MemlogError):
    """A caller passed a value that fails validation."""

    code = E_SCHEMA_INVALID
    exit_code = 2


class UsageError(InvalidInputError):
    """A command line is malformed (unknown option, bad choice, missing argument)."""

    code = E_USAGE


class ImportRecordError(InvalidInputError):
    """A record of an import is malformed; nothing of that import was written.

    ``file`` and ``line`` locate the record (line 0: the file as a whole) and
    ``reason`` says what is wrong, naming fields, never content."""

    code = E_IMPORT_BAD_RECORD

    def __init__(self, message: str, *, file: str = "", line: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.reason = reason


class InvalidEventError(InvalidInputError):
    """An event, stream id, actor or event id is malformed."""

    code = E_INVALID_FORMAT


class InvalidPatternError(InvalidInputError):
    """A redaction regex is malformed, uses what the linear-time engine does
    not support, or would run away on the input."""

    code = E_INVALID_PATTERN


class InvalidQueryError(InvalidInputError):
    """A search or filter is malformed."""

    code = E_INVALID_QUERY


class QueryTimeoutError(InvalidQueryError):
    """A search ran past its deadline (the setting ``search_deadline_ms``);
    nothing was recorded: narrow the query or raise the deadline."""

    code = E_QUERY_TIMEOUT


class SizeLimitError(InvalidInputError):
    """Content is larger than the configured limit."""

    code = E_SIZE_LIMIT


class NotFoundError(MemlogError):
    """An id names nothing that exists (or existed at the asked time)."""

    code = E_NOT_FOUND
    exit_code = 3


class SessionNotFoundError(NotFoundError):
    """No session has this id (at the asked time)."""

    code = E_SESSION_NOT_FOUND


class EntryNotFoundError(NotFoundError):
    """No entry (or memory) has this id."""

    code = E_ENTRY_NOT_FOUND


class MemoryNotFoundError(NotFoundError):
    """A user has no memory under this key."""

    code = E_MEMORY_NOT_FOUND


class EventNotFoundError(NotFoundError):
    """No event is stored at this seq."""

    code = E_EVENT_NOT_FOUND


class StoreNotFoundError(NotFoundError):
    """A read was pointed at a directory that holds no memlog store."""

    code = E_NO_STORE


class SessionArchivedError(MemlogError):
    """The session is archived; restore it first."""

    code = E_SESSION_ARCHIVED
    exit_code = 4


class SessionClosedError(MemlogError):
    """The session is closed and takes no new entries; start a new session."""

    code = E_SESSION_CLOSED
    exit_code = 4


class ReadOnlyError(MemlogError):
    """The store was opened read-only (``memlog mcp --read-only``): no writes."""

    code = E_READ_ONLY
    exit_code = 4


class ConflictError(MemlogError):
    """The request contradicts the current state."""

    code = E_CONFLICT
    exit_code = 4


class ConcurrencyError(ConflictError):
    """Optimistic concurrency failed: the stream moved on since it was read."""

    code = E_CONCURRENT_MOD

    def __init__(self, message: str, *, stream: str = "", expected: int = 0, actual: int = 0):
        super().__init__(message)
        self.stream = stream
        self.expected = expected
        self.actual = actual


class DuplicateEventError(ConflictError):
    """An event id was reused for a different append."""

    code = E_DUPLICATE_EVENT


class StorageError(MemlogError):
    """The storage layer failed (I/O, LMDB, Tantivy)."""

    code = E_STORAGE_IO
    exit_code = 5


class StorageFullError(StorageError):
    """The disk is full; nothing was written."""

    code = E_STORAGE_FULL


class CorruptionError(StorageError):
    """Stored bytes do not decode or do not match their commitment."""

    code = E_STORAGE_CORRUPT

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class SessionCorruptError(CorruptionError):
    """A session's manifest cannot be read consistently: the views' manifest
    and the session's stream in the log disagree; ``memlog replay`` rebuilds
    the views from the log."""

    code = E_SESSION_CORRUPT


class NotWritableError(StorageError):
    """The data directory, or a file in it, cannot be written: permissions, a
    read-only file system, or a file where a directory must be."""

    code = E_NOT_WRITABLE


class UnsafeStoreError(StorageError):
    """The data directory can be written by others, or holds a link leading
    outside it; memlog refuses to use it."""

    code = E_UNSAFE_STORE


class PurgeUnverifiedError(StorageError):
    """A purge finished but its verification found deleted content, or could
    not check it; the purge's record says what was found and where."""

    code = E_PURGE_UNVERIFIED


class LockTimeoutError(StorageError):
    """A maintenance lock could not be taken in time."""

    code = E_LOCK_TIMEOUT


class RetiredError(StorageError):
    """A store was replaced (a rebuild swapped in a new one); reopen it."""

    code = E_STORE_REPLACED


# -- the NATS JetStream log -------------------------


class NatsUnavailableError(StorageError):
    """The NATS servers did not answer in time (code ``E_STORAGE_IO``): retry later."""


class NatsUnsupportedError(UnsafeStoreError):
    """The NATS server is too old, or the stream is configured against the log's needs."""


class NatsApiError(StorageError):
    """A JetStream API error that is not a retry (code ``E_STORAGE_IO``;
    ``status`` and ``err_code`` are JetStream's, ``description`` its text)."""

    def __init__(self, message: str, *, status: int = 0, err_code: int = 0, description: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.err_code = err_code
        self.description = description


# -- end of the NATS block ----------------------------------------------------------


_SHOWN = 40  # characters of a refused value that an error message repeats


def shown(value: object) -> str:
    """A refused value as an error message repeats it: its ``repr`` when that
    is at most 40 characters (an id with a typo), else only its type and size
    in angle brackets (a long "id" may be text pasted in the wrong place, and
    messages hold no content)."""
    if isinstance(value, int) and value.bit_length() > 128:  # repr may refuse (int_max_str_digits)
        return "<a very large number>"
    text = repr(value)
    if len(text) <= _SHOWN:
        return text
    if isinstance(value, str):
        return f"<a text of {len(value)} characters>"
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    name = type(value).__name__
    return f"<{'an' if name[:1] in 'aeiou' else 'a'} {name} value>"


# Every code memlog prints, in the order of the table in docs/cli.md.
CODES: Final[tuple[str, ...]] = (
    E_SCHEMA_INVALID, E_INVALID_FORMAT, E_INVALID_QUERY, E_SIZE_LIMIT, E_USAGE, E_ABORTED,
    E_NOT_FOUND, E_SESSION_NOT_FOUND, E_ENTRY_NOT_FOUND, E_MEMORY_NOT_FOUND, E_EVENT_NOT_FOUND,
    E_NO_STORE, E_SESSION_ARCHIVED, E_SESSION_CLOSED, E_READ_ONLY, E_CONFLICT, E_CONCURRENT_MOD,
    E_DUPLICATE_EVENT, E_STORAGE_IO, E_STORAGE_FULL, E_STORAGE_CORRUPT, E_LOCK_TIMEOUT, E_STORE_REPLACED,
    E_NOT_WRITABLE, E_UNSAFE_STORE, E_INVALID_PATTERN, E_PURGE_UNVERIFIED, E_IMPORT_BAD_RECORD, E_MEMLOG,
    E_INTERNAL, E_SESSION_CORRUPT, E_QUERY_TIMEOUT,
)
