"""MemlogStore behaves as LangGraph's own stores do where their test suites look.

Each test here is one behaviour that LangGraph's store suites (its
``InMemoryStore`` and ``SqliteStore`` tests, run against ``MemlogStore``)
showed missing: namespaces a batch accepts, the ``index_config`` and
``embeddings`` attributes, scores that are the cosine of the query and the
item's per-field vectors when the index has an ``embed``, filters (dotted
fields too) with a vector search, a namespace prefix given as a list, and
concurrent async calls that share a batch. The embedding is a letter count,
so every expected cosine is computed by hand.
"""

from __future__ import annotations

import asyncio
import math
import string
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from commands.langgraph import MemlogStore
from eventstore import InvalidInputError

pytest.importorskip("numpy")


def letters(texts: list[str]) -> list[list[float]]:
    """One dimension per letter a-z, counting the letters of each text."""
    return [[float(text.lower().count(c)) for c in string.ascii_lowercase] for text in texts]


def cosine(a: str, b: str) -> float:
    """The cosine of two texts' letter counts (0 when one has no letter)."""
    (u,), (v,) = letters([a]), letters([b])
    norm = math.sqrt(sum(x * x for x in u)) * math.sqrt(sum(y * y for y in v))
    return sum(x * y for x, y in zip(u, v, strict=True)) / norm if norm else 0.0


def open_store(path: Path, **index: Any) -> MemlogStore:
    """A store whose index embeds with :func:`letters` (memlog's own embedder off)."""
    return MemlogStore(path, embedder=None, index={"dims": 26, "embed": letters, **index})


def scores(store: MemlogStore, query: str, **kwargs: Any) -> dict[str, float | None]:
    return {hit.key: hit.score for hit in store.search(("kb",), query=query, **kwargs)}


# -- namespaces --------------------------------------------------------------------


