"""Ranking: the one search entry point of the projections.

:func:`rank` takes a query, an optional as-of seq and the current time, and
returns the entries to show, best first.

With a text query, the text comes first: Tantivy picks candidates (its
per-shard BM25, :func:`~projections.search.query.run_search`), the
candidates' entries are read (one log read per chunk), and each is scored
exactly with global BM25 statistics (:mod:`.bm25`), so its score does not
depend on its shard. Seed 000's blend of text, time, importance and access
(:func:`score`) only breaks ties between equal text scores: measured on
LoCoMo it cost recall as a weighted sum (R@10 46.2 against 54.5 for plain
BM25), and access feedback must never lift an earlier result over a better
text match. The relevance shown is the hit's own evidence, the same for
every query (:mod:`.evidence`); the order is the same fusion of its text
score with what its context adds.

Without text (browse), the blend orders the entries as before (newest,
important, often-read first); ``sort`` newest/oldest orders by event time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec

from eventstore import MEMORY_DOC_KIND, SHOWN_STATES, MemorySaved

from ..decay import WEIGHTS, importance_of
from ..models import AccessView, EntryView, MemoryView, RankInputs
from ..views import ViewReader
from ..views.current import current_rows
from .bm25 import Stats, collect_stats, held_text_score, text_score
from .cache import SearchCache, cached_reads
from .evidence import Evidence, coverage, ends_in_identifier, evidence_of, weighed
from .fusion import FUSION, allowed, best_fused, fuse, nearest, resolve_mode
from .identifiers import split_query
from .index import SearchIndex, memory_text, searchable_text
from .query import SearchHit, SearchQuery, check_query, prefix_expansions, run_search, tokens
from .signals import by_date, by_session, with_text
from .terms import STOP_WORDS, stem_all

__all__ = ["Ranked", "Ranking", "Tuning", "rank", "score"]

_HOUR = 3_600_000_000
_W_TEXT, _W_TIME, _W_IMPORTANCE, _W_ACCESS = (
    WEIGHTS["text"], WEIGHTS["time"], WEIGHTS["importance"], WEIGHTS["access"])
_NO_ACCESS = AccessView()


class Tuning(msgspec.Struct):
    """The ranking's levers, each kept only as far as the recall benchmark
    (``tools/bench/bench_recall.py``) shows it earns its place."""

    depth: int = 40          # candidates read and rescored: max(depth, depth_per_limit * limit)
    depth_per_limit: float = 1.0
    expand_prefix: bool = True  # the last word also stands for the indexed words it begins
    fuzzy: bool = True       # a word in no document matches near words
    stop_words: frozenset[str] = STOP_WORDS  # query words left out (unless all are)
    neighbour: float = 0.6   # share of the best adjacent candidate's text score an entry gains
    neighbour_fetch: int = 10  # the top candidates whose adjacent entries join the candidates
    neighbour_words: int = 2  # ... when the query has this many words (one word is a lookup)
    session: float = 0.3     # share of its session's strength an entry gains (signals.by_session)
    dates: float = 1.0       # text-score gain of entries in the month/year a query names (signals.by_date)
    identifiers: bool = True  # identifier-like words match exactly (.identifiers)
    cover_all: bool = True   # with no query word in any document, a candidate covers every word (.evidence)


TUNING = Tuning()


class Ranked(NamedTuple):
    """One entry (or, with ``source`` memories or both, one user memory) to
    show, with its relevance and decay factor."""

    relevance: float
    factor: float
    view: EntryView | MemoryView


class Ranking(NamedTuple):
    """The ranked entries and the query's words (for snippets)."""

    words: tuple[str, ...]
    entries: list[Ranked]


class _Candidate(NamedTuple):
    text: float      # global BM25 (1.0 when browsing)
    blend: float     # seed 000's relevance: the tie-breaker
    factor: float
    rseq: int
    occurred_at: int
    view: EntryView | MemoryView


def rank(index: SearchIndex, views: ViewReader, query: SearchQuery, as_of: int | None,
         now: int, vectors: Any = None, embedder: Any = None, cache: SearchCache | None = None,
         ) -> Ranking:
    """The entries ``query`` finds (as of a seq, if given), ranked by relevance
    (or time) at ``now`` and cut to the limit; only shown (live or redacted)
    entries are returned. ``vectors`` and ``embedder`` (Contract 2) allow the
    semantic and hybrid modes (:mod:`.fusion`). ``cache``: the caller's
    :class:`~.cache.SearchCache` of payloads and views, for current reads."""
    with cached_reads(views, cache):
        return _rank(index, views, query, as_of, now, vectors, embedder)


