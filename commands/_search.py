"""Search through the facade: candidates from the index, entries from the views,
relevance with decay, snippets from the views' text."""

from __future__ import annotations

from eventstore import format_micros
from projections import Projections, SearchQuery, ViewReader, run_search, score, tokens

from .results import SearchResult

__all__ = ["find", "make_snippet"]

_SNIPPET = 160


def find(proj: Projections, views: ViewReader, query: SearchQuery, as_of: int | None,
         now: int) -> list[SearchResult]:
    """Search hits as results, re-ranked by relevance (or time) and cut to the limit."""
    assert proj.search_index is not None
    hits = run_search(proj.search_index, query, as_of)
    if not hits:
        return []
    words = tokens(query.text)
    top = max(h.text_score for h in hits) if words else 0.0
    params = views.decay_params()
    scored: list[tuple[float, int, SearchResult]] = []
    for hit in hits:
        result = _result(views, hit.rseq, hit.text_score, top, words, now, params)
        if result is not None and result.score >= query.min_relevance:
            scored.append((result.score, hit.rseq, result))
    if query.sort == "relevance":
        scored.sort(key=lambda t: (-t[0], -t[1]))
    else:
        scored.sort(key=lambda t: (t[2].occurred_at, t[1]), reverse=query.sort == "newest")
    return [t[2] for t in scored[: query.limit]]


def _result(views: ViewReader, rseq: int, text_score: float, top: float, words: list[str],
            now: int, params: object) -> SearchResult | None:
    entry_id = views.entry_id_at(rseq)
    view = None if entry_id is None else views.entry(entry_id)
    if view is None or view.entry is None or view.state not in ("live", "redacted"):
        return None
    entry = view.entry
    access = views.access(view.entry_id)
    level = getattr(entry.details, "impact", None) or getattr(entry.details, "severity", None)
    text = text_score if words else 1.0
    relevance, factor = score(text, top if words else 1.0, entry.kind, entry.occurred_at, now,
                              access.count, access.last_at, entry.importance, params, level)
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
