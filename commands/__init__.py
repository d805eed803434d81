"""The write side: validation to events, the MemoryLog facade and the CLI."""

from .context import DROP_ORDER, build_context, chars_over_four
from .memory import MemoryLog
from .redaction import PATTERNS, Redactor
from .results import (
    ContextBlock,
    ContextSection,
    EntryResult,
    MemoryResult,
    SearchResult,
    SessionResult,
)
from .settings import DEFAULT_RETENTION_DAYS, Settings, load_settings

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "DROP_ORDER",
    "PATTERNS",
    "ContextBlock",
    "ContextSection",
    "EntryResult",
    "MemoryLog",
    "MemoryResult",
    "Redactor",
    "SearchResult",
    "SessionResult",
    "Settings",
    "build_context",
    "chars_over_four",
    "load_settings",
]
