"""Compaction (seed 000): a session past 90% of its limit keeps its most relevant
80% of bytes and folds the rest into a summary that names its sources."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from commands import MemoryLog
from eventstore import SessionCompacted

from .conftest import Run, head_of

LIMIT = 16384  # bytes: small, so a test session passes it in a few dozen entries
HOUR = 3_600_000_000
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[MemoryLog]:
    with MemoryLog.open(tmp_path / "m", embedder=None, session_limit_bytes=LIMIT,
                        auto_summarise=False) as m:
        yield m


def _message(i: int) -> str:
    return (f"note {i:03d} on the cache warmup and the ledger replication lag we measured today. "
            + " ".join(f"detail{i}x{j} about the replica in rack {j}." for j in range(8)))


def _compactions(mem: MemoryLog) -> list[SessionCompacted]:
    return [r.event for r in mem.log.read() if isinstance(r.event, SessionCompacted)]


def test_a_session_past_its_limit_compacts_to_the_policy(mem: MemoryLog) -> None:
    """Written past 90% of the limit, the session compacts by itself: at most 80%
    of its bytes stay (plus the summary), the least relevant go, the summary
    names them in derived_from, and session.compacted records it all."""
    sid = mem.start_session(user_id="alice")
    decision = mem.record_decision(sid, decision="Adopt PostgreSQL with synchronous replicas for the ledger.",
                                   impact="high", occurred_at=T0)
    ids = [mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + (i + 1) * HOUR)
           for i in range(60)]
    found = _compactions(mem)
    assert found, "the session passed 90% of its limit and did not compact"
    first = found[0]
    assert first.session_id == sid and first.policy == "relevance keep=0.8 at=0.9 limit=16384"
    assert first.bytes_before >= int(LIMIT * 0.9)
    summary = mem.show(first.summary_entry_id or "")
    assert summary.type == "summary" and summary.state == "live"
    kept_bytes = first.bytes_after - len(summary.content.encode())
    assert kept_bytes <= int(first.bytes_before * 0.8)
    assert set(summary.derived_from) == set(first.removed_entry_ids)
    # equal-sized messages: the oldest (least decayed) go first; the high-impact decision stays
    assert decision not in first.removed_entry_ids
    removed = [i for i in ids if i in first.removed_entry_ids]
    assert removed == ids[: len(removed)]
    assert all(mem.show(i).state == "compacted" for i in removed)
    assert mem.session(sid).statistics["size_bytes"] < LIMIT


def test_compacted_entries_leave_search_and_the_context_shows_the_summary(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    for i in range(60):
        mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
    first = _compactions(mem)[0]
    gone = first.removed_entry_ids[0]
    hits = {h.id for h in mem.search("note cache warmup", session_id=sid, limit=100, record_access=False)}
    assert gone not in hits and hits
    block = mem.context(sid, budget_tokens=4000)
    assert "summary" in [s.name for s in block.sections]
    history = mem.history(gone)
    assert any(h.type == "session.compacted" and first.summary_entry_id in h.what for h in history)
    assert any(h.type == "session.compacted" for h in mem.history(first.summary_entry_id or ""))


def test_dry_run_writes_nothing_and_on_demand_compacts_one_session(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None, auto_compact=False, auto_summarise=False) as mem:
        sid = mem.start_session()
        for i in range(20):
            mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
        head = mem.log.head().seq
        assert mem.compact() == []  # nothing is near 10 MB
        dry = mem.compact(sid, dry_run=True)[0]
        assert mem.log.head().seq == head and not dry.compacted and dry.removed_ids
        done = mem.compact(sid)[0]
        assert done.compacted and done.removed_ids == dry.removed_ids and done.summary_id
        assert mem.session(sid).statistics["size_bytes"] == done.bytes_after


def test_a_plugged_in_summariser_writes_the_summary(tmp_path: Path) -> None:
    calls: list[int] = []

    def count(texts: Sequence[str]) -> str:
        calls.append(len(texts))
        return f"{len(texts)} notes were folded here"

    with MemoryLog.open(tmp_path / "m", embedder=None, auto_compact=False, summariser=count) as mem:
        sid = mem.start_session()
        for i in range(10):
            mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
        report = mem.compact(sid)[0]
        assert mem.show(report.summary_id or "").content == f"{calls[0]} notes were folded here"
        assert calls == [len(report.removed_ids)]


def test_replay_gives_the_same_compacted_state(mem: MemoryLog) -> None:
    sid = mem.start_session()
    for i in range(60):
        mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
    before = (mem.session(sid).statistics, mem.context(sid).text)
    mem.replay()
    assert (mem.session(sid).statistics, mem.context(sid).text) == before


def test_cli_compact(run: Run, store: Path) -> None:
    with MemoryLog.open(store, embedder=None, auto_compact=False) as mem:
        sid = mem.start_session(user_id="alice")
        for i in range(60):
            mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
    (store / "config.toml").write_text(f"session_limit_bytes = {LIMIT}\n")
    head = head_of(store)
    code, out, err = run("compact", "--dry-run")
    assert code == 0, err
    assert [s["session_id"] for s in out["sessions"]] == [sid] and head_of(store) == head
    code, out, err = run("--read-only", "compact")
    assert code == 4 and "E_READ_ONLY" in err and head_of(store) == head
    code, out, err = run("compact")
    assert code == 0, err
    report = out["sessions"][0]
    assert report["compacted"] and report["bytes_after"] < report["bytes_before"] and report["summary_id"]
    code, out, _ = run("audit", "history", report["removed_ids"][0])
    assert any(item["type"] == "session.compacted" for item in out)
    code, out, _ = run("compact")  # still over its threshold: compacts again from where it stopped
    assert all(s["bytes_before"] == report["bytes_after"] for s in out["sessions"])


def test_deleting_a_compacted_source_erases_the_summary_and_writes_it_again(tmp_path: Path) -> None:
    """Erasure follows derivation for compaction summaries too: the byte scan
    finds neither the source's words nor the old summary's text; the new
    summary names the other removed entries."""
    secret = "zq" + "5e1f0c3b9a7d2e4f6a8c"
    root = tmp_path / "m"
    def verbatim(texts: Sequence[str]) -> str:  # every source's text, so the summary holds the secret
        return " ".join(texts)

    with MemoryLog.open(root, auto_compact=False, auto_summarise=False, summariser=verbatim) as mem:
        sid = mem.start_session(user_id="alice")
        first = mem.add_message(sid, role="user", occurred_at=T0,
                                content=f"The vault passphrase hint is {secret} for the ledger keys.")
        for i in range(1, 12):
            mem.add_message(sid, role="user", content=_message(i), occurred_at=T0 + i * HOUR)
        done = mem.compact(sid)[0]
        assert first in done.removed_ids and done.summary_id
        old_text = mem.show(done.summary_id).content
        assert secret in old_text
        report = mem.delete(ids=[first], reason="erasure request", requested_by="dpo")
        assert done.summary_id in report.ids and report.verified
        again = [h for h in mem.history(done.summary_id) if h.type == "summary.resummarised"]
        assert again
        new = mem.show(again[0].what.split(" as ")[1].split()[0])
        assert set(new.derived_from) == set(done.removed_ids) - {first} and secret not in new.content
    from commands.app.forgetting.scan import scan_tree

    assert scan_tree(root, [secret.encode(), old_text.encode()])[0] == {}
