"""MemlogStore: LangGraph's BaseStore on memlog.

The differential test runs one random sequence of operations on LangGraph's
``InMemoryStore`` and on ``MemlogStore`` and compares what they answer:
namespace, key and value of every item, in order (timestamps differ by
nature and are left out). Two normalisations, both documented in
docs/integrations/langgraph.md:

- ``InMemoryStore`` never forgets a namespace, even one whose items were all
  deleted or one a ``get`` or a delete only looked at (and such a look puts
  the namespace in its order); ``MemlogStore`` erases a namespace with its
  last item. The oracle's namespace table takes a namespace in with its
  first item, and drops the empty ones after every operation (a batch is
  one operation), so both list and order the namespaces that hold items.
- ``InMemoryStore`` without embeddings ignores a query; ``MemlogStore`` ranks
  with memlog's search. For a search with a query (offset 0, a limit above
  the item count) the test compares the set of items, and the order of the
  items the query did not rank (score None), which follow the ranked ones.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from commands.langgraph.documents import item_key
from eventstore import MemoryNotFoundError, ReadOnlyError
from memlog import MemoryLog
from memlog.langgraph import MemlogStore
from tests.conftest import scan_dir

# -- the differential test -----------------------------------------------------

LABELS = st.sampled_from(["a", "b", "c"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
KEYS = st.sampled_from(["k0", "k1", "k2", "k3"])
WORDS = ["apple", "river", "stone", "cloud"]
VALUES = st.fixed_dictionaries(
    {"n": st.integers(-3, 3), "tag": st.sampled_from(["red", "blue"]), "text": st.sampled_from(WORDS)},
    optional={"sub": st.fixed_dictionaries({"x": st.integers(0, 1)}), "list": st.lists(st.integers(0, 2),
                                                                                       max_size=2)})
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"tag": st.sampled_from(["red", "blue"])}),
    st.fixed_dictionaries({"n": st.integers(-3, 3)}),
    st.fixed_dictionaries({"sub": st.fixed_dictionaries({"x": st.integers(0, 1)})}),
    st.fixed_dictionaries({"list": st.lists(st.integers(0, 2), max_size=2)}),
    st.builds(lambda op, v: {"n": {op: v}}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
              st.integers(-3, 3)),
    st.builds(lambda lo, hi, t: {"n": {"$gte": lo, "$lte": hi}, "tag": {"$ne": t}},
              st.integers(-3, 3), st.integers(-3, 3), st.sampled_from(["red", "blue"])),
)
PATHS = st.lists(st.sampled_from(["a", "b", "c", "*"]), max_size=2).map(tuple)

PUT = st.tuples(st.just("put"), NAMESPACES, KEYS, VALUES, st.sampled_from([None, False, ["text"], ["tag"]]))
DELETE = st.tuples(st.just("delete"), NAMESPACES, KEYS)
GET = st.tuples(st.just("get"), NAMESPACES, KEYS)
SEARCH = st.tuples(st.just("search"), st.lists(LABELS, max_size=2).map(tuple), FILTERS,
                   st.integers(0, 6), st.integers(0, 4))
QUERY = st.tuples(st.just("query"), st.lists(LABELS, max_size=1).map(tuple), FILTERS, st.sampled_from(WORDS))
LIST = st.tuples(st.just("list"), PATHS, PATHS, st.one_of(st.none(), st.integers(1, 3)),
                 st.integers(1, 10), st.integers(0, 3))
BATCH = st.tuples(st.just("batch"), st.lists(st.one_of(PUT, DELETE, GET, SEARCH), min_size=2, max_size=4))
OPS = st.lists(st.one_of(PUT, PUT, DELETE, GET, SEARCH, SEARCH, QUERY, LIST, BATCH), min_size=1, max_size=14)


def _to_op(step: tuple[Any, ...]) -> Any:
    """One generated step as a LangGraph op."""
    match step:
        case ("put", ns, key, value, index):
            return PutOp(ns, key, value, index)
        case ("delete", ns, key):
            return PutOp(ns, key, None)
        case ("get", ns, key):
            return GetOp(ns, key)
        case ("search", prefix, flt, limit, offset):
            return SearchOp(prefix, flt, limit, offset)
        case ("query", prefix, flt, word):
            return SearchOp(prefix, flt, 100, 0, word)
        case ("list", prefix, suffix, depth, limit, offset):
            pairs = (("prefix", prefix), ("suffix", suffix))
            conds = tuple(MatchCondition(kind, path) for kind, path in pairs if path)
            return ListNamespacesOp(conds or None, depth, limit, offset)
    raise AssertionError(step)


def _shape(result: Any) -> Any:
    """A result without its timestamps: (namespace, key, value) per item."""
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [_shape(r) for r in result]
    return result


class _Items(dict[str, Any]):
    """One namespace's items in the oracle; it joins the table with its first item."""

    def __init__(self, table: _Namespaces, namespace: tuple[str, ...]) -> None:
        super().__init__()
        self.table, self.namespace = table, namespace

    def __setitem__(self, key: str, item: Any) -> None:
        super().__setitem__(key, item)
        if self.namespace not in self.table:
            dict.__setitem__(self.table, self.namespace, self)


