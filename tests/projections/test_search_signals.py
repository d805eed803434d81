"""The session and date signals of ranking (projections/search/signals.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from projections.search.signals import by_date, by_session, period_of


class Cand(NamedTuple):
    text: float
    occurred_at: int
    name: str


def _at(year: int, month: int) -> int:
    return int(datetime(year, month, 15, tzinfo=UTC).timestamp() * 1_000_000)


def test_periods_named_in_a_query() -> None:
    assert period_of("When did Melanie go camping in June?") == (6, None)
    assert period_of("What setback did she face in October 2023?") == (10, 2023)
    assert period_of("How many times in 2022?") == (None, 2022)
    assert period_of("What may Caroline do next?") is None  # the verb, not the month
    assert period_of("May I ask about the plan?") is None
    assert period_of("the plan") is None


def test_dates_favour_entries_in_the_named_month() -> None:
    june, july = Cand(1.0, _at(2023, 6), "june"), Cand(1.5, _at(2023, 7), "july")
    ranked = by_date([june, july], "camping in June", 1.0)
    assert [c.text for c in ranked] == [2.0, 1.5]
    assert by_date([june, july], "camping", 1.0) == [june, july]      # no period: unchanged
    assert by_date([june, july], "camping in June 2022", 1.0) == [june, july]  # wrong year
    semantic = Cand(-1.0, _at(2023, 6), "semantic")
    assert by_date([semantic], "in June", 1.0) == [semantic]          # no text score: untouched


def test_a_strong_session_lifts_its_entries() -> None:
    cands = [Cand(3.0, 0, "a1"), Cand(2.0, 0, "a2"), Cand(2.5, 0, "b1"), Cand(0.0, 0, "a3"),
             Cand(-1.0, 0, "s")]
    sessions = ["A", "A", "B", "A", "A"]
    out = {c.name: c.text for c in by_session(cands, sessions, 0.5)}
    # A's strength 5.0 (the best), B's 2.5; unit = 0.5 * 3.0 / 5.0
    assert out["a1"] == 3.0 + 0.3 * 5.0 and out["b1"] == 2.5 + 0.3 * 2.5
    assert out["a3"] == 0.3 * 5.0          # a fetched neighbour of the session gains too
    assert out["s"] == -1.0                # a semantic-only candidate is left as it is
    assert by_session(cands, sessions, 0.0) == cands
    lone = [Cand(1.0, 0, "x")]
    assert by_session(lone, [None], 0.5) == lone  # no session: nothing to gain
