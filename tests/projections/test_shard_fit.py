"""The search shard count fits the store: one shard for a small
store, more as the log grows, refitted by a replay so results, as-of searches
and purges stay what they were; an older 16-shard directory still opens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import projections.search.fit as search_fit
from commands import MemoryLog
from commands.app.recall.search import find, make_query
from projections.runner import LAYOUT, Projections
from projections.search.fit import MOST_SHARDS, ONE_PASS_EVENTS, SHARD_EVENTS, search_passes, shards_for


def _layout(path: Path) -> str:
    return (path / os.readlink(path / "proj") / "layout").read_text().strip()


def _hits(mem: MemoryLog, text: str, as_of: int | None = None, **kw: object) -> list[str]:
    return [r.id for r in find(mem.store, make_query(text, mode="text", **kw), as_of=as_of)]  # type: ignore[arg-type]


def test_the_rule_is_one_shard_per_block_of_events_in_powers_of_two() -> None:
    assert [shards_for(n) for n in (0, 1, SHARD_EVENTS)] == [1, 1, 1]
    assert [shards_for(SHARD_EVENTS + 1), shards_for(3 * SHARD_EVENTS)] == [2, 4]
    assert shards_for(1_000_000) == MOST_SHARDS == 32 and shards_for(10**9) == 32
    assert shards_for(10**9, most=4) == 4


def test_a_new_store_has_one_shard_and_a_fixed_count_stays_fixed(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "a", record_access=False) as mem:
        mem.add_message(mem.start_session(), role="user", content="alpha beta")
        assert _hits(mem, "alpha")
        assert mem.proj.search_index is not None and len(mem.proj.search_index.shards) == 1
    assert _layout(tmp_path / "a") == f"{LAYOUT} shards=1"
    with MemoryLog.open(tmp_path / "b", search_shards=3, record_access=False) as mem:
        mem.add_message(mem.start_session(), role="user", content="alpha beta")
        assert _hits(mem, "alpha")
    assert _layout(tmp_path / "b") == f"{LAYOUT} shards=3"


def test_an_older_16_shard_store_opens_and_is_refitted_with_the_same_results(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with MemoryLog.open(path, search_shards=16, record_access=False) as mem:
        sid = mem.start_session()
        ids = [mem.add_message(sid, role="user", content=f"note tok{i}x topic{i % 5}") for i in range(40)]
        first = mem.log.head().seq
        mem.add_message(sid, role="user", content="note tok3x later")
        before = [_hits(mem, f"topic{i}") for i in range(5)] + [_hits(mem, "tok3x", as_of=first)]
        old = os.readlink(path / "proj")
    with MemoryLog.open(path, record_access=False) as mem:  # the default: fitted
        assert os.readlink(path / "proj") == old  # opened as it is
        assert [_hits(mem, f"topic{i}") for i in range(5)] == before[:5]  # a search never refits
        assert os.readlink(path / "proj") == old and mem.proj.refit_due()
        assert mem.proj.refit() and not mem.proj.refit()  # as memlog maintain does; then nothing is due
        after = [_hits(mem, f"topic{i}") for i in range(5)] + [_hits(mem, "tok3x", as_of=first)]
        assert os.readlink(path / "proj") != old
        assert mem.proj.search_index is not None and len(mem.proj.search_index.shards) == 1
    # (Every match is a candidate here: past the candidate depth, ties may
    # differ between shard counts; live and replay always share the count.)
    assert after == before and before[-1] == [ids[3]]
    assert _layout(path) == f"{LAYOUT} shards=1" and not (path / old).exists()


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(search_fit, "SHARD_EVENTS", 16)
    return 16


def test_a_growing_store_gets_more_shards_and_keeps_results_and_purges(tmp_path: Path,
                                                                        small_blocks: int) -> None:
    path = tmp_path / "s"
    with MemoryLog.open(path, record_access=False) as mem:
        sid = mem.start_session()
        ids: list[str] = []
        counts = []
        for i in range(70):
            ids.append(mem.add_message(sid, role="user", content=f"entry tok{i}x group{i % 4}"))
            if i % 10 == 9:
                mem.proj.refit()  # as memlog maintain does
                assert _hits(mem, f"tok{i}x") == [ids[i]]
                assert mem.proj.search_index is not None
                counts.append(len(mem.proj.search_index.shards))
        assert counts == sorted(counts) and counts[0] == 1 and counts[-1] == 8
        mem.remember("alice", "pet", "a cat named zanzibar")
        victim = ids[11]
        report = mem.delete(ids=[victim], reason="test", requested_by="t")
        assert report.verified
        assert victim not in _hits(mem, "tok11x") and _hits(mem, "zanzibar", source="memories")
        queries = [f"group{g} entry" for g in range(4)] + [f"tok{i}x" for i in range(0, 70, 7)]
        # limit 100: every match (at most 70) is a hit, so no tie sits at the cut.
        live = [_hits(mem, q, limit=100) for q in queries]
        assert all(victim not in hits for hits in live)
        mem.proj.replay()  # live finds what a replay at the same shard count finds
        # The same entries, not always in the same order. The entries that match
        # one word only tie on the text score; with a limit of 50 those ties sat
        # at the cut, and which of them made it varied on a busy machine (a full
        # suite failed here at the fourth and fifth stops of 2026-11-24; the
        # order of the ties is left open). With every match a hit, live and
        # replay must find the same entries.
        assert [sorted(_hits(mem, q, limit=100)) for q in queries] == [sorted(h) for h in live]


def test_a_purge_keeps_the_memories_of_the_shard_it_rebuilds(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", record_access=False) as mem:
        sid = mem.start_session(user_id="alice")
        victim = mem.add_message(sid, role="user", content="we should use postgres for the ledger")
        mem.remember("alice", "db", "alice prefers postgres")
        saved = mem.log.head().seq
        mem.remember("alice", "db", "alice prefers sqlite now")
        assert mem.delete(ids=[victim], reason="test", requested_by="t").verified
        assert _hits(mem, "postgres", source="both") == []
        assert len(_hits(mem, "sqlite", source="memories")) == 1
        assert len(_hits(mem, "postgres", source="memories", as_of=saved)) == 1


def test_a_refit_by_one_store_is_followed_by_another_on_the_same_directory(tmp_path: Path,
                                                                            small_blocks: int) -> None:
    """A second store (as another process would) keeps reading during and after
    another's refit, and then reads the refitted directory."""
    path = tmp_path / "s"
    with MemoryLog.open(path, record_access=False) as mem, MemoryLog.open(path, record_access=False) as other:
        sid = mem.start_session()
        ids = [mem.add_message(sid, role="user", content=f"entry tok{i}x") for i in range(10)]
        assert _hits(other, "tok3x") == [ids[3]]
        ids += [mem.add_message(sid, role="user", content=f"entry tok{i}x") for i in range(10, 40)]
        assert _hits(mem, "tok30x") == [ids[30]]
        assert mem.proj.refit()  # as memlog maintain does
        assert mem.proj.search_index is not None and len(mem.proj.search_index.shards) == 4
        assert [_hits(other, f"tok{i}x") for i in range(40)] == [[e] for e in ids]
        assert other.proj.search_index is not None and len(other.proj.search_index.shards) == 4


