"""memlog: an event-sourced memory store for AI agents.

``import memlog`` gives the public API of the three layers in one place::

    from memlog import MemoryLog
    with MemoryLog.open(".memlog") as mem:
        sid = mem.start_session(user_id="alice")

- the facade and its results, settings and reports (from :mod:`commands`);
- the event log, the event catalogue, the vocabulary and the error tree (from
  :mod:`eventstore`).

The packages themselves stay importable (``from commands import MemoryLog``,
``from eventstore import EventLog``).
"""

from commands import (
    AsyncMemoryLog,
    AsyncResourceHandle,
    CompactionReport,
    ContextBlock,
    ContextSection,
    DeletionReport,
    EntryResult,
    ExtractiveSummariser,
    HistoryItem,
    ImportReport,
    MemoryLog,
    MemoryPage,
    MemoryResult,
    PointInTime,
    ResourceHandle,
    ResourceMessage,
    SearchResult,
    SessionResult,
    Settings,
    Summariser,
    SummaryReport,
    TranscriptPage,
    load_settings,
)
from eventstore import *  # noqa: F403  (the log, events, vocabulary and errors: eventstore.__all__)
from eventstore import __all__ as _eventstore_all

__all__ = [
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
    "ResourceHandle",
    "ResourceMessage",
    "SearchResult",
    "SessionResult",
    "SummaryReport",
    "TranscriptPage",
    "Settings",
    "Summariser",
    "load_settings",
    *_eventstore_all,
]
