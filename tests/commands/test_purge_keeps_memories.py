"""A purge rebuilds the search shards that held deleted entries; the saved
memories those shards also hold must come back with them (they used to vanish
from search until the next replay)."""

from __future__ import annotations

from pathlib import Path

from commands import MemoryLog


def test_a_deletion_leaves_every_memory_searchable(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        for i in range(40):  # spread over the shards
            mem.remember("alice", f"k{i}", f"alice likes zebra{i} stripes")
        mem.remember("alice", "k0", "alice likes plain zebra0 stripes now")  # a second version
        ids = [mem.add_message(sid, role="user", content=f"message {i} about boats") for i in range(40)]
        point = mem.log.head().seq

        def found(**kw: object) -> set[str]:
            return {h.content for h in mem.search("stripes", user_id="alice", source="memories", limit=100,
                                                  record_access=False, **kw)}  # type: ignore[arg-type]

        before = found()
        report = mem.delete(ids=ids, reason="test", requested_by="t")
        assert report.verified and len(before) == 40
        assert found() == before
        then = mem.as_of(f"@{point}")
        past = {h.content for h in then.search("stripes", user_id="alice", source="memories", limit=100)}
        assert past == before
