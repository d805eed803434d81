"""BM25 with global statistics: a document's score does not depend on its shard.

Tantivy keeps the BM25 statistics (document frequency, document count,
average length) per shard, so the same text scores differently in two
shards. Tantivy's scores only pick the candidates; each candidate is then
scored here, exactly, with statistics summed over every shard:

- ``N``: the documents of every shard (the checkpoint documents left out);
- ``df``: the sum of the shards' ``doc_freq`` of the word;
- ``avgdl``: the sum of every shard's ``dl`` fast field (the document's word
  count, stored when it is indexed) over ``N``, cached per shard until its
  searcher changes;
- ``tf`` and ``dl``: counted in the candidate's text (:func:`tokens`), which
  the ranking reads anyway for the entries it returns.

``score = sum over query words of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``
with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, Tantivy's own formula and
constants. When no query word is in any document, the words are matched
fuzzily (seed 002): a document word within a word's edit distance counts as
a hit, at :data:`FUZZY_WEIGHT` of the idf of a word in one document. (With a
word that matches exactly, fuzzy scores changed no recall on LoCoMo and cost
1 ms a search; Tantivy still finds such documents as candidates.)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import msgspec
import tantivy

from .index import SearchIndex
from .terms import terms

__all__ = [
    "K1",
    "B",
    "Stats",
    "collect_stats",
    "counts_of",
    "doc_freq",
    "forget_texts",
    "held_text_score",
    "idf_of",
    "near",
    "score_text",
    "term_counts",
    "text_score",
]

T = TypeVar("T")

K1, B = 1.2, 0.75
FUZZY_WEIGHT = 0.3
_DL_SUM = {"dl": {"sum": {"field": "dl"}}}
# A candidate's term counts, keyed by its text itself (never by its rseq or
# id): a redaction or an update (same entry, new text) can never be served
# the counts of the old text. Bounded; emptied when full.
_COUNTS: dict[str, tuple[int, dict[str, int]]] = {}
_COUNTS_MAX = 8192


# The same counts by the object the text was made from (a current entry:
# the search cache serves the same view, and so the same entry object, to
# every current search; see projections/views/current.py), so a repeated
# candidate's text is neither joined nor hashed again. The object is held
# with its counts, so its id is not reused while memoised; entries are
# frozen, so the counts stay its text's. At most as many as the cache holds.
_HELD: dict[int, tuple[object, tuple[int, dict[str, int]]]] = {}
_HELD_MAX = 4096


def forget_texts() -> None:
    """Empty the term-count caches (a purge calls it: no text of a deleted or
    redacted entry stays in this process's cache)."""
    _COUNTS.clear()
    _HELD.clear()


class Stats(msgspec.Struct, frozen=True):
    """The global statistics of one search, and the weight of each query word."""

    docs: int
    avgdl: float
    idf: dict[str, float]          # word in the index -> idf
    fuzzy: dict[str, tuple[int, float]]  # word in no document -> (edit distance, weight)
    near: dict[str, float] = {}  # document word -> the fuzzy weight it earns (filled as met)


def collect_stats(index: SearchIndex, searchers: list[tuple[int, Any]], words: Sequence[str],
                  fuzzy: bool = True, exact: frozenset[str] = frozenset()) -> Stats:
    """Global statistics over ``searchers`` (of ``index``) for the query
    ``words`` (those in ``exact``, identifier-like, never match fuzzily)."""
    docs = sum(max(0, s.num_docs - 1) for _, s in searchers)  # each shard holds one checkpoint doc
    total = sum(index.shards[i].dl_sum(s, _dl_sum) for i, s in searchers)
    avgdl = total / docs if docs and total else 1.0
    idf: dict[str, float] = {}
    far: dict[str, tuple[int, float]] = {}
    for word in dict.fromkeys(words):
        df = doc_freq(searchers, word)
        if df:
            idf[word] = idf_of(docs, df)
        elif fuzzy and word not in exact and (distance := min(2, int(len(word) * 0.2))):
            far[word] = (distance, FUZZY_WEIGHT * math.log(1 + (docs + 0.5) / 1.5))
    if idf:
        far = {}  # measured: near words add nothing once a word matches exactly, and cost 1 ms
    return Stats(docs, avgdl, idf, far, {})


def idf_of(docs: int, df: int) -> float:
    """Tantivy's idf of a word in ``df`` of ``docs`` documents (a word in none
    gets the highest: that of a word in half a document). ``df`` is at most
    ``docs``: Tantivy's document frequency still counts a document version an
    update replaced until its segment merges, which would make the idf
    negative (a word then earning less than nothing)."""
    df = min(df, docs)
    return math.log(1 + (docs - df + 0.5) / (df + 0.5))


def doc_freq(searchers: list[tuple[int, Any]], word: str) -> int:
    """The documents of every shard holding ``word``."""
    return sum(s.doc_freq("content", word) for _, s in searchers)


def near(word: str, token: str, distance: int) -> bool:
    """Whether document word ``token`` is near the fuzzy query ``word``."""
    return _near(word, token, distance)


def _dl_sum(searcher: Any) -> float:
    """The sum of the ``dl`` fast field over a shard's documents."""
    result = searcher.aggregate(tantivy.Query.all_query(), _DL_SUM)
    return float(result.get("dl", {}).get("value") or 0.0)


def score_text(words: Sequence[str], stats: Stats) -> float:
    """The BM25 score of a document whose word tokens are ``words``."""
    return _score(len(words), Counter(words), stats) if words else 0.0


def text_score(text: str, stats: Stats) -> float:
    """The BM25 score of a document of ``text`` (its term counts memoised by
    the text: the same score as ``score_text(terms(text), stats)``)."""
    found = _counts(text)
    return _score(found[0], found[1], stats) if found[0] else 0.0


def held_text_score(holder: T, text_of: Callable[[T], str], stats: Stats) -> float:
    """``text_score(text_of(holder), stats)``, memoised by the frozen object
    ``holder`` as well (see ``_HELD``)."""
    held = _HELD.get(id(holder))
    if held is not None and held[0] is holder:
        found = held[1]
    else:
        found = _counts(text_of(holder))
        if len(_HELD) >= _HELD_MAX:
            _HELD.clear()
        _HELD[id(holder)] = (holder, found)
    return _score(found[0], found[1], stats) if found[0] else 0.0


def term_counts(text: str) -> dict[str, int]:
    """The index terms of ``text`` with their counts (memoised by the text)."""
    return _counts(text)[1]


def counts_of(holder: T, text_of: Callable[[T], str]) -> dict[str, int]:
    """The term counts of ``text_of(holder)``: those held for the object when
    :func:`held_text_score` holds them, else by the text (never adding a
    holder: see ``_HELD``)."""
    held = _HELD.get(id(holder))
    if held is not None and held[0] is holder:
        return held[1][1]
    return _counts(text_of(holder))[1]


def _counts(text: str) -> tuple[int, dict[str, int]]:
    found = _COUNTS.get(text)
    if found is None:
        words = terms(text)
        found = (len(words), Counter(words))
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        _COUNTS[text] = found
    return found


def _score(length: int, counts: dict[str, int], stats: Stats) -> float:
    norm = K1 * (1 - B + B * length / stats.avgdl)
    total = 0.0
    for word, idf in stats.idf.items():
        tf = counts.get(word, 0)
        if tf:
            total += idf * tf * (K1 + 1) / (tf + norm)
    if stats.fuzzy:
        total += sum(_fuzzy_weight(token, stats) for token in counts)
    return total


def _fuzzy_weight(token: str, stats: Stats) -> float:
    """What a document word earns for the fuzzy words it is near (memoised per search)."""
    weight = stats.near.get(token)
    if weight is None:
        weight = sum(w for word, (d, w) in stats.fuzzy.items() if _near(word, token, d))
        stats.near[token] = weight
    return weight


def _near(word: str, token: str, distance: int) -> bool:
    """Whether ``token`` begins with a string within ``distance`` edits of
    ``word`` (Tantivy's fuzzy term query with ``prefix``)."""
    if abs(len(token) - len(word)) > distance and len(token) < len(word):
        return False
    row = list(range(len(word) + 1))
    best = row[-1]
    for i, ch in enumerate(token, 1):
        prev, row[0] = row[0], i
        for j, wc in enumerate(word, 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (wc != ch))
            prev, row[j] = row[j], cur
        best = min(best, row[-1])
        if min(row) > distance:
            break
    return best <= distance