class _Namespaces(dict[tuple[str, ...], _Items]):
    """The oracle's namespace table (InMemoryStore's ``_data``), where a get or
    a delete that finds nothing leaves no namespace behind (see the module
    docstring): a namespace is listed, and ordered, from its first item on."""

    def __missing__(self, namespace: tuple[str, ...]) -> _Items:
        return _Items(self, namespace)


def _oracle() -> InMemoryStore:
    oracle = InMemoryStore()
    oracle._data = _Namespaces()  # type: ignore[assignment]
    return oracle


def _prune(oracle: InMemoryStore) -> None:
    """Drop the oracle's namespaces left empty by an operation (see the module docstring)."""
    for ns in [ns for ns, items in oracle._data.items() if not items]:
        del oracle._data[ns]


def _check(op: Any, got: Any, want: Any) -> None:
    if isinstance(op, SearchOp) and op.query:
        assert sorted(map(repr, _shape(got))) == sorted(map(repr, _shape(want))), op
        unranked = [(i.namespace, i.key) for i in got if i.score is None]
        assert unranked == [(i.namespace, i.key) for i in want if (i.namespace, i.key) in set(unranked)], op
        assert all(i.score is not None for i in got[: len(got) - len(unranked)])
    else:
        assert _shape(got) == _shape(want), op


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemlogStore]:
    """One text-only store for the whole differential test (one user per example)."""
    with MemlogStore(tmp_path_factory.mktemp("lg") / "store", embedder=None) as store:
        yield store


_users = itertools.count()


@settings(max_examples=60)
@given(steps=OPS)
@example(steps=[("put", ("a",), "k0", {"n": 0}, None), ("put", ("b",), "k0", {"n": 0}, None),
                ("delete", ("a",), "k0"), ("put", ("a",), "k1", {"n": 1}, None), ("search", (), None, 5, 0)])
@example(steps=[("batch", [("get", ("a",), "k0"), ("delete", ("b",), "k0"),
                           ("put", ("c",), "k0", {"n": 0}, None), ("put", ("b",), "k1", {"n": 0}, None),
                           ("put", ("a",), "k0", {"n": 0}, None)]),
                ("search", (), None, 5, 0)])
def test_differential_against_in_memory_store(shared: MemlogStore, steps: list[tuple[Any, ...]]) -> None:
    """The same operations on InMemoryStore and MemlogStore give the same answers."""
    store, oracle = shared.for_user(f"example_{next(_users)}"), _oracle()
    for step in steps:
        if step[0] == "batch":  # a batch of several ops goes through abatch on both sides
            ops = [_to_op(s) for s in step[1]]
            got, want = asyncio.run(store.abatch(ops)), asyncio.run(oracle.abatch(ops))
        else:
            ops = [_to_op(step)]
            got, want = store.batch(ops), oracle.batch(ops)
        _prune(oracle)
        for op, g, w in zip(ops, got, want, strict=True):
            _check(op, g, w)
    everything = ListNamespacesOp(None, None, 1000, 0)
    assert store.batch([everything]) == oracle.batch([everything])
    assert _shape(store.search((), limit=1000)) == _shape(oracle.search((), limit=1000))