def _rank(index: SearchIndex, views: ViewReader, query: SearchQuery, as_of: int | None,
          now: int, vectors: Any, embedder: Any) -> Ranking:
    words = _content_words(tokens(query.text))
    if not query.include_archived and query.session_id is None and (archived := views.archived_sessions()):
        query = msgspec.structs.replace(query, exclude_sessions=archived)
    check_query(query, words)
    mode = resolve_mode(query, bool(words), embedder, vectors)
    searchers = index.searchers()
    part = _text_part(index, searchers, query, words)
    stats, evidence = part.stats, part.evidence
    hits = [] if mode == "semantic" else _text_hits(index, searchers, query, as_of, part)
    candidates = _candidates(views, hits, stats, now)
    if evidence is not None and stats is not None:
        candidates = weighed(candidates, evidence, stats, TUNING.cover_all)
    near = {} if mode == "text" else nearest(query, as_of, embedder, vectors, FUSION.depth)
    # (an identifier of several words counts as one word: a lookup)
    looked_up = len(set(part.plain)) + (0 if evidence is None else len(part.groups))
    fetch = TUNING.neighbour and stats is not None and bool(TUNING.neighbour_fetch) and \
        looked_up >= TUNING.neighbour_words
    adjacent = _adjacent_seqs(candidates, near) if fetch else {}
    # One Tantivy pass checks the query's filters for the semantic candidates
    # and the neighbours together.
    ok = allowed(index, searchers, query, as_of, sorted(near.keys() | adjacent.keys()))
    semantic = {r: (c, ok[r]) for r, c in near.items() if r in ok}
    candidates += _others(views, {h.rseq for h in hits}, semantic, adjacent, ok, stats, now)
    if stats is not None:
        candidates = _signals(candidates, query.text)
    by_relevance = query.sort == "relevance"
    scored = _relevance(candidates, part, semantic, mode, query.min_relevance,
                        query.limit if by_relevance else None)
    if not by_relevance:
        scored.sort(key=lambda t: (t[0].occurred_at, t[0].rseq), reverse=query.sort == "newest")
    return Ranking(tuple(words), [Ranked(r, c.factor, c.view) for c, r in scored[: query.limit]])


class _TextPart(NamedTuple):
    """The text side of a query: its words outside several-word identifiers,
    their terms, the one-word identifiers' terms, the last word's expansions,
    the global statistics and the evidence yardsticks."""

    plain: list[str]
    groups: list[tuple[str, ...]]
    stems: list[str]
    exact: frozenset[str]
    expansions: tuple[str, ...]
    stats: Stats | None
    evidence: Evidence | None


def _text_part(index: SearchIndex, searchers: list[tuple[int, Any]], query: SearchQuery,
               words: list[str]) -> _TextPart:
    single, multi = split_query(query.text) if TUNING.identifiers else ((), ())
    grouped = {w for group in multi for w in group}
    plain = [w for w in words if w not in grouped]
    stems, exact = stem_all(plain), frozenset(stem_all(list(single)))
    typed = not (TUNING.identifiers and ends_in_identifier(query.text))  # the last word may be being typed
    expand = TUNING.expand_prefix and bool(stems) and typed
    expansions = prefix_expansions(searchers, stems) if expand else ()
    stats = collect_stats(index, searchers, [*stems, *expansions], TUNING.fuzzy, exact) if words else None
    evidence = None if stats is None else evidence_of(
        searchers, stats, stems, [tuple(stem_all(list(g))) for g in multi], expansions)
    return _TextPart(plain, list(multi), stems, exact, expansions, stats, evidence)


def _text_hits(index: SearchIndex, searchers: list[tuple[int, Any]], query: SearchQuery, as_of: int | None,
               part: _TextPart) -> list[SearchHit]:
    """The text candidates (none when the query has words but none to look
    up: only identifiers of several words that no document holds)."""
    groups = () if part.evidence is None else tuple(g for g, _ in part.evidence.groups)
    if part.evidence is not None and not part.stems and not groups:
        return []
    depth = max(TUNING.depth, int(TUNING.depth_per_limit * query.limit))
    known = None if part.stats is None else frozenset(w for w in part.stems if w in part.stats.idf)
    return run_search(index, query, as_of, part.plain, depth=depth, searchers=searchers,
                      expand=bool(part.expansions), known=known, expansions=part.expansions,
                      exact=part.exact, groups=groups)


