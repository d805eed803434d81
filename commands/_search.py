"""Search through the facade: candidates from the index, entries from the views,
relevance with decay, snippets from the views' text."""

from __future__ import annotations

from eventstore import format_micros
from projections import (
    AccessView,
    EntryView,
    Projections,
    SearchQuery,
    ViewReader,
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

    Candidates are scored from the views first; snippets and result objects are
    built only for the ones returned.
    """
    assert proj.search_index is not None
    hits = run_search(proj.search_index, query, as_of)
    if not hits:
        return []
    words = tokens(query.text)
    top = max(h.text_score for h in hits) if words else 0.0
    params = views.decay_params()
    accessed = views.any_access()
    scored: list[tuple[float, float, int, EntryView]] = []
    for hit, view in zip(hits, views.entries_at(h.rseq for h in hits), strict=True):
        if view is None or view.entry is None or view.state not in _SHOWN:
            continue
        access = views.access(view.entry_id) if accessed else _NO_ACCESS
        relevance, factor = _score(view, access, hit.text_score if words else 1.0,
                                   top if words else 1.0, now, params)
        if relevance >= query.min_relevance:
            scored.append((relevance, factor, hit.rseq, view))
    if query.sort == "relevance":
        scored.sort(key=lambda t: (-t[0], -t[2]))
    else:
        scored.sort(key=lambda t: (t[3].occurred_at, t[2]), reverse=query.sort == "newest")
    return [_result(view, relevance, factor, words) for relevance, factor, _, view in scored[: query.limit]]


def _score(view: EntryView, access: AccessView, text: float, top: float, now: int,
           params: object) -> tuple[float, float]:
    entry = view.entry
    assert entry is not None
    level = getattr(entry.details, "impact", None) or getattr(entry.details, "severity", None)
    return score(text, top, entry.kind, entry.occurred_at, now, access.count, access.last_at,
                 entry.importance, params, level)


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