def test_a_long_catch_up_indexes_as_many_shards_a_pass_as_the_writers_budget_holds() -> None:
    head = 4 * ONE_PASS_EVENTS
    assert search_passes([0] * 32, head, 0) == [list(range(16)), list(range(16, 32))]
    assert search_passes([0] * 16, head, 0) == [list(range(16))]
    assert search_passes([0] * 32, ONE_PASS_EVENTS - 1, 0) == [list(range(32))]  # a short range: one pass
    ahead = [head if i % 2 else 0 for i in range(32)]  # half the shards are current
    assert search_passes(ahead, head, 0) == [list(range(0, 32, 2))]
    assert search_passes([head] * 32, head, head) == []
    assert search_passes([head] * 32, head, 5) == [[]]  # (a pass for the vectors alone)


def test_a_replay_in_several_passes_equals_the_live_projections(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """One shard a pass: every shard, the as-of intervals, the memories and the
    vectors (fed by the first pass only) are what live updates made."""

    def semantic(mem: MemoryLog) -> list[str]:
        return [r.id for r in mem.search("a note about some topic", mode="semantic", source="both", limit=5)]

    def text(mem: MemoryLog, queries: list[str], as_of: int) -> list[tuple[list[str], list[str]]]:
        # (sorted: ties may order differently after a purge's rebuild, see above)
        return [(sorted(_hits(mem, q, limit=50, source="both")), sorted(_hits(mem, q, limit=50, as_of=as_of)))
                for q in queries]

    with MemoryLog.open(tmp_path / "s", search_shards=4, record_access=False) as mem:
        sid = mem.start_session(user_id="alice")
        ids = [mem.add_message(sid, role="user", content=f"note tok{i}x about topic{i % 5}")
               for i in range(40)]
        finding = mem.record_finding(sid, description="disk failure about topic9", severity="high")
        mem.update_finding(finding, status="resolved")
        mem.remember("alice", "pet", "a cat named zanzibar")
        mem.delete(ids=[ids[7]], reason="test", requested_by="t")
        head = mem.log.head().seq
        queries = ["note", "topic3", "tok3x", "topic9", "zanzibar", "a cat"]
        live, nearest = text(mem, queries, head - 5), semantic(mem)
        monkeypatch.setattr(search_fit, "ONE_PASS_EVENTS", 1)
        monkeypatch.setattr(search_fit, "_HEAP_BUDGET", search_fit._HEAP_MIN)
        passes: list[tuple[list[int], bool]] = []
        real = Projections._search_pass

        def spy(self: Projections, index: object, marks: object, shards: list[int], *a: object,
                **k: bool) -> None:
            passes.append((list(shards), k["feed_vectors"]))
            real(self, index, marks, shards, *a, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(Projections, "_search_pass", spy)
        mem.proj.replay()
        assert passes == [([0], True), ([1], False), ([2], False), ([3], False)]
        assert text(mem, queries, head - 5) == live and semantic(mem) == nearest
        assert live[2][0] == [ids[3]] and live[3][0] == [finding] and ids[7] not in live[0][0]
        assert mem.proj.vectors is not None and len(nearest) == 5