def _relevance(candidates: list[_Candidate], part: _TextPart, semantic: dict[int, tuple[float, bool]],
               mode: str, floor: float, limit: int | None) -> list[tuple[_Candidate, float]]:
    """The hits to show (at least ``floor``, at most ``limit``) with
    their relevance in [0, 1]: the hit's own evidence (:mod:`.evidence`: the
    share of the query it holds, and its cosine), in the order of the same
    fusion of its text score with the context signals; the blend breaks
    ties; a candidate with no evidence even from its context is left out.
    Browsing ranks by the blend alone."""
    evidence, stats = part.evidence, part.stats
    if evidence is None or stats is None:
        browsed = [(c, c.blend) for c in candidates if c.blend >= floor]
        browsed.sort(key=lambda t: (-t[1], -t[0].rseq))
        return browsed
    if FUSION.scores == "shares":  # the measured baseline: shares of the best (no evidence needed)
        return [(c, r) for c, r in _shares(candidates, semantic, mode) if r >= floor]
    rseqs = [c.rseq for c in candidates]
    keys = fuse([c.text / evidence.ideal for c in candidates], rseqs, semantic, mode)
    order = sorted((i for i in range(len(candidates)) if keys[i] > 0),
                   key=lambda i: (-keys[i], -candidates[i].text, -candidates[i].blend, -candidates[i].rseq))
    out: list[tuple[_Candidate, float]] = []
    measure = coverage(evidence, stats)
    for i in order:  # the evidence of each in order, until the limit
        c = candidates[i]
        if mode == "semantic":
            shown = keys[i]
        else:
            held = measure(c.view)
            shown = held if mode == "text" else held + (1.0 - held) * FUSION.semantic * (
                semantic[c.rseq][0] if c.rseq in semantic else 0.0)
        if shown >= floor:
            out.append((c, min(1.0, max(0.0, shown))))
            if len(out) == limit:
                break
    return out


def _shares(candidates: list[_Candidate], semantic: dict[int, tuple[float, bool]],
            mode: str) -> list[tuple[_Candidate, float]]:
    """The earlier relevance: the text score as a share of the best hit, the
    RRF score as a share of the best possible, or the cosine."""
    if mode == "text":
        keys = [c.text for c in candidates]
    else:
        keys = fuse([c.text for c in candidates], [c.rseq for c in candidates], semantic, mode)
    top = max(keys, default=0.0) if mode == "text" else best_fused() if mode == "hybrid" else 1.0
    order = sorted(range(len(candidates)), key=lambda i: (-keys[i], -candidates[i].text,
                                                           -candidates[i].blend, -candidates[i].rseq))
    return [(candidates[i], max(0.0, keys[i]) / top if top > 0 else 0.0) for i in order]


def _signals(candidates: list[_Candidate], text: str) -> list[_Candidate]:
    """The text scores with what surrounds each entry: its neighbouring turns,
    its session's strength, and the period the query names (:mod:`.signals`).
    They are worked on as one column of floats; a candidate whose score moved
    is rebuilt once, at the end."""
    sessions = [c.view.session_id if isinstance(c.view, EntryView) else None for c in candidates]
    texts = [c.text for c in candidates]
    if TUNING.neighbour:
        texts = _neighbours(candidates, texts, sessions, TUNING.neighbour)
    texts = by_session(texts, sessions, TUNING.session)
    texts = by_date(texts, [c.occurred_at for c in candidates], text, TUNING.dates)
    return [c if t == c.text else with_text(c, t) for c, t in zip(candidates, texts, strict=True)]


def _neighbours(candidates: list[_Candidate], texts: list[float], sessions: list[str | None],
                share: float) -> list[float]:
    """Each entry's text score (``texts``) gains ``share`` of the better text
    score of the candidates recorded just before and after it in its session
    (a conversation's answer is often the turn after the question's words)."""
    at = {c.rseq: i for i, c in enumerate(candidates) if isinstance(c.view, EntryView)}

    def near(i: int, j: int | None) -> float:  # (a negative score, from a negative idf, counts too)
        return texts[j] if j is not None and sessions[j] == sessions[i] else 0.0

    out = []
    for i, (c, text) in enumerate(zip(candidates, texts, strict=True)):
        shown = text >= 0 and isinstance(c.view, EntryView)
        gain = max(near(i, at.get(c.rseq - 1)), near(i, at.get(c.rseq + 1))) if shown else 0.0
        out.append(text + share * gain if gain else text)
    return out


def _adjacent_seqs(candidates: list[_Candidate], near: dict[int, float]) -> dict[int, frozenset[str]]:
    """The rseqs recorded just before and after the best text candidates (not
    already candidates, nor semantic candidates), each with the sessions of the
    candidates it is adjacent to: it counts as a neighbour when it shares one
    (one rseq may follow a candidate of one session and precede another's)."""
    best = sorted((c for c in candidates if c.text > 0 and isinstance(c.view, EntryView)),
                  key=lambda c: (-c.text, c.rseq))[: TUNING.neighbour_fetch]
    have = {c.rseq for c in candidates}
    out: dict[int, set[str]] = {}
    for c in best:
        session = getattr(c.view, "session_id", None)
        for s in (c.rseq - 1, c.rseq + 1):
            if s > 0 and s not in have and s not in near:
                out.setdefault(s, set()).update(() if session is None else (session,))
    return {s: frozenset(sessions) for s, sessions in out.items()}