def test_a_batch_takes_a_langgraph_root_that_put_refuses(tmp_path: Path) -> None:
    """put refuses an empty namespace and a "langgraph" root; a batch refuses the
    empty one only, and an item under a "langgraph" root reads back."""
    with MemlogStore(tmp_path / "s", embedder=None) as store:
        for namespace in [(), ("langgraph", "foo")]:
            with pytest.raises(InvalidNamespaceError):
                store.put(namespace, "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp((), "k", {"v": 1})])
        store.batch([PutOp(("langgraph", "foo"), "k", {"v": 1})])
        item = store.get(("langgraph", "foo"), "k")
        assert item is not None and item.value == {"v": 1}
        assert [hit.key for hit in store.search(("langgraph",))] == ["k"]


def test_a_namespace_prefix_may_be_a_list(tmp_path: Path) -> None:
    """search(["a"]) finds what search(("a",)) finds."""
    with MemlogStore(tmp_path / "s", embedder=None) as store:
        store.put(("a", "b"), "k1", {"v": 1})
        store.put(("c",), "k2", {"v": 2})
        assert [hit.key for hit in store.search(["a"])] == ["k1"]  # type: ignore[arg-type]


# -- the index configuration -------------------------------------------------------


def test_index_config_and_embeddings_are_the_stores_attributes(tmp_path: Path) -> None:
    """index_config is the index given and embeddings its model; both None without an index."""
    with MemlogStore(tmp_path / "a", embedder=None) as plain:
        assert plain.index_config is None and plain.embeddings is None
    with open_store(tmp_path / "b", fields=["text"]) as store:
        assert store.index_config is not None
        assert store.index_config["dims"] == 26 and store.index_config["fields"] == ["text"]
        assert store.index_config["embed"] is letters
        assert store.embeddings is not None and store.embeddings.embed_query("ab")[:3] == [1.0, 1.0, 0.0]


def test_text_fields_is_read_as_fields(tmp_path: Path) -> None:
    """An index with the sqlite store's text_fields embeds those fields only."""
    with MemlogStore(tmp_path / "s", embedder=None,
                     index={"dims": 26, "embed": letters, "text_fields": ["body"]}) as store:
        assert store.index_config is not None and store.index_config.get("text_fields") == ["body"]
        store.put(("kb",), "doc", {"body": "kiwi", "title": "zebra"})
        assert scores(store, "zebra")["doc"] == pytest.approx(cosine("zebra", "kiwi"))


# -- scores with an index.embed ----------------------------------------------------


@pytest.mark.parametrize("query", ["aaa", "bbb", "abcd", "poisson"])
def test_the_score_is_the_cosine_of_query_and_field(tmp_path: Path, query: str) -> None:
    """With an index.embed every indexed item is scored by its cosine, low or zero ones too."""
    with open_store(tmp_path / "s", fields=["text"]) as store:
        store.put(("kb",), "doc", {"text": "aaa"})
        assert scores(store, query) == {"doc": pytest.approx(cosine(query, "aaa"), abs=1e-6)}


def test_the_score_is_the_best_field_and_other_fields_do_not_count(tmp_path: Path) -> None:
    """An item has a vector per indexed field; its score is the best one."""
    with open_store(tmp_path / "s", fields=["a", "c"]) as store:
        store.put(("kb",), "one", {"a": "xxx", "b": "yyy", "c": "zzz"})
        store.put(("kb",), "two", {"a": "zzz", "b": "www"})
        assert scores(store, "zzz") == {"one": pytest.approx(1.0), "two": pytest.approx(1.0)}
        got = scores(store, "yyy")  # b is not indexed: no item matches it
        assert got == {"one": pytest.approx(0.0), "two": pytest.approx(0.0)}
        got = scores(store, "xxz")
        assert got["one"] == pytest.approx(max(cosine("xxz", "xxx"), cosine("xxz", "zzz")))


def test_paths_select_nested_and_listed_texts(tmp_path: Path) -> None:
    """A path "a.b" embeds a nested text and "a[*].c" one text per element."""
    with open_store(tmp_path / "s", fields=["meta.title", "notes[*].text"]) as store:
        store.put(("kb",), "doc", {"meta": {"title": "plum"}, "notes": [{"text": "kiwi"}, {"text": "fig"}]})
        for query in ["plum", "kiwi", "fig"]:
            assert scores(store, query)["doc"] == pytest.approx(1.0)
        best = max(cosine("meta", text) for text in ["plum", "kiwi", "fig"])
        assert scores(store, "meta")["doc"] == pytest.approx(best)


def test_a_puts_own_index_and_index_false(tmp_path: Path) -> None:
    """A put's index replaces the store's fields; an index=False item follows, unscored."""
    with open_store(tmp_path / "s", fields=["nowhere"]) as store:
        store.put(("kb",), "own", {"k0": "aaa", "k1": "bbb"}, index=["k1"])
        store.put(("kb",), "none", {"k0": "aaa"}, index=False)
        hits = store.search(("kb",), query="bbb")
        assert [(h.key, h.score) for h in hits] == [("own", pytest.approx(1.0)), ("none", None)]
        assert scores(store, "aaa")["own"] == pytest.approx(0.0)


def test_a_new_value_is_embedded_again_and_the_order_follows_the_cosine(tmp_path: Path) -> None:
    """A put of a new value moves its score; the hits come best first."""
    with open_store(tmp_path / "s", fields=["text"]) as store:
        store.put(("kb",), "d1", {"text": "zany zebra"})
        store.put(("kb",), "d2", {"text": "dogs"})
        first = [h.key for h in store.search(("kb",), query="zebra")]
        assert first == ["d1", "d2"]
        store.put(("kb",), "d1", {"text": "dogs again"})
        hits = store.search(("kb",), query="zebra")
        assert {h.key: h.score for h in hits} == {
            "d1": pytest.approx(cosine("zebra", "dogs again")), "d2": pytest.approx(cosine("zebra", "dogs"))}
        assert [h.score for h in hits] == sorted((h.score for h in hits), key=lambda s: -(s or 0))


def test_scores_hold_after_a_reopen(tmp_path: Path) -> None:
    """Items saved before a reopen are scored by their cosine after it."""
    with open_store(tmp_path / "s", fields=["text"]) as store:
        store.put(("kb",), "doc", {"text": "pear"})
    with open_store(tmp_path / "s", fields=["text"]) as store:
        assert scores(store, "pea") == {"doc": pytest.approx(cosine("pea", "pear"))}


def test_a_filter_narrows_a_vector_search(tmp_path: Path) -> None:
    """A filter keeps the items it matches, ranked by their cosine."""
    with open_store(tmp_path / "s", fields=["text"]) as store:
        for key, text, color, rank in [("d1", "red apple", "red", 4.5), ("d2", "red car", "red", 3.0),
                                       ("d3", "green apple", "green", 4.0), ("d4", "blue car", "blue", 3.5)]:
            store.put(("kb",), key, {"text": text, "color": color, "rank": rank})
        assert [h.key for h in store.search(("kb",), query="apple", filter={"color": "red"})] == ["d1", "d2"]
        hits = store.search(("kb",), query="car", filter={"rank": {"$gt": 3.2}})
        assert [h.key for h in hits] == ["d4", "d1", "d3"]
        assert hits[0].score == pytest.approx(cosine("car", "blue car"))


# -- filters -----------------------------------------------------------------------


def test_a_dotted_filter_field_reads_a_nested_value(tmp_path: Path) -> None:
    """{"user.role": x} matches a nested field; a key that holds the dot itself wins."""
    with MemlogStore(tmp_path / "s", embedder=None) as store:
        store.put(("kb",), "nested", {"user": {"role": "admin", "x-y": 1}})
        store.put(("kb",), "literal", {"user.role": "admin", "user": {"role": "guest"}})
        assert [h.key for h in store.search(("kb",), filter={"user.role": "admin"})] == ["nested", "literal"]
        assert [h.key for h in store.search(("kb",), filter={"user.x-y": 1})] == ["nested"]
        assert store.search(("kb",), filter={"user.role.more": "admin"}) == []


# -- async batches -----------------------------------------------------------------


def test_concurrent_deletes_share_one_deletion(tmp_path: Path) -> None:
    """adelete calls gathered together run as one deletion request (one purge)."""
    with MemlogStore(tmp_path / "s", embedder=None) as store:
        for i in range(12):
            store.put(("kb",), f"k{i}", {"v": i})

        async def run() -> None:
            await asyncio.gather(*(store.adelete(("kb",), f"k{i}") for i in range(12)))
        asyncio.run(run())
        assert store.search(("kb",)) == []
        assert len(store.erasure_reports()) == 1


def test_a_bad_call_among_concurrent_calls_fails_alone(tmp_path: Path) -> None:
    """In a shared batch the faulty call gets its error and the others are applied."""
    with MemlogStore(tmp_path / "s", embedder=None) as store:

        async def run() -> list[Any]:
            return await asyncio.gather(store.aput(("kb",), "good", {"v": 1}),
                                        store.aput(("kb",), "bad", {"v": object()}), return_exceptions=True)
        good, bad = asyncio.run(run())
        assert good is None and isinstance(bad, InvalidInputError)
        item = store.get(("kb",), "good")
        assert item is not None and item.value == {"v": 1} and store.get(("kb",), "bad") is None


def test_a_users_store_objects_share_the_vectors(tmp_path: Path) -> None:
    """for_user gives stores that share the vectors: an item's text is embedded once."""
    seen: list[str] = []

    def counting(texts: list[str]) -> list[list[float]]:
        seen.extend(texts)
        return letters(texts)

    with MemlogStore(tmp_path / "s", embedder=None, index={"dims": 26, "embed": counting}) as store:
        store.for_user("ann").put(("kb",), "doc", {"text": "pear"})
        for _ in range(3):
            hits = store.for_user("ann").search(("kb",), query="pea")
            assert [h.key for h in hits] == ["doc"] and hits[0].score is not None
        assert seen.count('{"text": "pear"}') == 1
        assert store.for_user("bob").search(("kb",), query="pea") == []
