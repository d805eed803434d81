"""What the per-search savings must not change: an entries search
drops memory documents after the search (and asks a shard again when they
crowd out the entries), and the search cache (payloads and views) never
serves a text that a redaction or a deletion took away, in this process or
in another store on the same directory."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from commands import MemoryLog
from commands.app.recall.search import find, make_query
from eventstore import now_micros


def _contents(mem: MemoryLog, text: str, as_of: int | None = None, **kw: object) -> list[str]:
    return [r.content for r in find(mem.store, make_query(text, mode="text", **kw), as_of=as_of)]  # type: ignore[arg-type]


def test_entries_are_found_behind_many_better_scored_memories(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", record_access=False) as mem:
        for i in range(60):  # short memory documents: each outscores the long entries
            mem.remember("alice", f"k{i}", "zebra")
        sid = mem.start_session(user_id="alice")
        long = " ".join(["filler words of a long message"] * 8)
        entries = [mem.add_message(sid, role="user", content=f"zebra {i} {long}") for i in range(3)]
        found = [r.id for r in find(mem.store, make_query("zebra", mode="text", limit=10))]
        assert sorted(found) == sorted(entries)
        assert len(_contents(mem, "zebra", source="memories", limit=100)) == 60
        assert len(_contents(mem, "zebra", source="both", limit=100)) == 63


def test_the_payload_cache_never_serves_a_redacted_or_deleted_text(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with MemoryLog.open(path, record_access=False) as mem, MemoryLog.open(path, record_access=False) as other:
        sid = mem.start_session()
        secret = mem.add_message(sid, role="user", content="mail zorblax about the quokka")
        gone = mem.add_message(sid, role="user", content="the quokka password is hunter2")
        before = mem.log.head().seq
        for store in (mem, other):  # both stores cache the payloads
            assert len(_contents(store, "quokka")) == 2
        mem.redact(secret, regex="zorblax", reason="test", requested_by="t")
        mem.delete(ids=[gone], reason="test", requested_by="t")
        for store in (mem, other):
            found = _contents(store, "quokka")
            assert len(found) == 1 and "zorblax" not in found[0]
            past = _contents(store, "quokka", as_of=before)
            assert all("zorblax" not in c and "hunter2" not in c for c in past)


def test_the_view_cache_serves_an_entry_as_its_latest_change_left_it(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with MemoryLog.open(path, record_access=False) as mem, MemoryLog.open(path, record_access=False) as other:
        sid = mem.start_session()
        task = mem.add_task(sid, content="water the quokka garden")
        stores = (mem, other)

        def done_of(store: MemoryLog) -> list[bool]:
            ranking = store.store.proj.search(make_query("quokka", mode="text"), now=now_micros())
            return [r.view.entry.details.done for r in ranking.entries]  # type: ignore[union-attr]

        assert [done_of(s) for s in stores] == [[False], [False]]  # both stores cache the view
        mem.complete_task(task)
        assert [done_of(s) for s in stores] == [[True], [True]]
        mem.complete_task(task, done=False)  # open again: a third version, with bytes of its own
        assert [done_of(s) for s in stores] == [[False], [False]]
        assert all(s.store.proj.search_cache.memo.rows for s in stores)  # both searched through the memo


@contextlib.contextmanager
def _two_stores(tmp_path: Path) -> Iterator[tuple[MemoryLog, MemoryLog, str]]:
    """Two stores on one directory; the first holds two quokka messages, the
    second of which (its id yielded) names zorblax."""
    path = tmp_path / "s"
    with MemoryLog.open(path, record_access=False) as mem, MemoryLog.open(path, record_access=False) as other:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="the quokka sleeps")
        yield mem, other, mem.add_message(sid, role="user", content="the quokka is called zorblax")


def test_a_deletion_by_another_store_empties_this_stores_cache(tmp_path: Path) -> None:
    with _two_stores(tmp_path) as (mem, other, gone):
        cache = other.store.proj.search_cache

        def kept() -> str:
            return repr((cache.events, cache.memo.rows))

        assert len(_contents(other, "quokka")) == 2 and "zorblax" in kept()
        mem.delete(ids=[gone], reason="test", requested_by="t")  # purged by mem, not by other
        assert len(_contents(other, "quokka")) == 1
        assert "zorblax" not in kept()


def test_a_held_snapshot_never_serves_what_a_later_deletion_erased(tmp_path: Path) -> None:
    with _two_stores(tmp_path) as (mem, other, gone):
        proj = other.store.proj
        with proj.read(None, search=True) as held:  # as the context builder holds one
            found = find(other.store, make_query("quokka", mode="text"), reader=held)
            assert any("zorblax" in r.content for r in found)  # now cached in other's process
            # Deferred: the tombstone erases the payloads at once; the purge, which
            # would wait for the held snapshot's shared lock, comes later.
            mem.delete(ids=[gone], reason="test", requested_by="t", defer=True)
            found = find(other.store, make_query("quokka", mode="text"), reader=held)
            assert [r.content for r in found] == ["the quokka sleeps"]
