"""Erasure covers vectors: after a delete and its purge, no vector of the deleted
entry (nor its text) is anywhere under the data directory."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

pytest.importorskip("numpy")

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree


def _vector_bytes(mem: MemoryLog, entry_id: str) -> bytes:
    """The stored vector (float16 bytes) of an entry's current document."""
    store = mem.store
    store.proj.catch_up(search=True)
    with store.read() as views:
        view = views.entry(entry_id)
    assert view is not None and store.proj.vectors is not None
    return store.proj.vectors.dump()[view.recorded_seq][2]


def test_no_vector_of_a_deleted_entry_remains(tmp_path: Path) -> None:
    """The deleted entry's vector bytes (as stored) and its text are found in no file after the purge."""
    root = tmp_path / "store"
    secret = f"the vault code word is zq{secrets.token_hex(8)} and the harbour opens at dawn"
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        sid = mem.start_session(user_id="alice")
        with mem.batch():
            for i in range(300):
                mem.add_message(sid, role="user", content=f"routine note {i} about caches and queues")
        target = mem.add_message(sid, role="user", content=secret)
        kept = mem.add_message(sid, role="user", content="the harbour closes at dusk on sundays")
        vector = _vector_bytes(mem, target)
        kept_vector = _vector_bytes(mem, kept)
        assert scan_tree(root, [vector])[0], "the vector is stored verbatim before the delete"
        report = mem.delete(ids=[target], reason="test", requested_by="dpo")
        assert report.verified
        assert any("/vectors/part-" in f for f in report.files_rewritten)
        assert any("of their vectors" in c for c in report.checks)
        assert mem.store.proj.vectors is not None
        assert len(mem.store.proj.vectors) == 301
    assert not scan_tree(root, [vector])[0]
    assert not scan_tree(root, [secret.encode()])[0]
    assert scan_tree(root, [kept_vector])[0], "a live entry keeps its vector"


def test_deleting_removes_the_vector_before_the_purge(tmp_path: Path) -> None:
    """A deferred delete already takes the vector out of semantic search and the store."""
    with MemoryLog.open(tmp_path / "s", redact_on_ingest=False) as mem:
        sid = mem.start_session()
        target = mem.add_message(sid, role="user", content="an orchard of plum trees by the river")
        mem.add_message(sid, role="user", content="the deployment pipeline failed twice")
        proj = mem.store.proj
        proj.catch_up(search=True)
        assert proj.vectors is not None and proj.embedder is not None
        assert len(proj.vectors) == 2
        mem.delete(ids=[target], reason="test", requested_by="dpo", defer=True)
        proj.catch_up(search=True)
        assert len(proj.vectors) == 1
        query = proj.embedder.embed(["plum orchard river"])[0]
        with mem.store.read() as views:
            view = views.entry(target)
        assert view is None or view.recorded_seq not in {r for r, _ in proj.vectors.search(query, 10, None)}


def test_semantic_off_keeps_no_vectors(tmp_path: Path) -> None:
    """``semantic=False`` (or ``embedder=None``): no vector projection at all."""
    with MemoryLog.open(tmp_path / "s", semantic=False) as mem:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="nothing to embed here")
        assert mem.store.proj.vectors is None and mem.store.proj.embedder is None
        assert mem.search("embed", record_access=False)
    assert not (mem.store.proj.root / "vectors").exists()


def test_a_purge_without_a_model_empties_the_vectors(tmp_path: Path) -> None:
    """A process with no embedder cannot remove one vector, so its purge empties
    them all (no vector of the deleted entry remains); a process with one rebuilds them."""
    root = tmp_path / "store"
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        sid = mem.start_session()
        target = mem.add_message(sid, role="user", content="a lighthouse keeper counts the passing ships")
        mem.add_message(sid, role="user", content="the build cache must be warmed before release")
        vector = _vector_bytes(mem, target)
    with MemoryLog.open(root, embedder=None) as mem:
        report = mem.delete(ids=[target], reason="test", requested_by="dpo")
        assert report.verified and any("/vectors/part-" in f for f in report.files_rewritten)
    assert not scan_tree(root, [vector])[0]
    with MemoryLog.open(root) as mem:
        mem.store.proj.catch_up(search=True)
        assert mem.store.proj.vectors is not None and len(mem.store.proj.vectors) == 1


def test_a_delete_rewrites_only_the_partition_that_lost_the_vector(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With partitions of 64 seqs, a delete rewrites the one partition of the
    deleted entry's vector; the purge's scan still finds nothing, and a
    partition's leftover compacting copy is reported by ``leftovers``."""
    from commands.app.forgetting.purging import leftovers
    from projections.embed import parts

    monkeypatch.setattr(parts, "PART_SPAN", 64)
    root = tmp_path / "store"
    secret = f"the orchard gate code is zq{secrets.token_hex(8)}"
    with MemoryLog.open(root, redact_on_ingest=False) as mem:
        sid = mem.start_session()
        with mem.batch():
            for i in range(200):
                mem.add_message(sid, role="user", content=f"routine note {i} about caches and queues")
        target = mem.add_message(sid, role="user", content=secret)
        with mem.batch():
            for i in range(100):
                mem.add_message(sid, role="user", content=f"later note {i} about builds")
        vector = _vector_bytes(mem, target)
        proj = mem.store.proj
        assert proj.vectors is not None and len(proj.vectors.parts.existing()) >= 4
        with mem.store.read() as views:
            view = views.entry(target)
        assert view is not None
        report = mem.delete(ids=[target], reason="test", requested_by="dpo")
        assert report.verified
        rewritten = [f for f in report.files_rewritten if "/vectors/" in f]
        part = f"vectors/part-{view.recorded_seq // 64:06d}/data.mdb"
        assert len(rewritten) == 1 and rewritten[0].endswith(part)
        scratch = proj.root / "vectors" / "part-000000" / ".compact-0a1b2c"
        scratch.mkdir()
        assert f"{proj.root.name}/vectors/part-000000/.compact-0a1b2c" in leftovers(root, proj.root.name)
        scratch.rmdir()
    assert not scan_tree(root, [vector])[0]
    assert not scan_tree(root, [secret.encode()])[0]