def _others(views: ViewReader, text_seqs: set[int], semantic: dict[int, tuple[float, bool]],
            adjacent: dict[int, frozenset[str]], ok: dict[int, bool], stats: Stats | None,
            now: int) -> list[_Candidate]:
    """The allowed semantic candidates the text search did not find, and the
    allowed neighbours in their candidate's session (neither scored for text:
    their hits' text score of -1 gives them 0)."""
    extra = [SearchHit(r, -1.0, m) for r, (_, m) in sorted(semantic.items(), key=lambda t: -t[1][0])
             if r not in text_seqs]
    extra += [SearchHit(s, -1.0) for s in sorted(adjacent) if s in ok and not ok[s]]
    if not extra:
        return []
    return [c for c in _candidates(views, extra, stats, now)
            if c.rseq not in adjacent or getattr(c.view, "session_id", None) in adjacent[c.rseq]]


def _content_words(words: list[str]) -> list[str]:
    """``words`` without stop words (all of them when nothing else is left)."""
    kept = [w for w in words if w not in TUNING.stop_words]
    return kept or words


def _candidates(views: ViewReader, hits: list[SearchHit], stats: Stats | None, now: int) -> list[_Candidate]:
    """The shown entries of ``hits``, each with its exact text score (when
    ``stats``) and its blend."""
    params = views.decay_params()
    out = _memories(views, [h for h in hits if h.memory], stats, now, params)
    accessed = views.any_access()
    # Entries the views' memo serves are the same objects search after search:
    # their counts are held by the object. Any other read (as of a seq, or a
    # snapshot the log has moved past) makes new objects, so the counts are
    # found by the text (holding those would only push the memo's out).
    held = views.memo is not None
    for hit, inp, view in _entry_rows(views, [h for h in hits if not h.memory]):
        if view.entry is None or view.state not in SHOWN_STATES:
            continue
        text = (0.0 if hit.text_score < 0 else 1.0 if stats is None
                else held_text_score(view.entry, searchable_text, stats) if held
                else text_score(searchable_text(view.entry), stats))
        out.append(_candidate(views, hit, inp, view, text, params, now, accessed))
    return out


def _entry_rows(views: ViewReader, hits: list[SearchHit],
                ) -> Iterator[tuple[SearchHit, RankInputs, EntryView]]:
    """Each hit whose entry is there, with its ranking inputs and view: from
    the views' memo when current (:func:`~projections.views.current.current_rows`),
    else read one chunk at a time."""
    if views.memo is not None and views.as_of is None:
        memo, since = views.memo
        for hit, row in zip(hits, current_rows(views, [h.rseq for h in hits], memo, since), strict=True):
            if row is not None:
                yield hit, row[1], row[0]
        return
    found = [(h, inp) for h, inp in zip(hits, views.rank_inputs(h.rseq for h in hits), strict=True)
             if inp is not None]
    for start in range(0, len(found), 64):
        chunk = found[start : start + 64]
        for (hit, inp), view in zip(chunk, views.entries(i.entry_id for _, i in chunk), strict=True):
            if view is not None:
                yield hit, inp, view


def _memories(views: ViewReader, hits: list[SearchHit], stats: Stats | None, now: int,
              params: Any) -> list[_Candidate]:
    """The memories of ``hits`` still saved (as of the views) with their scores;
    each is found from its ``memory.saved`` record (one log read)."""
    out: list[_Candidate] = []
    if not hits:
        return out
    for hit, event in zip(hits, views.events_at([h.rseq for h in hits]), strict=True):
        if not isinstance(event, MemorySaved):
            continue
        memory = views.memory_by_id(event.memory_id)
        if memory is None or memory.memory_id != event.memory_id or memory.content is None:
            continue
        text = 1.0 if stats is None else 0.0 if hit.text_score < 0 else text_score(
            memory_text(memory.key, memory.content), stats)
        blend, factor = score(1.0, 1.0, MEMORY_DOC_KIND, memory.saved_at, now, 0, 0, None, params)
        out.append(_Candidate(text, blend, factor, hit.rseq, memory.saved_at, memory))
    return out


def _candidate(views: ViewReader, hit: SearchHit, inp: RankInputs, view: EntryView, text: float,
               params: Any, now: int, accessed: bool) -> _Candidate:
    access = views.access(inp.entry_id) if accessed else _NO_ACCESS
    blend, factor = score(1.0, 1.0, inp.kind, inp.occurred_at, now, access.count, access.last_at,
                          inp.importance, params)
    return _Candidate(text, blend, factor, hit.rseq, inp.occurred_at, view)


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
