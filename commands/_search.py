"""Search through the facade: candidates from the index, entries from the views,
relevance with decay, snippets from the views' text."""

from __future__ import annotations

from eventstore import format_micros
from projections import (
    AccessView,
    EntryView,
    Projections,
    RankInputs,
    SearchHit,
    SearchQuery,
    ViewReader,
    entry_importance,
    run_search,
    score,
    tokens,
)

from .results import SearchResult

__all__ = ["find", "make_snippet"]

_SNIPPET = 160
_NO_ACCESS = AccessView()
_SHOWN = frozenset(("live", "redacted"))


def find(proj: Projections, views: ViewReader, query: SearchQuery, as_of: int | None,
         now: int) -> list[SearchResult]:
    """Search hits as results, re-ranked by relevance (or time) and cut to the limit.

    A current search ranks its candidates from the views' ranking inputs
    (kind, importance, event time) and reads only the entries it returns; a
    search as of a seq ranks from the entry versions of that seq.
    """
    assert proj.search_index is not None
    hits = run_search(proj.search_index, query, as_of)
    if not hits:
        return []
    inputs = views.rank_inputs(h.rseq for h in hits) if as_of is None else _as_of_inputs(hits, views)
    words = tokens(query.text)
    top = max(h.text_score for h in hits) if words else 0.0
    params = views.decay_params()
    accessed = views.any_access()
    scored: list[tuple[float, float, int, int]] = []  # relevance, factor, rseq, occurred_at
    for hit, rank in zip(hits, inputs, strict=True):
        if rank is None:
            continue
        access = views.access(rank.entry_id) if accessed else _NO_ACCESS
        relevance, factor = score(hit.text_score if words else 1.0, top if words else 1.0,
                                  rank.kind, rank.occurred_at, now, access.count, access.last_at,
                                  rank.importance, params)
        if relevance >= query.min_relevance:
            scored.append((relevance, factor, hit.rseq, rank.occurred_at))
    if query.sort == "relevance":
        scored.sort(key=lambda t: (-t[0], -t[2]))
    else:
        scored.sort(key=lambda t: (t[3], t[2]), reverse=query.sort == "newest")
    return _results(views, scored, query.limit, words)


def _as_of_inputs(hits: list[SearchHit], views: ViewReader) -> list[RankInputs | None]:
    """Ranking inputs from the entry versions current at the views' seq."""
    out: list[RankInputs | None] = []
    for view in views.entries_at(h.rseq for h in hits):
        entry = None if view is None or view.state not in _SHOWN else view.entry
        out.append(None if entry is None else
                   RankInputs(entry.entry_id, entry.kind, entry_importance(entry), entry.occurred_at))
    return out


def _results(views: ViewReader, scored: list[tuple[float, float, int, int]], limit: int,
             words: list[str]) -> list[SearchResult]:
    """The first ``limit`` scored hits whose entries are shown, as results."""
    out: list[SearchResult] = []
    start = 0
    while len(out) < limit and start < len(scored):
        chunk = scored[start : start + limit - len(out)]
        start += len(chunk)
        entries = views.entries_at(t[2] for t in chunk)
        for (relevance, factor, _, _), view in zip(chunk, entries, strict=True):
            if view is not None and view.entry is not None and view.state in _SHOWN:
                out.append(_result(view, relevance, factor, words))
    return out


def _result(view: EntryView, relevance: float, factor: float, words: list[str]) -> SearchResult:
    entry = view.entry
    assert entry is not None
    return SearchResult(
        id=view.entry_id, type=entry.kind, session_id=entry.session_id, content=entry.content,
        snippet=make_snippet(entry.content, words), score=round(relevance, 6),
        decay=round(factor, 6), occurred_at=format_micros(entry.occurred_at),
        recorded_at=format_micros(view.recorded_at), tags=entry.tags, agent_id=entry.agent_id,
    )


def make_snippet(content: str, words: list[str], width: int = _SNIPPET) -> str:
    """A window of the content around the first query word (seed 002), with ellipses."""
    flat = " ".join(content.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for w in words if (p := lower.find(w[: max(3, len(w) - 1)])) >= 0]
    start = max(0, min(positions) - 30) if positions else 0
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")
