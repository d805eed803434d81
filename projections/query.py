"""Search queries: BM25 with fuzzy and prefix matching (seed 002), filters,
as-of intervals, and relevance scoring with decay (seed 000)."""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec
import tantivy

from eventstore import InvalidQueryError

from .decay import access_score, decay_factor, importance_of, relevance
from .search import OPEN_SEQ, SearchIndex, check_limit

__all__ = ["SearchHit", "SearchQuery", "build_query", "run_search", "tokens"]

Sort = Literal["relevance", "newest", "oldest"]
_TOKEN = re.compile(r"\w+", re.UNICODE)
_Must, _Should, _MustNot = tantivy.Occur.Must, tantivy.Occur.Should, tantivy.Occur.MustNot


class SearchQuery(msgspec.Struct, frozen=True):
    """What to search for (seed 000's query API)."""

    text: str = ""
    kinds: tuple[str, ...] = ()
    session_id: str | None = None
    agent_ids: tuple[str, ...] = ()
    user_id: str | None = None
    tags: tuple[str, ...] = ()
    since: int | None = None
    until: int | None = None
    limit: int = 10
    sort: Sort = "relevance"
    min_relevance: float = 0.0
    exclude_sessions: tuple[str, ...] = ()


class SearchHit(msgspec.Struct, frozen=True):
    """One result before the views fill in the entry."""

    rseq: int
    text_score: float


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens, as Tantivy's default tokenizer makes them."""
    return [t.lower() for t in _TOKEN.findall(text) if len(t) <= 40]


def build_query(schema: Any, query: SearchQuery, as_of: int | None,
                known: frozenset[str] = frozenset()) -> Any:
    """The Tantivy query for text, filters and interval.

    Every word matches exactly; the last word also as a prefix (the query is
    often still being typed); a word found nowhere in the index (``known`` are
    the ones that are) also matches fuzzily, with an edit distance of 20 % of
    its length (seed 002). Expanding frequent words into every prefix and
    neighbour cost more than the rest of the query together.
    """
    clauses: list[tuple[Any, Any]] = []
    words = tokens(query.text)
    if words:
        terms = [(_Should, _term(schema, w, i == len(words) - 1, w not in known))
                 for i, w in enumerate(words)]
        clauses.append((_Must, tantivy.Query.boolean_query(terms)))
    else:
        clauses.append((_Must, tantivy.Query.all_query()))
    for field, values in (("kind", query.kinds), ("agent", query.agent_ids), ("tags", query.tags)):
        if values:
            clauses.append((_Must, _any_of(schema, field, values)))
    for field, value in (("session", query.session_id), ("user", query.user_id)):
        if value:
            clauses.append((_Must, tantivy.Query.term_query(schema, field, value)))
    if query.since is not None or query.until is not None:
        clauses.append((_Must, tantivy.Query.range_query(
            schema, "occurred_at", tantivy.FieldType.Integer, query.since, query.until)))
    clauses.append((_Must, _interval(schema, as_of)))
    clauses += [(_MustNot, tantivy.Query.term_query(schema, "session", s))
                for s in query.exclude_sessions]
    return tantivy.Query.boolean_query(clauses)


def _term(schema: Any, word: str, last: bool, unknown: bool) -> Any:
    exact = tantivy.Query.term_query(schema, "content", word)
    options = [(_Should, tantivy.Query.boost_query(exact, 2.0))]
    if last and len(word) >= 3:
        prefix = tantivy.Query.fuzzy_term_query(schema, "content", word, distance=0, prefix=True)
        options.append((_Should, tantivy.Query.boost_query(prefix, 0.5)))
    distance = min(2, int(len(word) * 0.2))
    if distance and unknown:
        fuzzy = tantivy.Query.fuzzy_term_query(schema, "content", word, distance=distance, prefix=True)
        options.append((_Should, tantivy.Query.boost_query(fuzzy, 0.3)))
    return tantivy.Query.boolean_query(options)


def _any_of(schema: Any, field: str, values: tuple[str, ...]) -> Any:
    return tantivy.Query.boolean_query(
        [(_Should, tantivy.Query.term_query(schema, field, v)) for v in values])


def _interval(schema: Any, as_of: int | None) -> Any:
    if as_of is None:
        # Excluding the few ended documents is much cheaper than requiring the
        # open end, which nearly every document has.
        ended = tantivy.Query.range_query(schema, "to_seq", tantivy.FieldType.Unsigned, 0, OPEN_SEQ - 1)
        return tantivy.Query.boolean_query([(_Must, tantivy.Query.all_query()), (_MustNot, ended)])
    started = tantivy.Query.range_query(schema, "from_seq", tantivy.FieldType.Unsigned, 1, as_of)
    not_ended = tantivy.Query.range_query(schema, "to_seq", tantivy.FieldType.Unsigned, as_of,
                                          None, include_lower=False)
    return tantivy.Query.boolean_query([(_Must, started), (_Must, not_ended)])


def run_search(index: SearchIndex, query: SearchQuery, as_of: int | None) -> list[SearchHit]:
    """Top hits by BM25 across shards (enough candidates for re-ranking)."""
    check_limit(query.limit)
    if not 0.0 <= query.min_relevance <= 1.0:
        raise InvalidQueryError("min_relevance must be between 0 and 1")
    searchers = index.searchers()
    known = frozenset(w for w in tokens(query.text)
                      if any(s.doc_freq("content", w) for _, s in searchers))
    try:
        q = build_query(index.schema, query, as_of, known)
    except ValueError as exc:
        raise InvalidQueryError(f"invalid search: {exc}") from None
    want = min(10_000, max(query.limit * 2, 20))
    hits: list[SearchHit] = []
    for _, searcher in searchers:
        found = searcher.search(q, want, count=False).hits
        if not found:
            continue
        rseqs = searcher.fast_field_values("rseq", [addr for _, addr in found])
        hits.extend(SearchHit(int(r), float(s)) for (s, _), r in zip(found, rseqs, strict=True) if r)
    hits.sort(key=lambda h: (-h.text_score, h.rseq))
    return hits[:want]


def score(hit_text: float, top_text: float, kind: str, occurred_at: int, now: int,
          accesses: int, last_access: int, importance: float | None, params: Any,
          level: str | None = None) -> tuple[float, float]:
    """(relevance, decay factor) of one candidate."""
    imp = importance_of(kind, importance, level)
    factor = decay_factor(kind, occurred_at, now, accesses, imp, params)
    text = hit_text / top_text if top_text > 0 else 0.0
    return relevance(text, factor, imp, access_score(last_access, now)), factor
