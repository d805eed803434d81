"""Ranking: the one search entry point of the projections.

:func:`rank` takes a query, an optional as-of seq and the current time, and
returns the entries to show, best first: BM25 candidates from the index
(:func:`~projections.search.query.run_search`), ranking inputs from the
views (kind, importance, event time; as of a seq, from the stored versions of
that seq), relevance with decay (seed 000: :func:`score`), then only the
returned entries are read from the log, a chunk at a time.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import msgspec

from eventstore import SHOWN_STATES

from ..decay import WEIGHTS, importance_of
from ..models import AccessView, EntryView
from ..views import ViewReader
from .index import SearchIndex
from .query import SearchQuery, run_search, tokens

__all__ = ["Ranked", "Ranking", "rank", "score"]

_HOUR = 3_600_000_000
_W_TEXT, _W_TIME, _W_IMPORTANCE, _W_ACCESS = (
    WEIGHTS["text"], WEIGHTS["time"], WEIGHTS["importance"], WEIGHTS["access"])
_NO_ACCESS = AccessView()
Scored = tuple[float, float, int, int, str]  # relevance, factor, rseq, occurred_at, entry id


class Ranked(NamedTuple):
    """One entry to show, with its relevance and decay factor."""

    relevance: float
    factor: float
    view: EntryView


class Ranking(NamedTuple):
    """The ranked entries and the query's words (for snippets)."""

    words: tuple[str, ...]
    entries: list[Ranked]


def rank(index: SearchIndex, views: ViewReader, query: SearchQuery, as_of: int | None,
         now: int) -> Ranking:
    """The entries ``query`` finds (as of a seq, if given), ranked by relevance
    (or time) at ``now`` and cut to the limit; only shown (live or redacted)
    entries are returned."""
    words = tokens(query.text)
    if not query.include_archived and query.session_id is None and (archived := views.archived_sessions()):
        query = msgspec.structs.replace(query, exclude_sessions=archived)
    hits = run_search(index, query, as_of, words)
    if not hits:
        return Ranking(tuple(words), [])
    inputs = views.rank_inputs(h.rseq for h in hits)
    top = max(h.text_score for h in hits) if words else 0.0
    params = views.decay_params()
    accessed = views.any_access()
    scored: list[Scored] = []
    floor = query.min_relevance
    for hit, inp in zip(hits, inputs, strict=True):
        if inp is None:
            continue
        access = views.access(inp.entry_id) if accessed else _NO_ACCESS
        relevance, factor = score(hit.text_score if words else 1.0, top if words else 1.0,
                                  inp.kind, inp.occurred_at, now, access.count, access.last_at,
                                  inp.importance, params)
        if relevance >= floor:
            scored.append((relevance, factor, hit.rseq, inp.occurred_at, inp.entry_id))
    if query.sort == "relevance":
        scored.sort(key=lambda t: (-t[0], -t[2]))
    else:
        scored.sort(key=lambda t: (t[3], t[2]), reverse=query.sort == "newest")
    return Ranking(tuple(words), _shown(views, scored, query.limit))


def _shown(views: ViewReader, scored: list[Scored], limit: int) -> list[Ranked]:
    """The first ``limit`` scored hits whose entries are shown (their entries
    are read a chunk at a time: one log read per chunk)."""
    out: list[Ranked] = []
    start = 0
    while len(out) < limit and start < len(scored):
        chunk = scored[start : start + limit - len(out)]
        start += len(chunk)
        entries = views.entries(t[4] for t in chunk)
        for (relevance, factor, _, _, _), view in zip(chunk, entries, strict=True):
            if view is not None and view.entry is not None and view.state in SHOWN_STATES:
                out.append(Ranked(relevance, factor, view))
    return out


def score(hit_text: float, top_text: float, kind: str, occurred_at: int, now: int,
          accesses: int, last_access: int, importance: float | None, params: Any,
          level: str | None = None) -> tuple[float, float]:
    """(relevance, decay factor) of one candidate: :func:`relevance` of the text
    share, :func:`decay_factor`, the importance and :func:`access_score`.

    It runs for every candidate of every search, so those functions are
    inlined here with the same arithmetic in the same order (the values are
    identical; ``tests/projections/test_scoring.py`` checks it).
    """
    imp = importance if importance is not None else importance_of(kind, None, level)
    age_hours = max(0.0, (now - occurred_at) / _HOUR)
    base = math.exp(-params.rates.get(kind, 0.05) * age_hours)
    boosted = base * (1 + params.access_boost * accesses) * (1 + params.importance_boost * imp)
    factor = max(params.floor, min(boosted, 1.0))
    access = 0.5 if last_access <= 0 else math.exp(-0.05 * max(0.0, (now - last_access) / _HOUR))
    text = hit_text / top_text if top_text > 0 else 0.0
    return _W_TEXT * text + _W_TIME * factor + _W_IMPORTANCE * imp + _W_ACCESS * access, factor