def test_abatch_and_the_convenience_methods(tmp_path: Path) -> None:
    """abatch runs ops like batch; put/get/search/list_namespaces/delete and their async twins."""
    with MemlogStore(tmp_path / "store", embedder=None) as store:
        store.put(("docs",), "d1", {"text": "Python tutorial"})
        results = asyncio.run(store.abatch([GetOp(("docs",), "d1"), PutOp(("docs",), "d2", {"text": "x"}),
                                            SearchOp(("docs",))]))
        assert _shape(results) == [(("docs",), "d1", {"text": "Python tutorial"}), None,
                                   [(("docs",), "d1", {"text": "Python tutorial"})]]
        assert asyncio.run(store.aget(("docs",), "d2")) is not None
        asyncio.run(store.adelete(("docs",), "d2"))
        assert store.get(("docs",), "d2") is None
        assert store.list_namespaces(prefix=("docs",)) == [("docs",)]
        with pytest.raises(ValueError, match="periods"):
            store.put(("a.b",), "k", {"x": 1})
        with pytest.raises(ValueError, match="langgraph"):
            store.put(("langgraph",), "k", {"x": 1})


# -- query, index, timestamps ------------------------------------------------------


def test_query_ranks_with_memlog_search_and_honours_index(tmp_path: Path) -> None:
    """A query puts what memlog's search matches first; index=False and index
    fields decide what a query may match; unmatched items follow, score None."""
    with MemlogStore(tmp_path / "store", embedder=None, index={"fields": ["text"]}) as store:
        store.put(("docs",), "a", {"text": "the ledger runs on postgres", "note": "kafka"})
        store.put(("docs",), "b", {"text": "kafka streams the events", "note": "postgres"})
        store.put(("docs",), "c", {"text": "postgres replicas"}, index=False)
        store.put(("docs",), "d", {"text": "nothing", "note": "postgres"}, index=["note"])
        hits = store.search(("docs",), query="postgres")
        ranked = [h.key for h in hits if h.score is not None]
        assert sorted(ranked) == ["a", "d"]                 # text field of a, note of d; c not indexed
        assert [h.key for h in hits if h.score is None] == ["b", "c"]
        assert [h.key for h in store.search(("docs",), query="kafka") if h.score is not None] == ["b"]
        assert [h.key for h in store.search(("docs",), query="postgres", filter={"note": "kafka"})] == ["a"]
        for odd in ("*", "!!!", "x" * 300, "seq:[1 TO 5]", "   ", 'a "b', "(c"):   # never an error
            assert sorted(h.key for h in store.search(("docs",), query=odd)) == ["a", "b", "c", "d"]


def test_timestamps_come_from_the_memory_events(tmp_path: Path) -> None:
    """created_at: the first save still current; updated_at: the latest."""
    with MemlogStore(tmp_path / "store", embedder=None) as store:
        store.put(("t",), "k", {"v": 1})
        first = store.get(("t",), "k")
        store.put(("t",), "k", {"v": 2})
        second = store.get(("t",), "k")
        assert first is not None and second is not None
        assert second.created_at == first.created_at < second.updated_at
        store.delete(("t",), "k")
        store.put(("t",), "k", {"v": 3})
        third = store.get(("t",), "k")
        assert third is not None and third.created_at > second.updated_at


def test_hybrid_search_with_the_default_embedder(tmp_path: Path) -> None:
    """With memlog's shipped embedder, a query ranks by hybrid search."""
    pytest.importorskip("numpy")
    with MemlogStore(tmp_path / "store") as store:
        assert store.mem.proj.embedder is not None
        store.put(("kb",), "db", {"text": "The ledger database is PostgreSQL"})
        store.put(("kb",), "ui", {"text": "The frontend uses React"})
        hits = store.search(("kb",), query="which database holds the ledger")
        assert hits[0].key == "db" and hits[0].score is not None


SYNONYMS = {"car": 0, "automobile": 0, "vehicle": 0, "tea": 1, "coffee": 1, "drink": 1}


