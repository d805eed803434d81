"""Read models rebuilt from the event log: views, search and decay.

A projection is a pure function of the log (see :mod:`projections.views.reducers`
and :mod:`projections.search.apply`); :class:`Projections` owns the I/O, the
checkpoints and rebuilds, and :meth:`Projections.search` is the one search
entry point: a query, an optional as-of seq and the current time in, ranked
entries out.
"""

from ._skips import Skipped
from .decay import access_score, decay_factor, entry_importance, importance_of, relevance
from .embed import Embedder, VectorIndex, default_embedder
from .models import (
    AGENT_UNKNOWN,
    DEFAULT_RATES,
    AccessView,
    CheckpointView,
    DecayParams,
    DeletionRecord,
    EntryView,
    MemoryView,
    RankInputs,
    RedactionInfo,
    Reinforcement,
    ResourceActivity,
    ResourceItem,
    ResourceState,
    SessionStats,
    SessionView,
    StoredEntry,
    SupersededInfo,
    TombstoneInfo,
)
from .runner import LAYOUT, Projections, PurgeSplit
from .search import (
    OPEN_SEQ,
    Ranked,
    Ranking,
    Scope,
    SearchHit,
    SearchIndex,
    SearchQuery,
    build_schema,
    entry_document,
    run_search,
    score,
    searchable_text,
    tokens,
)
from .search.terms import content_terms
from .views import VIEW_DBS, ViewReader, ViewStore
from .views.formation import lesson_words  # -- formation --

__all__ = [
    "AGENT_UNKNOWN",
    "DEFAULT_RATES",
    "LAYOUT",
    "OPEN_SEQ",
    "VIEW_DBS",
    "AccessView",
    "CheckpointView",
    "DecayParams",
    "DeletionRecord",
    "Embedder",
    "EntryView",
    "MemoryView",
    "Projections",
    "PurgeSplit",
    "RankInputs",
    "Ranked",
    "Ranking",
    "RedactionInfo",
    "Reinforcement",
    "ResourceActivity",
    "ResourceItem",
    "ResourceState",
    "Scope",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "SessionStats",
    "SessionView",
    "Skipped",
    "StoredEntry",
    "SupersededInfo",
    "TombstoneInfo",
    "VectorIndex",
    "ViewReader",
    "ViewStore",
    "access_score",
    "build_schema",
    "content_terms",
    "decay_factor",
    "default_embedder",
    "entry_document",
    "entry_importance",
    "importance_of",
    "lesson_words",
    "relevance",
    "run_search",
    "score",
    "searchable_text",
    "tokens",
]
