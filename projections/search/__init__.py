"""The search projection: a sharded Tantivy index of entries, and ranking.

- :mod:`.index`: the shards (content indexed, never stored), the schema and
  the document of an entry;
- :mod:`.apply`: which index operations an event calls for (pure);
- :mod:`.query`: the Tantivy query (BM25 with fuzzy and prefix matching,
  filters, as-of intervals) and the candidates it finds;
- :mod:`.rank`: the entry point: candidates ranked with decay into entries.
"""

from .apply import search_ops
from .index import (
    OPEN_SEQ,
    SearchIndex,
    SearchShard,
    broken_index,
    build_schema,
    entry_document,
    searchable_text,
)
from .query import (
    Scope,
    SearchHit,
    SearchQuery,
    build_query,
    filter_clauses,
    run_search,
    scope_clause,
    tokens,
)
from .rank import Ranked, Ranking, rank, score

__all__ = [
    "OPEN_SEQ",
    "Ranked",
    "Ranking",
    "Scope",
    "SearchHit",
    "SearchIndex",
    "SearchQuery",
    "SearchShard",
    "broken_index",
    "build_query",
    "build_schema",
    "entry_document",
    "filter_clauses",
    "rank",
    "run_search",
    "scope_clause",
    "score",
    "search_ops",
    "searchable_text",
    "tokens",
]
