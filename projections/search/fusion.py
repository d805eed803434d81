"""Semantic candidates and their fusion with the text ranking (Contract 2).

The vector index (:mod:`projections.embed`) returns the documents nearest to
the query's embedding; those that the query's filters allow (kinds, scope,
sessions, times, the as-of interval, archived sessions, the source) are
kept by asking Tantivy which of their rseqs match the same filter clauses as
the text search (the rseqs AND the filters; a small shard is listed whole
under the filters instead).

With a model that tells the words it knows (the shipped static one:
``knows``), the query is embedded without its identifier-like tokens, and a
query of whose content words it knows less than three quarters gets no
semantic candidates (:func:`meaning_text`).

The text and semantic evidence are fused (:func:`fuse`, ``scores``
evidence): ``t + (1 - t) * semantic * cosine`` with ``t`` the text score over
the query's ideal (:mod:`.evidence`), so the order and the score are the
same number. ``scores`` shares keeps the earlier weighted reciprocal rank
fusion, ``w_text / (K + text_rank) + w_semantic / (K + semantic_rank)``,
shown as a share of the best possible (see ``docs/search.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec
import tantivy

from eventstore import InvalidQueryError

from .identifiers import meaning_words, strip_identifiers
from .index import SearchIndex
from .query import SearchQuery, filter_clauses

__all__ = ["FUSION", "Fusion", "allowed", "best_fused", "fuse", "meaning_text", "nearest", "resolve_mode"]

_Must, _Should = tantivy.Occur.Must, tantivy.Occur.Should
_SCAN_PER_RSEQ = 4  # a shard of at most this many documents per rseq is listed, not looked up


class Fusion(msgspec.Struct):
    """Reciprocal rank fusion's constants (measured with tools/bench/bench_recall.py)."""

    k: float = 10.0
    text: float = 1.0
    semantic: float = 0.5
    depth: int = 40  # semantic candidates asked of the vector index
    floor: float = 0.4  # semantic candidates below this cosine are dropped (measured: 0.3-0.45 hold
                        # recall; 0.4 keeps a word found nowhere from pulling in unrelated entries)
    scores: str = "evidence"  # evidence: absolute scores (.evidence); shares: the earlier shares of the best
    meaning: bool = True  # embed the query's meaning words only (meaning_text); False: its whole text
    known_share: float = 0.75  # the share of a query's content words the model must know as words


FUSION = Fusion()


class _Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> Any: ...


class _Vectors(Protocol):
    def search(self, vector: Any, k: int, as_of: int | None) -> list[tuple[int, float]]: ...


def resolve_mode(query: SearchQuery, has_text: bool, embedder: object, vectors: object) -> str:
    """The mode a search runs in: the query's, else hybrid when an embedder is
    installed, else text; browsing (no text) is always text. Semantic and
    hybrid without an embedder are refused."""
    if query.mode in ("semantic", "hybrid") and (embedder is None or vectors is None):
        raise InvalidQueryError(
            f"search mode {query.mode} needs an embedding model; install memlog[semantic] "
            "(or pass an embedder), or use mode text")
    if not has_text:
        return "text"
    if query.mode is not None:
        return query.mode
    return "hybrid" if embedder is not None and vectors is not None else "text"


def meaning_text(text: str, embedder: object) -> str:
    """What of the query ``text`` is embedded by a model that tells the words
    it knows (``knows(word)``, the shipped static one): the text without its
    identifier-like tokens, or nothing at all when it knows fewer than
    :attr:`Fusion.known_share` of the query's content words as words
    (gibberish, codes and rare names carry no meaning it learnt; their
    pieces would match any text sharing them). Any other model embeds the
    query as given (a transformer reads an identifier as a whole)."""
    knows = getattr(embedder, "knows", None)
    if not FUSION.meaning or knows is None:  # a model of one's own embeds the query as given
        return text
    plain = strip_identifiers(text)
    content = meaning_words(text)
    known = sum(1 for w in content if knows(w))
    return plain if content and known >= FUSION.known_share * len(content) else ""


