"""The default summariser: deterministic, extractive, bounded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from commands.app.upkeep.summariser import ExtractiveSummariser, check_summary
from eventstore import InvalidInputError

TEXTS = [
    "We chose PostgreSQL for the ledger because payments need ACID. The team also looked at MongoDB.",
    "Kafka carries the ledger events to the reporting service.",
    "PostgreSQL needs a connection pool of 50 for the ledger.",
    "thanks!",
]


def test_it_keeps_what_recurs_in_the_original_order() -> None:
    summary = ExtractiveSummariser(max_chars=200)(TEXTS)
    assert summary.startswith("We chose PostgreSQL for the ledger")
    assert "connection pool of 50" in summary
    assert summary.index("We chose") < summary.index("connection pool")
    assert "thanks" not in summary  # too short to be a sentence worth keeping


def test_it_is_deterministic_and_bounded() -> None:
    summarise = ExtractiveSummariser(max_chars=60)
    assert summarise(TEXTS) == summarise(list(TEXTS))
    assert len(summarise(TEXTS)) <= 60


def test_near_duplicate_sentences_are_taken_once() -> None:
    summary = ExtractiveSummariser()(["The deploy runs on friday night.", "The deploy runs on friday night!"])
    assert summary.count("deploy") == 1


@given(st.lists(st.text(max_size=200), max_size=8), st.integers(1, 300))
def test_any_texts_give_a_bounded_summary(texts: list[str], limit: int) -> None:
    assert len(ExtractiveSummariser(max_chars=limit)(texts)) <= limit


def test_bad_settings_and_empty_results_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        ExtractiveSummariser(max_chars=0)
    with pytest.raises(InvalidInputError):
        check_summary("  ")
    assert check_summary(" ok ") == "ok"
