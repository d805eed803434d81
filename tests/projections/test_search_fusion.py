"""Semantic and hybrid search (Contract 2), with fakes: a tiny in-memory vector
index (fixed cosines by rseq) for the ranking itself, and a deterministic
hashing bag-of-words embedder through the real vector projection."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog
from commands.app.recall.search import find, make_query
from eventstore import InvalidQueryError, now_micros
from projections import Scope, SearchQuery
from projections.search import rank
from projections.search.fusion import fuse


class FakeVectors:
    """A vector index that answers fixed (rseq, cosine) pairs, best first."""

    def __init__(self, near: list[tuple[int, float]]) -> None:
        self.near = near
        self.asked: list[int] = []

    def search(self, vector: Any, k: int, as_of: int | None) -> list[tuple[int, float]]:
        self.asked.append(k)
        return self.near[:k]


class FakeEmbedder:
    name, dim = "fake", 1

    def embed(self, texts: Sequence[str]) -> Any:
        return [[1.0] for _ in texts]


@pytest.fixture()
def store(tmp_path: Path) -> MemoryLog:
    mem = MemoryLog.open(tmp_path / "s", embedder=None)
    alice = mem.start_session(user_id="alice")
    bob = mem.start_session(user_id="bob")
    other = mem.start_session(user_id="alice")
    mem.add_message(alice, role="user", content="the database is postgres")
    mem.add_message(bob, role="user", content="bob's secret relational store")    # Bob's
    mem.add_message(other, role="user", content="we picked a relational store")   # no word of the query
    mem.add_message(alice, role="user", content="lunch was pasta")
    return mem


def _seqs(mem: MemoryLog) -> dict[str, int]:
    with mem.proj.read(None, search=True) as views:
        return {v.entry.content: v.recorded_seq for v in views.latest_entries() if v.entry is not None}


def _rank(mem: MemoryLog, query: SearchQuery, vectors: Any, embedder: Any = None) -> list[str]:
    with mem.proj.read(None, search=True) as views:
        assert mem.proj.search_index is not None
        ranking = rank(mem.proj.search_index, views, query, None, now_micros(), vectors,
                       embedder or FakeEmbedder())
    return [r.view.entry.content for r in ranking.entries]  # type: ignore[union-attr]


def test_semantic_mode_ranks_by_cosine_within_the_filters(store: MemoryLog) -> None:
    with store:
        seq = _seqs(store)
        near = [(seq["bob's secret relational store"], 0.99), (seq["we picked a relational store"], 0.9),
                (seq["the database is postgres"], 0.5)]
        vectors = FakeVectors(near)
        found = _rank(store, SearchQuery(text="database", mode="semantic"), vectors)
        assert found == ["bob's secret relational store", "we picked a relational store",
                         "the database is postgres"]
        query = SearchQuery(text="database", mode="semantic", scope=Scope(user_id="alice"))
        scoped = _rank(store, query, vectors)
        assert scoped == []  # the entries carry no user id: only their sessions would let them in


def test_the_scope_filters_semantic_candidates(store: MemoryLog) -> None:
    with store:
        seq = _seqs(store)
        near = [(seq["bob's secret relational store"], 0.99), (seq["we picked a relational store"], 0.9)]
        with store.proj.read(None, search=True) as views:
            alice_sessions = tuple(s.session_id for s in views.sessions() if s.user_id == "alice")
        query = SearchQuery(text="database", mode="semantic", scope=Scope(session_ids=alice_sessions))
        assert _rank(store, query, FakeVectors(near)) == ["we picked a relational store"]


def test_hybrid_adds_what_only_the_meaning_finds(store: MemoryLog) -> None:
    with store:
        seq = _seqs(store)
        near = [(seq["we picked a relational store"], 0.95), (seq["the database is postgres"], 0.9)]
        found = _rank(store, SearchQuery(text="database", mode="hybrid"), FakeVectors(near))
        # found by both first; then the one only the vectors found; never the unrelated lunch
        assert found == ["the database is postgres", "we picked a relational store"]
        text = _rank(store, SearchQuery(text="database", mode="text"), FakeVectors(near))
        assert text == ["the database is postgres"]


def test_semantic_without_an_embedder_is_a_clear_error(store: MemoryLog) -> None:
    with store:
        for mode in ("semantic", "hybrid"):
            with pytest.raises(InvalidQueryError, match="needs an embedding model"):
                find(store.store, make_query("database", mode=mode))
        assert [r.content for r in find(store.store, make_query("database"))] == ["the database is postgres"]


def test_fusion_adds_meaning_to_what_the_words_leave() -> None:
    """Hybrid: t + (1 - t) * 0.5 * cosine, t the text share of the query's ideal."""
    texts, rseqs = [0.9, 0.5, 0.0], [1, 2, 3]
    both = fuse(texts, rseqs, {2: (0.9, False), 3: (0.8, False)}, "hybrid")
    assert both == pytest.approx([0.9, 0.5 + 0.5 * 0.5 * 0.9, 0.5 * 0.8])
    assert fuse(texts, rseqs, {3: (0.5, False)}, "semantic") == [-1.0, -1.0, 0.5]
    assert fuse(texts, rseqs, {}, "text") == texts


def test_fusion_as_shares_is_reciprocal_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    from projections.search.fusion import FUSION

    monkeypatch.setattr(FUSION, "scores", "shares")
    texts, rseqs = [3.0, 2.0, 0.0], [1, 2, 3]
    both = fuse(texts, rseqs, {2: (0.9, False), 3: (0.8, False)}, "hybrid")
    assert both[1] > both[0] > both[2] > 0


class HashEmbedder:
    """Deterministic bag of words: each word adds to a hashed coordinate (and its
    first four letters to another, so "relational" and "relabel" meet)."""

    name, dim = "hash-bow-64", 64
    min_cosine = 0.1  # its own scale: one shared word of five is a cosine of about 0.2

    def embed(self, texts: Sequence[str]) -> Any:
        np = pytest.importorskip("numpy")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                for part in (word, word[:4]):
                    out[i, int(hashlib.sha256(part.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = math.sqrt(float((out[i] ** 2).sum()))
            if norm:
                out[i] /= norm
        return out


def test_hybrid_through_the_vector_projection(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    with MemoryLog.open(tmp_path / "s", embedder=HashEmbedder()) as mem:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="the relational store is postgres")
        mem.add_message(sid, role="user", content="lunch was pasta")
        semantic = [r.content for r in find(mem.store, make_query("relabel", mode="semantic", limit=1))]
        assert semantic == ["the relational store is postgres"]
        assert find(mem.store, make_query("relabel", mode="text")) == []  # no such word
        hybrid = [r.content for r in find(mem.store, make_query("relabel"))]  # hybrid by default
        assert hybrid[0] == "the relational store is postgres"
