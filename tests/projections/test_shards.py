"""Search shards: crc32-range assignment, shard rebuilds, and outdated layouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from commands import MemoryLog
from projections.runner import LAYOUT
from projections.search import index as search_index


def _store(path: Path, shards: int, count: int) -> tuple[MemoryLog, list[str]]:
    mem = MemoryLog.open(path, search_shards=shards)
    sid = mem.start_session()
    ids = [mem.add_message(sid, role="user", content=f"note tok{i}x about topic{i % 7}")
           for i in range(count)]
    return mem, ids


def test_a_purge_rebuilds_one_shard_with_all_its_other_entries(tmp_path: Path) -> None:
    """After a deletion rebuilds the victim's shard, every other entry is still found."""
    mem, ids = _store(tmp_path / "s", shards=3, count=60)
    with mem:
        index = mem.proj.search_index
        assert index is not None
        assert {index.shard_of(eid) for eid in ids} == {0, 1, 2}
        victim = ids[17]
        report = mem.delete(ids=[victim], reason="test", requested_by="t")
        assert report.verified
        for i, eid in enumerate(ids):
            hits = [h.id for h in mem.search(f"tok{i}x", record_access=False, mode="text")]
            if eid == victim:
                assert victim not in hits  # (its word now matches others fuzzily)
            else:
                assert hits == [eid]


def test_projections_of_an_older_layout_are_rebuilt_on_open(tmp_path: Path) -> None:
    """A projection directory without the current layout mark is replayed, not trusted."""
    mem, ids = _store(tmp_path / "s", shards=2, count=20)
    with mem:
        old = os.readlink(tmp_path / "s" / "proj")
    (tmp_path / "s" / old / "layout").unlink()
    with MemoryLog.open(tmp_path / "s", search_shards=2) as mem:
        new = os.readlink(tmp_path / "s" / "proj")
        assert new != old
        assert (tmp_path / "s" / new / "layout").read_text().strip() == f"{LAYOUT} shards=2"
        assert [h.id for h in mem.search("tok5x", record_access=False, mode="text")] == [ids[5]]
        assert not (tmp_path / "s" / old).exists()
    with MemoryLog.open(tmp_path / "s", search_shards=3) as mem:  # another shard count
        assert os.readlink(tmp_path / "s" / "proj") != new
        assert [h.id for h in mem.search("tok5x", record_access=False, mode="text")] == [ids[5]]


def test_a_rebuild_by_another_store_is_noticed_through_the_relink_mark(tmp_path: Path) -> None:
    """A second store on the same directory (as another process would) reopens the
    shard another store rebuilt, from the relink mark, and finds every entry."""
    mem, ids = _store(tmp_path / "s", shards=3, count=30)
    with mem, MemoryLog.open(tmp_path / "s", search_shards=3) as other:
        assert [h.id for h in other.search("tok7x", record_access=False, mode="text")] == [ids[7]]
        index = other.proj.search_index
        assert index is not None
        before = [shard.target for shard in index.shards]
        victim = ids[11]
        assert mem.delete(ids=[victim], reason="test", requested_by="t").verified
        for i, eid in enumerate(ids):
            if eid != victim:
                assert [h.id for h in other.search(f"tok{i}x", record_access=False, mode="text")] == [eid]
        moved = [n for n, shard in enumerate(index.shards) if shard.target != before[n]]
        assert moved == [index.shard_of(victim)]


def test_shards_searched_in_threads_give_what_one_thread_gives(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The threaded search (each thread a share of the shards) keeps the shards'
    order and finds what the serial search finds, on any shard count."""
    mem, _ = _store(tmp_path / "s", shards=5, count=40)
    with mem:
        queries = ["note", "topic3", "tok7x about", "topic1 topic2"]
        monkeypatch.setattr(search_index, "_PARALLEL_DOCS", 1 << 40)
        serial = [[h.id for h in mem.search(q, record_access=False, mode="text", limit=30)]
                  for q in queries]
        index = mem.proj.search_index
        assert index is not None
        searchers = index.searchers()
        order = index.map_searchers(lambda s: s.num_docs, searchers)
        monkeypatch.setattr(search_index, "_PARALLEL_DOCS", 0)
        monkeypatch.setattr(search_index, "_CPUS", 2)
        assert index.map_searchers(lambda s: s.num_docs, searchers) == order
        assert [[h.id for h in mem.search(q, record_access=False, mode="text", limit=30)]
                for q in queries] == serial
        assert len(serial[0]) == 30 and len(set(order)) > 1
