"""The embedding side of search: tokenizer, shipped model, vector projection."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from projections.embed.tokenizer import WordPiece, basic_tokens

np = pytest.importorskip("numpy")

from eventstore import EntryRecorded, EventLog, SessionStarted  # noqa: E402
from projections import Projections  # noqa: E402
from projections.embed import Embedder, VectorIndex, default_embedder  # noqa: E402
from projections.embed.static import MODEL_PATH, StaticEmbedder, read_model, write_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class Hashing:
    """A tiny embedder of one's own: a hashed bag of words (the protocol, nothing more)."""

    def __init__(self, name: str = "hashing-64", dim: int = 64) -> None:
        self.name = name
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


# -- tokenizer ------------------------------------------------------------------

def test_basic_tokens_split_like_bert() -> None:
    """Lower-case, accents stripped, punctuation split off, CJK one per token."""
    assert basic_tokens("Hello, World!") == ["hello", ",", "world", "!"]
    assert basic_tokens("Café naïve\tdon't") == ["cafe", "naive", "don", "'", "t"]
    assert basic_tokens("東京x") == ["東", "京", "x"]
    assert basic_tokens("a\x00b\u200bc") == ["abc"]


def test_basic_tokens_ascii_path_equals_the_general_one() -> None:
    """An ASCII text (its fast path) splits as the general path does: the
    controls are dropped (vertical tab, form feed, the separators Python's
    ``split`` cuts at, DEL), tab, newline and return are spaces."""
    ascii_text = "a\x0bb\x0cc\x7fd\te\nf\rg\x1ch\x1fi  j\x01k\x00l"
    assert ascii_text.isascii()
    tokens = basic_tokens(ascii_text)
    assert tokens == basic_tokens(ascii_text + " \u00e9")[:-1]  # one more word, accented: the general path
    assert tokens == ["abcd", "e", "f", "ghi", "jkl"]
    for char in map(chr, range(128)):  # each ASCII character, between two letters
        text = f"a{char}b"
        assert basic_tokens(text) == basic_tokens(text + " \u00e9")[:-1], repr(char)


def test_wordpiece_longest_match_first() -> None:
    """Greedy longest match, ``##`` continuations, [UNK] for a word that cannot be cut."""
    wp = WordPiece(["[UNK]", "un", "##aff", "##able", "aff", "##a", "!"])
    assert wp.encode("unaffable!") == [1, 2, 3, 6]
    assert wp.encode("xyz") == [0]
    assert wp.encode("a" * 101) == [0]
    assert wp.encode("") == []


# -- the shipped model ------------------------------------------------------------

def test_shipped_model_embeds_unit_rows() -> None:
    """float32 rows of the model's dimension, unit norm; a text with no token is zero."""
    embedder = default_embedder()
    assert isinstance(embedder, Embedder) and embedder is default_embedder()
    vectors = embedder.embed(["The cat sat on the mat.", "", "   "])
    assert vectors.dtype == np.float32 and vectors.shape == (3, embedder.dim)
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5
    assert not vectors[1].any() and not vectors[2].any()
    assert np.array_equal(embedder.embed(["The cat sat on the mat."])[0], vectors[0])


def test_shipped_model_places_paraphrases_near() -> None:
    """A paraphrase is nearer than an unrelated sentence."""
    embedder = StaticEmbedder()
    a, b, c = embedder.embed(["my dog loves playing fetch in the park",
                              "the puppy enjoys chasing a ball outdoors",
                              "quarterly tax filing deadline for the company"])
    assert float(a @ b) > float(a @ c)


def test_model_file_round_trips_and_is_small() -> None:
    """The file parses, re-encodes to the same bytes, and stays small."""
    data = MODEL_PATH.read_bytes()
    header, matrix = read_model(data)
    assert write_model(header, matrix) == data
    assert matrix.shape == (len(header["vocab"]), header["dim"])
    assert len(data) < 17_000_000


# -- the vector projection ---------------------------------------------------------

def test_vector_index_intervals_and_removal(tmp_path: Path) -> None:
    """Adds, removes and as-of through [from_seq, to_seq); a second reader's matrix follows."""
    index = VectorIndex(tmp_path / "v", Hashing())
    other = VectorIndex.__new__(VectorIndex)  # a second in-memory matrix over the same environment
    other.__dict__.update(index.__dict__, _cache=None, _cache_at=-1)
    index.apply([(1, "add", 1, 1, 5, "alpha beta"), (2, "add", 2, 2, (1 << 63) - 1, "alpha gamma")], 2)
    query = index.embed_query("alpha")
    assert [r for r, _ in index.search(query, 10, None)] == [2]
    assert sorted(r for r, _ in index.search(query, 10, 3)) == [1, 2]
    assert [r for r, _ in index.search(query, 10, 1)] == [1]
    assert [r for r, _ in other.search(query, 10, 3)] in ([1, 2], [2, 1])
    index.apply([(3, "remove", 2, 0, 0, "")], 3)
    assert index.search(query, 10, None) == [] and other.search(query, 10, None) == []
    assert index.checkpoint() == 3 and len(index) == 1
    index.apply([(2, "add", 9, 2, 9, "skipped: at or below the checkpoint")], 3)
    assert len(index) == 1
    index.close()


