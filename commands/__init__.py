"""The write side: the application (:mod:`commands.app`), the
:class:`MemoryLog` facade over it (and its async face, :class:`AsyncMemoryLog`),
and the ``memlog`` CLI (:mod:`commands.cli`).

The names below are imported on first use (a module ``__getattr__``), so that
``memlog --help`` does not import asyncio or every use case: ``from commands
import MemoryLog`` imports the facade and what it needs, no more."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {  # name -> the module (relative to this package) that defines it
    "AsyncMemoryLog": ".aio",
    "AsyncResourceHandle": ".aio",
    "CompactionReport": ".app.upkeep.compaction",
    "ContextBlock": ".app",
    "ContextSection": ".app",
    "DEFAULT_RETENTION_DAYS": ".app",
    "DROP_ORDER": ".app",
    "DeletionReport": ".app",
    "EntryResult": ".app",
    "ExtractiveSummariser": ".app",
    "HistoryItem": ".app",
    "ImportReport": ".transfer",
    "MemoryLog": ".memory",
    "MemoryPage": ".app",
    "MemoryResult": ".app",
    "PATTERNS": ".app",
    "PointInTime": ".app",
    "Redactor": ".app",
    "ResourceHandle": ".app.upkeep.resources",
    "ResourceMessage": ".app.resources",
    "SearchResult": ".app",
    "SessionResult": ".app",
    "Settings": ".app",
    "Store": ".app",
    "Summariser": ".app",
    "SummaryReport": ".app.upkeep.summaries",
    "TranscriptPage": ".app",
    "build_context": ".app",
    "chars_over_four": ".app",
    "load_settings": ".app",
}

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


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use, and keep the name here."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, imported or not."""
    return sorted({*globals(), *__all__})