def fake_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: one dimension per group of synonyms (other words: none)."""
    out = []
    for text in texts:
        row = [0.0] * 4
        for word in re.findall(r"[a-z]+", text.lower()):
            if word in SYNONYMS:
                row[SYNONYMS[word]] += 1.0
        out.append(row)
    return out


def test_the_index_embed_becomes_memlogs_embedder(tmp_path: Path) -> None:
    """index={"dims", "embed"}: memlog's search uses that model, and a query
    ranks by its cosine (LangGraph's score), so it finds an item that shares no word with it."""
    pytest.importorskip("numpy")
    index: Any = {"dims": 4, "embed": fake_embed}
    with MemlogStore(tmp_path / "store", index=index) as store:
        assert store.mem.proj.embedder is not None and store.mem.proj.embedder.name.endswith(":4")
        store.put(("kb",), "ride", {"text": "a red car"})
        store.put(("kb",), "cup", {"text": "green tea"})
        hits = store.search(("kb",), query="automobile")
        assert [(h.key, h.score) for h in hits] == [("ride", pytest.approx(1.0)), ("cup", 0.0)]


# -- privacy, scope, audit ---------------------------------------------------------


def test_a_delete_is_erased_from_the_data_dir(tmp_path: Path) -> None:
    """A delete runs the deletion pipeline: the report is verified and no byte
    of the value (nor of the namespace it emptied) is left under the data dir."""
    value_marker = f"zebra{secrets.token_hex(5)}"
    label_marker = f"ns{secrets.token_hex(5)}"
    kept = f"kept{secrets.token_hex(5)}"
    path = tmp_path / "store"
    with MemlogStore(path, embedder=None) as store:
        store.put((label_marker, "facts"), "secret", {"text": f"the code word is {value_marker}"})
        store.put(("other",), "keep", {"text": kept})
        assert store.search((label_marker,), query=value_marker)[0].score is not None
    assert scan_dir(path, [value_marker.encode()]), "the value is on disk before the delete"
    with MemlogStore(path, embedder=None) as store:
        report = store.forget((label_marker, "facts"), "secret")
        assert report.purged and report.verified and report.deleted == 3  # item, its search text, namespace
        assert store.erasure_report() == report
        assert store.get((label_marker, "facts"), "secret") is None
        assert store.list_namespaces() == [("other",)]
    assert scan_dir(path, [value_marker.encode(), label_marker.encode()]) == {}
    assert scan_dir(path, [kept.encode()])


def test_a_forget_by_hand_takes_the_search_text_and_a_delete_the_anchor(tmp_path: Path) -> None:
    """Forgetting an item's document memory by hand (``forget``, MCP's, ``delete
    --id``) erases its search text too, a copy of the value's words; the store's
    delete of that item then erases the namespace's anchor the forget left."""
    marker = f"otter{secrets.token_hex(5)}"
    label = f"ns{secrets.token_hex(5)}"
    path = tmp_path / "store"
    with MemlogStore(path, embedder=None) as store:
        store.put((label,), "k", {"text": marker})
        report = store.mem.forget(store.user_id, item_key((label,), "k"))
        assert report.verified and report.deleted == 2  # the document and its search text
        assert store.get((label,), "k") is None
        assert store.mem.search(marker, user_id=store.user_id, source="memories") == []
        assert scan_dir(path, [marker.encode()]) == {}
        assert scan_dir(path, [label.encode()])           # the namespace's anchor is left
        store.delete((label,), "k")
        report = store.erasure_report()
        assert report is not None and report.verified and report.deleted == 1
    assert scan_dir(path, [marker.encode(), label.encode()]) == {}


def test_two_users_on_one_directory_do_not_see_each_other(tmp_path: Path) -> None:
    """Each store object is one memlog user: no get, search, list, delete or
    history reaches the other's items; their not-found is the plain one."""
    with MemoryLog.open(tmp_path / "store", embedder=None) as mem:
        alice, bob = MemlogStore(mem, user_id="alice"), MemlogStore(mem, user_id="bob")
        alice.put(("prefs",), "style", {"text": "concise answers"})
        assert bob.get(("prefs",), "style") is None
        assert bob.search(("prefs",), query="concise") == [] and bob.search(()) == []
        assert bob.list_namespaces() == []
        bob.delete(("prefs",), "style")                       # nothing of bob's to delete
        with pytest.raises(MemoryNotFoundError) as theirs:
            bob.forget(("prefs",), "style")
        with pytest.raises(MemoryNotFoundError) as nobodys:
            MemlogStore(mem, user_id="carol").forget(("prefs",), "style")
        assert str(theirs.value) == str(nobodys.value) and theirs.value.code == nobodys.value.code
        with pytest.raises(MemoryNotFoundError):
            bob.history(("prefs",), "style")
        item = alice.get(("prefs",), "style")
        assert item is not None and item.value == {"text": "concise answers"}
        bob.put(("prefs",), "style", {"text": "long answers"})
        assert _shape(alice.search(())) == [(("prefs",), "style", {"text": "concise answers"})]


def test_as_of_and_history(tmp_path: Path) -> None:
    """as_of reads the items as they were (read-only); history lists the saves."""
    with MemlogStore(tmp_path / "store", embedder=None) as store:
        store.put(("h",), "k", {"v": "first"})
        seq = store.mem.last_seq
        store.put(("h",), "k", {"v": "second"})
        store.put(("h",), "other", {"v": "later"})
        then = store.as_of(seq)
        old = then.get(("h",), "k")
        assert old is not None and old.value == {"v": "first"}
        assert [i.key for i in then.search(("h",))] == ["k"] and then.list_namespaces() == [("h",)]
        ranked = then.search(("h",), query="first")
        assert [(i.key, i.score is not None) for i in ranked] == [("k", True)]
        assert [i.key for i in store.search(("h",), query="first") if i.score is not None] == []
        now = store.as_of(f"@{store.mem.last_seq}").get(("h",), "k")
        assert now is not None and now.value == {"v": "second"}
        with pytest.raises(ReadOnlyError):
            then.put(("h",), "k", {"v": "x"})
        saves = store.history(("h",), "k")
        assert [e.type for e in saves] == ["memory.saved", "memory.saved"]
        assert '"first"' in (saves[0].content or "") and '"second"' in (saves[1].content or "")


def test_a_read_only_store_reads_and_refuses_writes(tmp_path: Path) -> None:
    """MemlogStore(path, read_only=True): reads work; put, delete and forget raise E_READ_ONLY."""
    with MemlogStore(tmp_path / "store", embedder=None) as store:
        store.put(("a",), "k", {"text": "hello"})
    with MemlogStore(tmp_path / "store", embedder=None, read_only=True) as store:
        assert store.search(("a",), query="hello")[0].score is not None
        for write in (lambda: store.put(("a",), "k2", {"x": 1}), lambda: store.delete(("a",), "k"),
                      lambda: store.forget(("a",), "k")):
            with pytest.raises(ReadOnlyError):
                write()
        assert store.get(("a",), "k") is not None and store.get(("a",), "k2") is None


# -- a graph -----------------------------------------------------------------------


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def remember_and_recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    """A deterministic node: store the fact, then search the user's memories."""
    store = runtime.store
    assert store is not None
    namespace = ("memories", state["user"])
    store.put(namespace, f"fact{len(store.search(namespace, limit=100))}", {"text": state["fact"]})
    hits = store.search(namespace, query=state["fact"].split()[-1], limit=5)
    return {"recalled": [h.value["text"] for h in hits]}


def test_a_graph_stores_and_searches_through_memlog(tmp_path: Path) -> None:
    """StateGraph compiled with store=MemlogStore: the node's writes persist."""
    builder = StateGraph(State)
    builder.add_node("remember", remember_and_recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    with MemlogStore(tmp_path / "store", embedder=None) as store:
        graph = builder.compile(store=store)
        graph.invoke({"user": "u1", "fact": "likes green tea", "recalled": []})
        out = graph.invoke({"user": "u1", "fact": "works with postgres", "recalled": []})
        assert out["recalled"][0] == "works with postgres"
        assert sorted(out["recalled"]) == ["likes green tea", "works with postgres"]
    with MemlogStore(tmp_path / "store", embedder=None) as store:     # persisted
        assert [i.key for i in store.search(("memories", "u1"))] == ["fact0", "fact1"]


def test_memlog_imports_without_the_extra() -> None:
    """``import memlog`` (and the CLI) work without LangGraph; memlog.langgraph says what to install."""
    code = ("import sys; sys.modules['langgraph'] = None\n"
            "import memlog, commands.cli\n"
            "try:\n    import memlog.langgraph\nexcept ImportError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert 'pip install "memlog[langgraph]"' in done.stdout


# -- the doc ------------------------------------------------------------------------
