"""The write side: the application (:mod:`commands.app`), the
:class:`MemoryLog` facade over it (and its async face, :class:`AsyncMemoryLog`),
and the ``memlog`` CLI (:mod:`commands.cli`)."""

from .aio import AsyncMemoryLog, AsyncResourceHandle
from .app import (
    DEFAULT_RETENTION_DAYS,
    DROP_ORDER,
    PATTERNS,
    ContextBlock,
    ContextSection,
    DeletionReport,
    EntryResult,
    ExtractiveSummariser,
    HistoryItem,
    MemoryPage,
    MemoryResult,
    PointInTime,
    Redactor,
    SearchResult,
    SessionResult,
    Settings,
    Store,
    Summariser,
    TranscriptPage,
    build_context,
    chars_over_four,
    load_settings,
)
from .app.resources import ResourceMessage
from .app.upkeep.compaction import CompactionReport
from .app.upkeep.resources import ResourceHandle
from .app.upkeep.summaries import SummaryReport
from .memory import MemoryLog
from .transfer import ImportReport

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "DROP_ORDER",
    "PATTERNS",
    "AsyncMemoryLog",
    "AsyncResourceHandle",
    "CompactionReport",
    "ContextBlock",
    "ContextSection",
    "DeletionReport",
    "EntryResult",
    "ExtractiveSummariser",
    "HistoryItem",
    "ImportReport",
    "MemoryLog",
    "MemoryPage",
    "MemoryResult",
    "PointInTime",
    "Redactor",
    "ResourceHandle",
    "ResourceMessage",
    "SearchResult",
    "SessionResult",
    "Settings",
    "Store",
    "Summariser",
    "SummaryReport",
    "TranscriptPage",
    "build_context",
    "chars_over_four",
    "load_settings",
]
