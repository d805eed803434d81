"""memlog's vocabulary, declared once: the words every layer shares.

Each set of words is a ``Literal`` type (used by the event catalogue and by
mypy) and a tuple of its values (used by validation and click's choices),
the tuple derived from the type so the two cannot disagree.

:data:`DETAIL_TEXT_FIELDS` names the text fields of each details struct;
:mod:`eventstore.texts` walks them.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "DETAIL_TEXT_FIELDS",
    "ENTRY_KINDS",
    "ENTRY_STATES",
    "FINDING_STATUSES",
    "ID_PREFIXES",
    "LEVELS",
    "MEMORY_DOC_KIND",
    "MEMORY_STATES",
    "ROLES",
    "SEARCH_MODES",
    "SEARCH_SOURCES",
    "SHOWN_STATES",
    "SORTS",
    "EntryKind",
    "EntryState",
    "FindingStatus",
    "Level",
    "MemoryState",
    "Role",
    "SearchMode",
    "SearchSource",
    "Sort",
]

EntryKind = Literal[
    "message", "decision", "finding", "lesson", "preference",
    "task", "handoff", "summary", "project",
]
Role = Literal["user", "assistant", "system", "tool"]
Level = Literal["low", "medium", "high", "critical"]
FindingStatus = Literal["open", "in_progress", "resolved", "wont_fix"]
# live: as recorded; redacted: spans removed; compacted: folded into a summary;
# deleted: erased (tombstone only); absent: not yet recorded at an as-of point;
# superseded: a later item of the same user and key replaced it (kept for the past).
EntryState = Literal["live", "redacted", "compacted", "deleted", "absent", "superseded"]
MemoryState = Literal["live", "forgotten", "superseded"]
Sort = Literal["relevance", "newest", "oldest"]
# What a search looks through, and how it matches (text: BM25; semantic:
# embeddings; hybrid: both, fused).
SearchSource = Literal["entries", "memories", "both"]
SearchMode = Literal["text", "semantic", "hybrid"]

ENTRY_KINDS: Final[tuple[str, ...]] = get_args(EntryKind)
ROLES: Final[tuple[str, ...]] = get_args(Role)
LEVELS: Final[tuple[str, ...]] = get_args(Level)
FINDING_STATUSES: Final[tuple[str, ...]] = get_args(FindingStatus)
ENTRY_STATES: Final[tuple[str, ...]] = get_args(EntryState)
MEMORY_STATES: Final[tuple[str, ...]] = get_args(MemoryState)
SORTS: Final[tuple[str, ...]] = get_args(Sort)
SEARCH_SOURCES: Final[tuple[str, ...]] = get_args(SearchSource)
SEARCH_MODES: Final[tuple[str, ...]] = get_args(SearchMode)
# The kind of a user memory's document in the search index (no entry kind is named so).
MEMORY_DOC_KIND: Final[str] = "memory"
# The states in which an entry's text is shown (search, context, updates).
SHOWN_STATES: Final[frozenset[str]] = frozenset(("live", "redacted"))

# The prefix of a new entry id per kind (``dec-3f9a1c2b7d4e``).
ID_PREFIXES: Final[dict[str, str]] = {
    "message": "msg", "decision": "dec", "finding": "fnd", "lesson": "les", "preference": "pref",
    "task": "task", "handoff": "hnd", "summary": "sum", "project": "prj",
}

# The text-bearing fields of each details struct (by its ``kind`` tag), in
# declaration order; a tuple-valued field holds several texts.
DETAIL_TEXT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "message": ("topic",),
    "decision": ("rationale", "alternatives", "rejected_reasons"),
    "finding": ("category", "evidence", "recommendation"),
    "preference": ("key", "value", "category"),
    "task": (),
}

