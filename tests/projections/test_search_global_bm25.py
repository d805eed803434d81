"""BM25 statistics are global: an entry's score does not depend on its shard.

On the code before the recall issue (main 4171ad7) the first test fails: each
of the 16 shards kept its own idf and average length, so six identical
lessons in six shards got six different relevances.
"""

from __future__ import annotations

import random
from pathlib import Path

from commands import MemoryLog
from projections.search.bm25 import Stats, collect_stats, score_text, text_score
from projections.search.terms import terms

LESSON = "always pin the postgres version in the deploy pipeline"
WORDS = ["cache", "redis", "queue", "worker", "deploy", "pipeline", "postgres", "index", "shard", "lock",
         "retry", "budget", "schema", "migration", "backup", "restore", "token", "latency"]
WHEN = "2026-01-10T09:00:00Z"


def _store(path: Path) -> tuple[MemoryLog, list[str]]:
    # text ranking: the scores under test; identical lessons on purpose, so no dedup;
    # 16 shards (a store this small gets one by default)
    mem = MemoryLog.open(path, embedder=None, lesson_dedup_threshold=0, search_shards=16)
    rng = random.Random(5)
    sid = mem.start_session()
    lessons: list[str] = []
    for i in range(60):  # other entries of varied lengths, spread over the shards
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 40)))
        mem.add_message(sid, role="user", content=text, occurred_at=WHEN)
        if i % 10 == 0:  # each lesson alone in its session: no neighbouring turn lends it a score
            lessons.append(mem.record_lesson(mem.start_session(), content=LESSON, occurred_at=WHEN))
    return mem, lessons


def test_identical_lessons_in_different_shards_score_the_same(tmp_path: Path) -> None:
    mem, lessons = _store(tmp_path / "s")
    with mem:
        index = mem.proj.search_index
        assert index is not None
        # they land in different shards (ids are random: add lessons until four shards hold one)
        while len({index.shard_of(e) for e in lessons}) < 4:
            lessons.append(mem.record_lesson(mem.start_session(), content=LESSON, occurred_at=WHEN))
        for text in ("postgres version pipeline", "pin deploy", "postgres"):
            hits = {r.id: r.score for r in mem.search(text, limit=100, record_access=False)}
            scores = {hits[e] for e in lessons}
            assert len(scores) == 1, (text, scores)


def test_the_score_is_bm25_with_global_statistics(tmp_path: Path) -> None:
    """Global N, df and avgdl: the same value whatever the shard layout."""
    mem, _ = _store(tmp_path / "s")
    with mem:
        mem.proj.catch_up(search=True)
        index = mem.proj.search_index
        assert index is not None
        searchers = index.searchers()
        stats = collect_stats(index, searchers, terms("postgres pipeline"))
        assert stats.docs == 66
        df = sum(s.doc_freq("content", "postgr") for _, s in searchers)
        assert 6 <= df < 66 and stats.idf["postgr"] > 0
        assert score_text(terms(LESSON), stats) > score_text(terms("postgres"), stats) * 0.5


def test_memoised_term_counts_follow_the_text() -> None:
    """The term counts are memoised by the text itself: a redacted or updated
    entry (same rseq, new text) is scored from its new text, never the old."""
    stats = Stats(100, 8.0, {"postgr": 2.0, "deploy": 1.5}, {}, {})
    assert text_score(LESSON, stats) == score_text(terms(LESSON), stats)
    assert text_score(LESSON, stats) == score_text(terms(LESSON), stats)  # served memoised
    assert text_score("[redacted]", stats) == 0.0
    assert text_score("", stats) == score_text([], stats) == 0.0


def test_counts_held_by_the_event_equal_the_texts_and_a_purge_forgets_them() -> None:
    """A candidate's counts memoised by its (frozen) event object score as its
    text does; another object with another text gets its own; ``forget_texts``
    (every purge) empties both caches."""
    from eventstore import EntryRecorded
    from projections.search import bm25
    from projections.search.index import searchable_text

    stats = Stats(100, 8.0, {"postgr": 2.0, "deploy": 1.5}, {}, {})
    first = EntryRecorded(entry_id="e1", kind="lesson", content=LESSON, occurred_at=WHEN)
    other = EntryRecorded(entry_id="e1", kind="lesson", content="[redacted]", occurred_at=WHEN)
    want = score_text(terms(searchable_text(first)), stats)
    assert bm25.held_text_score(first, searchable_text, stats) == want
    assert bm25.held_text_score(first, searchable_text, stats) == want  # served from the held counts
    redacted = score_text(terms(searchable_text(other)), stats)
    assert bm25.held_text_score(other, searchable_text, stats) == redacted
    assert bm25._HELD and bm25._COUNTS
    bm25.forget_texts()
    assert not bm25._HELD and not bm25._COUNTS
