"""The word counters agree with the words they count: a document's length (``dl``) with the words
the index cuts, a lesson's word count (its ``L`` record) with the word set dedup compares."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.search.terms import count_words, words
from projections.views.formation import lesson_word_count, lesson_words

ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=300)
PIECES = st.sampled_from([*"ab Z9_-.,'\t\n", "é", "ß", "日", "\u00a0", "x" * 41, "y" * 40])
MIXED = st.lists(PIECES, max_size=60).map("".join)  # long runs too: words over 40 bytes are not counted


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, MIXED))
def test_count_words_is_the_number_of_words(text: str) -> None:
    assert count_words(text) == len(words(text))


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, MIXED))
def test_a_lessons_word_count_is_the_size_of_its_word_set(text: str) -> None:
    assert lesson_word_count(text) == len(lesson_words(text))
    assert lesson_word_count(text.upper()) == len(lesson_words(text.upper()))


def test_long_words_are_not_counted() -> None:
    assert count_words("a " + "b" * 40 + " " + "c" * 41 + " under_score") == 4
