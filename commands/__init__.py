"""The write side: the application (:mod:`commands.app`), the
:class:`MemoryLog` facade over it, and the ``memlog`` CLI (:mod:`commands.cli`)."""

from .app import (
    DEFAULT_RETENTION_DAYS,
    DROP_ORDER,
    PATTERNS,
    ContextBlock,
    ContextSection,
    DeletionReport,
    EntryResult,
    HistoryItem,
    MemoryPage,
    MemoryResult,
    PointInTime,
    Redactor,
    SearchResult,
    SessionResult,
    Settings,
    Store,
    build_context,
    chars_over_four,
    load_settings,
)
from .memory import MemoryLog

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "DROP_ORDER",
    "PATTERNS",
    "ContextBlock",
    "ContextSection",
    "DeletionReport",
    "EntryResult",
    "HistoryItem",
    "MemoryLog",
    "MemoryPage",
    "MemoryResult",
    "PointInTime",
    "Redactor",
    "SearchResult",
    "SessionResult",
    "Settings",
    "Store",
    "build_context",
    "chars_over_four",
    "load_settings",
]
