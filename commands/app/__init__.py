"""The application: a :class:`Store` composed of log, projections, settings
and writer, and the use cases that run on it.

Each use case is a function that takes the store first:

- :mod:`.sessions`: start, read, list, archive, restore;
- :mod:`.records`: entries of every kind, their updates, user memories, show;
- :mod:`.search`: validated queries and results with snippets;
- :mod:`.scope`: who is reading (a user, an agent, a session) as a search scope;
- :mod:`.context`: the context block within a token budget;
- :mod:`.audit`: as-of reads, history, the raw log;
- :mod:`.forgetting`: delete, forget, redact, retention, purge (the pipeline
  itself is :mod:`.privacy`, with the forensic :mod:`.scan` and the
  deletion :mod:`.reports`);
- :mod:`.maintenance`: decay parameters, replay, verify, stats.

Nothing here imports the facade or the CLI.
"""

from . import audit, forgetting, health, maintenance, purging, records, scope, search, sessions
from .audit import HistoryItem, PointInTime
from .context import DROP_ORDER, build_context, chars_over_four
from .records import MemoryPage
from .redaction import PATTERNS, Redactor
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
from .settings import DEFAULT_RETENTION_DAYS, Settings, load_settings
from .store import Store, holds_store, require_store
from .summarise import ExtractiveSummariser, Summariser

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
