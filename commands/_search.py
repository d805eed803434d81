"""Search through the facade: candidates from the index, ranking inputs from the
views, relevance with decay; only the returned entries are read (from the log,
one batch at a time) for their text and snippets."""

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
Scored = tuple[float, float, int, int, str]  # relevance, factor, rseq, occurred_at, entry id


def find(proj: Projections, views: ViewReader, query: SearchQuery, as_of: int | None,
         now: int) -> list[SearchResult]:
    """Search hits as results, re-ranked by relevance (or time) and cut to the limit.

    Candidates are ranked from the views' ranking inputs (kind, importance,
    event time; as of a seq, from the stored entry versions of that seq), and
    only the entries returned are read.
    """
    assert proj.search_index is not None
    hits = run_search(proj.search_index, query, as_of)
    if not hits:
        return []
    inputs = views.rank_inputs(h.rseq for h in hits)
    words = tokens(query.text)
    top = max(h.text_score for h in hits) if words else 0.0
    params = views.decay_params()
    accessed = views.any_access()
    scored: list[Scored] = []
    floor = query.min_relevance
    for hit, rank in zip(hits, inputs, strict=True):
        if rank is None:
            continue
        access = views.access(rank.entry_id) if accessed else _NO_ACCESS
        relevance, factor = score(hit.text_score if words else 1.0, top if words else 1.0,
                                  rank.kind, rank.occurred_at, now, access.count, access.last_at,
                                  rank.importance, params)
        if relevance >= floor:
            scored.append((relevance, factor, hit.rseq, rank.occurred_at, rank.entry_id))
    if query.sort == "relevance":
        scored.sort(key=lambda t: (-t[0], -t[2]))
    else:
        scored.sort(key=lambda t: (t[3], t[2]), reverse=query.sort == "newest")
    return _results(views, scored, query.limit, words)


def _results(views: ViewReader, scored: list[Scored], limit: int,
             words: list[str]) -> list[SearchResult]:
    """The first ``limit`` scored hits whose entries are shown, as results
    (their entries are read a chunk at a time: one log read per chunk)."""
    out: list[SearchResult] = []
    start = 0
    while len(out) < limit and start < len(scored):
        chunk = scored[start : start + limit - len(out)]
        start += len(chunk)
        entries = views.entries(t[4] for t in chunk)
        for (relevance, factor, _, _, _), view in zip(chunk, entries, strict=True):
            if view is not None and view.entry is not None and view.state in _SHOWN:
                out.append(_result(view, relevance, factor, words))
    return out


def _result(view: EntryView, relevance: float, factor: float, words: list[str]) -> SearchResult:
    entry = view.entry
    assert entry is not None
    return SearchResult(  # positional, in the field order of SearchResult
        view.entry_id, entry.kind, entry.session_id, entry.content, make_snippet(entry.content, words),
        round(relevance, 6), round(factor, 6), format_micros(entry.occurred_at),
        format_micros(view.recorded_at), entry.tags, entry.agent_id,
    )


def make_snippet(content: str, words: list[str], width: int = _SNIPPET) -> str:
    """A window of the content around the first query word (seed 002), with ellipses."""
    flat = content if _single_spaced(content) else " ".join(content.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for w in words if (p := lower.find(w[: max(3, len(w) - 1)])) >= 0]
    start = max(0, min(positions) - 30) if positions else 0
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


def _single_spaced(text: str) -> bool:
    """True when ``" ".join(text.split())`` would return ``text`` unchanged: no
    whitespace but single inner spaces (every other whitespace character is
    non-printable), checked without splitting."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "
