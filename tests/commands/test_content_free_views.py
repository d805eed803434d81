"""The views hold no entry content: entries are read back from the log payloads.

The markers are random, several words long and upper case: the search index
holds single lower-cased words by design (never the text as stored), so neither
it nor the views can hold a marker whole; the views hold none of its words.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree


def marker() -> str:
    """A unique >= 32-byte text that the tokenizer splits and lower-cases."""
    return f"Mark {secrets.token_hex(8).upper()} Q {secrets.token_hex(8).upper()}"


def words(text: str) -> list[bytes]:
    """The random words of a marker, as stored and lower-cased."""
    parts = [w for w in text.split() if len(w) == 16]
    return [p.encode() for p in parts] + [p.lower().encode() for p in parts]


def unique(text: str) -> str:
    """The first random word of a marker (no other entry holds it)."""
    return text.split()[1].lower()


def files_with(root: Path, needles: list[bytes]) -> set[str]:
    """Files under ``root`` holding any of ``needles``."""
    return set(scan_tree(root, needles)[0])


class Recorded:
    """A store with a marked message and a marked finding (content and details)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.msg, self.evidence, self.recommendation = marker(), marker(), marker()
        with MemoryLog.open(root, redact_on_ingest=False) as mem:
            sid = mem.start_session(user_id="alice")
            self.filler = [mem.add_message(sid, role="user", content=f"routine note {i} about caches")
                           for i in range(20)]
            self.message = mem.add_message(sid, role="user", content=f"please keep {self.msg} safe")
            self.finding = mem.record_finding(sid, description="a leaked token in the build log",
                                              severity="high", evidence=f"line 12 shows {self.evidence}",
                                              recommendation=f"rotate {self.recommendation} now")
            self.seq = mem.log.head().seq
            mem.proj.catch_up(search=True)

    @property
    def proj_root(self) -> Path:
        return self.root / os.readlink(self.root / "proj")

    def needles(self) -> list[bytes]:
        return [m.encode() for m in (self.msg, self.evidence, self.recommendation)]


def test_no_projection_file_holds_entry_content(tmp_path: Path) -> None:
    """After catching up, the log holds the markers and no projection file does."""
    store = Recorded(tmp_path / "store")
    assert all(files_with(store.root / "log", [n]) for n in store.needles())
    assert files_with(store.proj_root, store.needles()) == set()
    marker_words = [w for m in (store.msg, store.evidence, store.recommendation) for w in words(m)]
    assert files_with(store.proj_root / "views", marker_words) == set()
    assert list((store.proj_root / "search").rglob("*"))  # the index is there, and was scanned


def test_reads_still_return_the_content(tmp_path: Path) -> None:
    """show, search and as-of reads fill the entry in from the log."""
    store = Recorded(tmp_path / "store")
    with MemoryLog.open(store.root) as mem:
        shown = mem.show(store.message)
        assert shown.content == f"please keep {store.msg} safe"
        finding = mem.show(store.finding)
        assert finding.details["evidence"] == f"line 12 shows {store.evidence}"  # type: ignore[union-attr]
        hits = mem.search(unique(store.msg), record_access=False, mode="text")
        assert [h.id for h in hits] == [store.message] and store.msg in hits[0].content
        point = mem.as_of(store.seq)
        assert point.show(store.message).content == shown.content
        assert [h.content for h in point.search(unique(store.msg), mode="text")] == [shown.content]
        assert point.session(shown.session_id).statistics == mem.session(shown.session_id).statistics  # type: ignore[arg-type, union-attr]
        found = mem.search(unique(store.evidence), record_access=False, mode="text")
        assert [h.id for h in found] == [store.finding]


def test_an_entry_deletion_leaves_the_views_file_alone(tmp_path: Path) -> None:
    """Deleting entries rebuilds their search shard but not the views (they hold no
    content); the markers are still gone from every file under the data directory."""
    store = Recorded(tmp_path / "store")
    views = store.proj_root / "views" / "data.mdb"
    inode = views.stat().st_ino
    with MemoryLog.open(store.root) as mem:
        report = mem.delete(ids=[store.message, store.finding], reason="test", requested_by="t")
        assert report.verified
        assert report.seconds["views_compact_s"] == 0
        assert not any(f.endswith(os.path.join("views", "data.mdb")) for f in report.files_rewritten)
        assert mem.show(store.message).state == "deleted"
        assert mem.show(store.filler[3]).content == "routine note 3 about caches"
    assert views.stat().st_ino == inode
    assert files_with(store.root, store.needles()) == set()


def test_a_memory_deletion_still_compacts_the_views(tmp_path: Path) -> None:
    """Memory values live in the views, so deleting one rewrites the views file."""
    store = Recorded(tmp_path / "store")
    secret = marker()
    with MemoryLog.open(store.root) as mem:
        mem.remember("alice", "secret_word", f"remember {secret}")
        mem.proj.catch_up(search=True)
        views = store.proj_root / "views" / "data.mdb"
        inode = views.stat().st_ino
        report = mem.forget("alice", "secret_word")
        assert report.verified and report.seconds["views_compact_s"] > 0
    assert views.stat().st_ino != inode
    assert files_with(store.root, [secret.encode()]) == set()


def test_a_deferred_purge_compacts_the_views_only_for_memories_or_sessions(tmp_path: Path) -> None:
    """``purge`` asks for the views' compaction from the pending requests' kinds."""
    store = Recorded(tmp_path / "store")
    views = store.proj_root / "views" / "data.mdb"
    with MemoryLog.open(store.root) as mem:
        mem.delete(ids=[store.message], reason="test", requested_by="t", defer=True)
        inode = views.stat().st_ino
        report = mem.purge()
        assert report is not None and report.verified and report.seconds["views_compact_s"] == 0
        assert views.stat().st_ino == inode
        sid = mem.start_session(user_id="bob", metadata={"note": "private"})
        mem.delete(session_id=sid, reason="test", requested_by="t", defer=True)
        report = mem.purge()
        assert report is not None and report.seconds["views_compact_s"] > 0
        assert views.stat().st_ino != inode
