"""User memories are documents of the search index (Contract 1): found with
``source`` memories or both, replaced by a later save of the same key (the old
version stays findable as of its interval), gone after a forget, whose purge
rewrites the memory's shard."""

from __future__ import annotations

from pathlib import Path

from commands import MemoryLog
from commands.app.recall.search import find, make_query
from projections import Scope


def _ids(mem: MemoryLog, text: str, **kw: object) -> list[tuple[str, str]]:
    return [(r.type, r.content) for r in find(mem.store, make_query(text, **kw))]  # type: ignore[arg-type]


def test_memories_are_searchable_by_source(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="we should use postgres for the ledger")
        mem.remember("alice", "database", "alice prefers postgres over mysql")
        assert _ids(mem, "postgres") == [("message", "we should use postgres for the ledger")]
        assert _ids(mem, "postgres", source="memories") == [("memory", "alice prefers postgres over mysql")]
        assert {t for t, _ in _ids(mem, "postgres", source="both")} == {"message", "memory"}
        assert _ids(mem, "database", source="memories") == [("memory", "alice prefers postgres over mysql")]
        assert _ids(mem, "", source="memories") == [("memory", "alice prefers postgres over mysql")]


def test_a_memory_is_visible_to_its_user_only(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s") as mem:
        mem.remember("alice", "editor", "alice uses vim")
        mem.remember("bob", "editor", "bob uses emacs")
        assert _ids(mem, "uses", source="memories", scope=Scope(user_id="alice")) == [
            ("memory", "alice uses vim")]
        assert _ids(mem, "uses", source="memories", scope=Scope(session_ids=("s1",))) == []


def test_a_later_save_replaces_and_as_of_finds_the_old(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s") as mem:
        mem.remember("alice", "response_style", "answer tersely please")
        first = mem.log.head().seq
        mem.remember("alice", "response_style", "answer in detail please")
        assert _ids(mem, "answer please", source="memories") == [("memory", "answer in detail please")]
        old = [r.content for r in find(mem.store, make_query("answer", source="memories"), as_of=first)]
        assert old == ["answer tersely please"]


def test_a_forget_removes_the_memory_and_rewrites_its_shard(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s") as mem:
        mem.remember("alice", "pet", "a cat named zanzibar")
        mem.remember("alice", "pet", "a dog named quixote")
        assert _ids(mem, "quixote", source="memories")
        mem.forget("alice", "pet")
        assert _ids(mem, "zanzibar quixote", source="both") == []
        index = mem.proj.search_index
        assert index is not None
        # Not even a deleted document's term is left in any shard.
        assert index.doc_freq("zanzibar") == 0 and index.doc_freq("quixot") == 0