def test_a_write_retried_after_the_map_grows_stores_every_vector(tmp_path: Path) -> None:
    """The storage kit runs a write again when the map was full; the vectors of
    the second run are all there (the first run used them up: StopIteration in
    bench_api's 20k-entry catch-up)."""
    index = VectorIndex(tmp_path / "v", Hashing())
    shared = index._env()
    original = shared.write
    calls = []

    def full_once(fn: Any) -> Any:
        if not calls:
            calls.append(1)
            with shared.operation() as env, env.begin(write=True) as txn:
                fn(txn)
                txn.abort()  # as if the map had been full at the end of the first run
        return original(fn)

    shared.write = full_once  # type: ignore[method-assign]
    index.apply([(1, "add", 1, 1, 5, "alpha beta"), (2, "add", 2, 2, 9, "alpha gamma")], 2)
    assert sorted(index.dump()) == [1, 2] and index.checkpoint() == 2
    index.close()


def test_another_model_clears_the_vectors(tmp_path: Path) -> None:
    """Opening with an embedder of another name drops the vectors and the checkpoint."""
    index = VectorIndex(tmp_path / "v", Hashing())
    index.apply([(1, "add", 1, 1, (1 << 63) - 1, "alpha")], 1)
    index.close()
    again = VectorIndex(tmp_path / "v", Hashing("hashing-other"))
    assert len(again) == 0 and again.checkpoint() == 0 and again.model() == "hashing-other"
    again.close()


def _history(log: EventLog) -> list[str]:
    log.append("session:s", [SessionStarted(session_id="s")], actor="t")
    texts = ["postgres replication lag", "cache eviction policy", "deploy the queue workers"]
    for i, text in enumerate(texts):
        log.append("session:s", [EntryRecorded(entry_id=f"e{i}", kind="message", content=text,
                                               occurred_at=1_700_000_000_000_000 + i, session_id="s")],
                   actor="t")
    return texts


def test_projections_bring_your_own_embedder(tmp_path: Path) -> None:
    """``Projections(embedder=...)`` uses it; a new model rebuilds the vectors on open."""
    with EventLog.open(tmp_path / "log") as log:
        _history(log)
        proj = Projections(tmp_path, log, shards=2, embedder=Hashing())
        try:
            proj.catch_up(search=True)
            assert proj.vectors is not None and len(proj.vectors) == 3
            hits = proj.vectors.search(proj.vectors.embed_query("cache policy"), 1, None)
            assert hits[0][0] == 3  # e1's recorded seq
        finally:
            proj.close()
        proj = Projections(tmp_path, log, shards=2, embedder=StaticEmbedder())
        try:
            assert proj.vectors is not None and len(proj.vectors) == 0
            proj.catch_up(search=True)
            assert len(proj.vectors) == 3 and proj.vectors.model() == proj.embedder.name  # type: ignore[union-attr]
            before = proj.vectors.dump()
            proj.rebuild_vectors()
            assert proj.vectors.dump() == before
        finally:
            proj.close()
        proj = Projections(tmp_path, log, shards=2, embedder=None)
        try:
            assert proj.vectors is None and proj.embedder is None
        finally:
            proj.close()


def test_import_and_text_search_without_numpy(tmp_path: Path) -> None:
    """With numpy missing, importing works, there is no embedder, and text search works."""
    script = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy" or name.startswith("numpy."):
                    raise ImportError("numpy blocked")
                return None
        sys.meta_path.insert(0, Block())
        import projections, commands
        from projections.embed import default_embedder
        assert default_embedder() is None
        from commands import MemoryLog
        with MemoryLog.open({str(tmp_path / "s")!r}) as mem:
            sid = mem.start_session()
            mem.add_message(sid, role="user", content="postgres replication lag")
            assert mem.store.proj.vectors is None
            assert mem.search("postgres", record_access=False)
        assert "numpy" not in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


def test_a_damaged_vector_file_is_rebuilt_on_open(tmp_path: Path) -> None:
    """A truncated vectors file fails the open-time checks; the projections are rebuilt."""
    with EventLog.open(tmp_path / "log") as log:
        _history(log)
        proj = Projections(tmp_path, log, shards=2, embedder=Hashing())
        try:
            proj.catch_up(search=True)
            assert proj.vectors is not None
            before = proj.vectors.dump()
            data = proj.root / "vectors" / "data.mdb"
        finally:
            proj.close()
        with open(data, "r+b") as fh:
            fh.truncate(4096 + 100)
        proj = Projections(tmp_path, log, shards=2, embedder=Hashing())
        try:
            assert proj.root / "vectors" / "data.mdb" != data
            proj.catch_up(search=True)
            assert proj.vectors is not None and proj.vectors.dump() == before
        finally:
            proj.close()


def test_vectors_behind_the_index_catch_up_alone(tmp_path: Path) -> None:
    """Vectors behind the search index (emptied) are not fed the index's pass from
    its own checkpoint: they catch up from theirs, to the same vectors as a replay."""
    with EventLog.open(tmp_path / "log") as log:
        _history(log)
        proj = Projections(tmp_path, log, shards=2, embedder=Hashing())
        try:
            proj.catch_up(search=True)
            assert proj.vectors is not None
            proj.vectors.clear()
            log.append("session:s", [EntryRecorded(entry_id="e9", kind="message", content="late entry",
                                                   occurred_at=1_700_000_000_000_009, session_id="s")],
                       actor="t")
            proj.catch_up(search=True)
            live = proj.vectors.dump()
            assert len(live) == 4
            proj.replay()
            proj.catch_up(search=True)
            assert proj.vectors is not None and proj.vectors.dump() == live
        finally:
            proj.close()
