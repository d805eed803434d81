"""An update of an entry compacted earlier keeps the end of its document's
interval (the compaction seq), so a search as of a seq between the compaction
and the update does not show it, as a replay stopped there does not. Found by
the as-of property on main 4171ad7, where the update re-opened the interval
(the vectors mirror the index's document versions, so they had it too)."""

from __future__ import annotations

from pathlib import Path

from eventstore import EventLog
from projections import Projections, SearchQuery, run_search

from .history import History


def test_an_update_after_a_compaction_keeps_the_interval(tmp_path: Path) -> None:
    """As of the compaction, the compacted entry is no longer current, updated later or not."""
    with EventLog.open(tmp_path / "log") as log:
        proj = Projections(tmp_path, log, shards=2, embedder=None)
        try:
            history = History(log, proj)
            for step in [("entry", 0, "message", ["postgres"]), ("compact", 0),
                         ("entry", 0, "message", ["postgres"]), ("update", 0, False)]:
                history.run(step)
            proj.catch_up(search=True)
            assert proj.search_index is not None
            compacted_at = 5
            hits = run_search(proj.search_index, SearchQuery(text="postgres", limit=50), compacted_at)
            assert [h.rseq for h in hits] == []
        finally:
            proj.close()


def test_a_second_compaction_keeps_the_first_end(tmp_path: Path) -> None:
    """A compaction naming an entry compacted earlier leaves its document's end
    at the first compaction (found by the as-of property: the second one moved
    it, so a search as of the first compaction still showed the entry)."""
    with EventLog.open(tmp_path / "log") as log:
        proj = Projections(tmp_path, log, shards=2, embedder=None)
        try:
            history = History(log, proj)
            for step in [("entry", 0, "message", ["postgres"]), ("compact", 0), ("compact", 0)]:
                history.run(step)
            proj.catch_up(search=True)
            assert proj.search_index is not None
            head = log.head().seq
            first = head - 1
            for k in (first, head):
                hits = run_search(proj.search_index, SearchQuery(text="postgres", limit=50), k)
                assert [h.rseq for h in hits] == []
            hits = run_search(proj.search_index, SearchQuery(text="postgres", limit=50), first - 1)
            assert len(hits) == 1
        finally:
            proj.close()
