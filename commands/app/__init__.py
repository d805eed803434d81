"""The application: a :class:`Store` composed of log, projections, settings
and writer, and the use cases that run on it, by concern.

Each use case is a function that takes the store first. From the ground up:

- :mod:`.resources`: the model of memory resources (specs, policy, reading);
- :mod:`.store`: the store and its parts (settings, validation, the entry
  factory with ingest redaction, the writer, pseudonyms, accesses);
- :mod:`.recording`: entries of every kind, their updates and edits, user
  memories, show, the duplicate check;
- :mod:`.recall`: validated queries and results, scopes, the context block
  within a token budget;
- :mod:`.forgetting`: delete, forget, redact, retention, purge, with their
  pipeline, selection, journal and forensic scan;
- :mod:`.upkeep`: compaction, summaries, resources' handle, extraction,
  checkpoints, idle sessions and ``memlog maintain``;
- :mod:`.sessions`: start, read, list, close, archive, restore; agents;
- :mod:`.audit`: as-of reads, history, the raw log, the deletion reports;
- :mod:`.ops`: health, decay parameters, replay, verify, stats.

A subpackage imports only those before it in this list, and the shared
:mod:`.log`, :mod:`.metrics` and :mod:`.results`. Nothing here imports the
facade or the CLI.
"""

from . import audit, forgetting, sessions
from .audit.reads import HistoryItem, PointInTime
from .forgetting import purging
from .ops import admin as maintenance
from .ops import health
from .recall import scope, search
from .recall.context import DROP_ORDER, build_context, chars_over_four
from .recording import records
from .recording.records import MemoryPage
from .results import (
    ContextBlock,
    ContextSection,
    DeletionReport,
    EntryResult,
    MemoryResult,
    SearchResult,
    SessionResult,
    TranscriptPage,
)
from .store.redaction import PATTERNS, Redactor
from .store.settings import DEFAULT_RETENTION_DAYS, Settings, load_settings
from .store.store import Store, holds_store, require_store
from .upkeep.summariser import ExtractiveSummariser, Summariser

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "DROP_ORDER",
    "PATTERNS",
    "ContextBlock",
    "ContextSection",
    "DeletionReport",
    "EntryResult",
    "ExtractiveSummariser",
    "HistoryItem",
    "MemoryPage",
    "MemoryResult",
    "PointInTime",
    "Redactor",
    "SearchResult",
    "SessionResult",
    "Settings",
    "Store",
    "Summariser",
    "TranscriptPage",
    "audit",
    "build_context",
    "chars_over_four",
    "forgetting",
    "health",
    "holds_store",
    "load_settings",
    "maintenance",
    "purging",
    "records",
    "require_store",
    "scope",
    "search",
    "sessions",
]
