"""A shard rebuild's second process makes exactly the documents one process makes."""

from __future__ import annotations

from pathlib import Path

import pytest

import projections.search.docs as docs_module
from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from projections.search.docs import entry_docs, shard_docs
from projections.search.docs_worker import DocWorker


def _store(path: Path, count: int = 120) -> MemoryLog:
    mem = MemoryLog.open(path, embedder=None, search_shards=2)
    sid = mem.start_session()
    for i in range(count):
        mem.add_message(sid, role="user", content=f"note {i} about topic{i % 7} and plan{i % 3}")
    mem.proj.catch_up(search=True)
    return mem


def test_split_documents_equal_one_process_documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_module, "SPLIT_FROM", 1)
    made: list[list[str] | None] = []
    real = DocWorker.docs
    monkeypatch.setattr(DocWorker, "docs", lambda self, at: made.append(real(self, at)) or made[-1])
    with _store(tmp_path / "s") as mem:
        index, paths = mem.proj.search_index, mem.proj._worker_paths()
        assert index is not None and paths is not None
        with mem.proj.views.read() as reader:
            for shard in range(2):
                one = list(shard_docs(reader, index, shard))
                split = list(shard_docs(reader, index, shard, paths))
                assert split == one and len(one) > 30
    assert len(made) == 2 and all(made)  # the children made the upper halves


def test_a_worker_of_another_state_or_a_failed_one_gives_nothing(tmp_path: Path) -> None:
    with _store(tmp_path / "s") as mem:
        paths = mem.proj._worker_paths()
        assert paths is not None
        with mem.proj.views.read() as reader:
            checkpoint, expected = reader.checkpoint(), list(entry_docs(reader, 0, 1 << 32))
        worker = DocWorker(*paths, 0, 1 << 32)
        assert worker.docs(checkpoint) == expected
        worker.close()
        other = DocWorker(*paths, 0, 1 << 32)
        assert other.docs(checkpoint + 1) is None  # the views moved on between the two snapshots
        other.close()
        broken = DocWorker(tmp_path / "no-log", tmp_path / "no-views", 0, 1 << 32)
        assert broken.docs(checkpoint) is None
        broken.close()
        assert not (tmp_path / "no-log").exists() and not (tmp_path / "no-views").exists()  # creates nothing


def test_a_rebuild_that_stops_early_stops_its_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_module, "SPLIT_FROM", 1)
    started: list[DocWorker] = []
    real = DocWorker.__init__

    def spy(self: DocWorker, *args: object) -> None:
        real(self, *args)  # type: ignore[arg-type]
        started.append(self)

    monkeypatch.setattr(DocWorker, "__init__", spy)
    with _store(tmp_path / "s", count=400) as mem:
        index, paths = mem.proj.search_index, mem.proj._worker_paths()
        assert index is not None and paths is not None
        with mem.proj.views.read() as reader:
            docs = shard_docs(reader, index, 0, paths)
            next(docs)  # the worker is started, then the consumer gives up
            docs.close()
        assert len(started) == 1 and started[0]._proc.poll() is not None  # stopped and reaped


def test_a_purge_with_a_split_rebuild_leaves_no_byte_and_keeps_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_module, "SPLIT_FROM", 1)
    with _store(tmp_path / "s") as mem:
        secret = "the vault combination is 31-41-59-26"
        sid = mem.start_session()
        victim = mem.add_message(sid, role="user", content=secret)
        report = mem.delete(ids=[victim], reason="test", requested_by="t")
        assert report.verified
        assert len(mem.search("topic3 plan1", limit=100, record_access=False)) > 3
        assert not mem.search("vault combination", record_access=False)
    found, _ = scan_tree(tmp_path / "s", [secret.encode()])
    assert not found