def nearest(query: SearchQuery, as_of: int | None, embedder: _Embedder, vectors: _Vectors,
            depth: int) -> dict[int, float]:
    """The documents nearest the embedding of the query's :func:`meaning_text`
    (at least the cosine floor: the embedder's ``min_cosine`` if it declares
    one, else :attr:`Fusion.floor`, measured for the shipped model): rseq ->
    cosine, not yet checked against the query's filters (:func:`allowed`)."""
    text = meaning_text(query.text, embedder)
    if not text.strip():
        return {}
    floor = getattr(embedder, "min_cosine", FUSION.floor)
    vector = embedder.embed([text])[0]
    return {r: c for r, c in vectors.search(vector, depth, as_of) if c >= floor}


def allowed(index: SearchIndex, searchers: list[tuple[int, Any]], query: SearchQuery, as_of: int | None,
            rseqs: list[int]) -> dict[int, bool]:
    """Which of ``rseqs`` the query's filters allow: rseq -> is a memory."""
    if not rseqs:
        return {}
    wanted = set(rseqs)
    filters = filter_clauses(index.schema, query, as_of)
    listed = tantivy.Query.boolean_query(
        [(_Should, tantivy.Query.term_query(index.schema, "rseq", r)) for r in wanted])
    by_terms = tantivy.Query.boolean_query([(_Must, listed), *filters])
    by_filters = tantivy.Query.boolean_query([(_Must, tantivy.Query.all_query()), *filters])

    def matching(searcher: Any) -> list[tuple[int, bool]]:
        # A small shard is cheaper to list whole under the filters than to
        # look up each rseq (measured: 0.04 ms against 1.1 ms for 100 rseqs
        # over 16 shards of 40 documents; a term set query took 4 ms); a
        # large one is not (listing 16 shards of 1,250 costs ~10 ms).
        if searcher.num_docs == 0:
            return []  # Tantivy panics on a limit of 0
        scan = searcher.num_docs <= _SCAN_PER_RSEQ * len(wanted)
        q = by_filters if scan else by_terms
        found = searcher.search(q, searcher.num_docs if scan else len(wanted), count=False).hits
        addrs = [addr for _, addr in found]
        seqs = searcher.fast_field_values("rseq", addrs)
        mems = searcher.fast_field_values("memory", addrs)
        return [(int(r), bool(m)) for r, m in zip(seqs, mems, strict=True) if r and r in wanted]

    return {r: m for shard in index.map_searchers(matching, searchers) for r, m in shard}


def best_fused() -> float:
    """The fused score of a document first in both rankings: relevance 1."""
    return FUSION.text / (FUSION.k + 1) + FUSION.semantic / (FUSION.k + 1)


def fuse(texts: Sequence[float], rseqs: Sequence[int], semantic: dict[int, tuple[float, bool]],
         mode: str) -> list[float]:
    """The key of each candidate (given by its text score and rseq): with
    :attr:`Fusion.scores` evidence, ``texts`` are shares of the query's ideal
    and the key is the score itself (text: the share; semantic: the cosine;
    hybrid: ``t + (1 - t) * semantic * cosine``); with shares, ``texts`` are
    exact text scores and hybrid is weighted reciprocal rank fusion."""
    f = FUSION
    if mode == "text":
        return list(texts)
    if mode == "semantic":
        return [semantic.get(r, (-1.0, False))[0] for r in rseqs]
    if f.scores == "evidence":
        cosines = [semantic[r][0] if r in semantic else 0.0 for r in rseqs]
        return [max(0.0, t) + max(0.0, 1.0 - max(0.0, t)) * f.semantic * c
                for t, c in zip(texts, cosines, strict=True)]
    text_rank = _ranks([(t, -r) for t, r in zip(texts, rseqs, strict=True)], [t > 0 for t in texts])
    cosines = [semantic.get(r, (-2.0, False))[0] for r in rseqs]
    sem_rank = _ranks([(c, -r) for c, r in zip(cosines, rseqs, strict=True)], [r in semantic for r in rseqs])
    return [(f.text / (f.k + tr) if tr else 0.0) + (f.semantic / (f.k + sr) if sr else 0.0)
            for tr, sr in zip(text_rank, sem_rank, strict=True)]


def _ranks(keys: list[tuple[float, int]], present: list[bool]) -> list[int]:
    """1-based rank of each item by ``keys`` descending (0 where not ``present``)."""
    order = sorted((i for i in range(len(keys)) if present[i]), key=lambda i: keys[i], reverse=True)
    ranks = [0] * len(keys)
    for position, i in enumerate(order, 1):
        ranks[i] = position
    return ranks
