"""The session and date signals of ranking (projections/search/signals.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from projections.search.signals import by_date, by_session, period_of


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
    times = [_at(2023, 6), _at(2023, 7)]
    assert by_date([1.0, 1.5], times, "camping in June", 1.0) == [2.0, 1.5]
    assert by_date([1.0, 1.5], times, "camping", 1.0) == [1.0, 1.5]      # no period: unchanged
    assert by_date([1.0, 1.5], times, "camping in June 2022", 1.0) == [1.0, 1.5]  # wrong year
    assert by_date([-1.0], times[:1], "in June", 1.0) == [-1.0]          # no text score: untouched


def test_a_strong_session_lifts_its_entries() -> None:
    texts = [3.0, 2.0, 2.5, 0.0, -1.0]  # a1, a2, b1, a3, s
    sessions = ["A", "A", "B", "A", "A"]
    a1, _, b1, a3, s = by_session(texts, sessions, 0.5)
    # A's strength 5.0 (the best), B's 2.5; unit = 0.5 * 3.0 / 5.0
    assert a1 == 3.0 + 0.3 * 5.0 and b1 == 2.5 + 0.3 * 2.5
    assert a3 == 0.3 * 5.0          # a fetched neighbour of the session gains too
    assert s == -1.0                # a semantic-only candidate is left as it is
    assert by_session(texts, sessions, 0.0) == texts
    assert by_session([1.0], [None], 0.5) == [1.0]  # no session: nothing to gain
