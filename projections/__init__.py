"""Read models rebuilt from the event log: views, search and decay.

A projection is a pure function of the log (see :mod:`projections.reducers` and
:mod:`projections._search_apply`); :class:`Projections` owns the I/O, the
checkpoints and rebuilds.
"""

from ._view_read import ViewReader
from .decay import access_score, decay_factor, entry_importance, importance_of, relevance
from .models import (
    DEFAULT_RATES,
    AccessView,
    DecayParams,
    DeletionRecord,
    EntryView,
    MemoryView,
    RankInputs,
    RedactionInfo,
    SessionStats,
    SessionView,
    StoredEntry,
    TombstoneInfo,
)
from .query import SearchHit, SearchQuery, run_search, score, tokens
from .runner import Projections
from .search import OPEN_SEQ, SearchIndex, build_schema, entry_document, searchable_text
from .views import VIEW_DBS, ViewStore

__all__ = [
    "DEFAULT_RATES",
    "OPEN_SEQ",
    "VIEW_DBS",
    "AccessView",
    "DecayParams",
    "DeletionRecord",
    "EntryView",
    "MemoryView",
    "Projections",
    "RankInputs",
    "RedactionInfo",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "SessionStats",
    "SessionView",
    "StoredEntry",
    "TombstoneInfo",
    "ViewReader",
    "ViewStore",
    "access_score",
    "build_schema",
    "decay_factor",
    "entry_document",
    "entry_importance",
    "importance_of",
    "relevance",
    "run_search",
    "score",
    "searchable_text",
    "tokens",
]
