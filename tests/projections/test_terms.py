"""The word counter a document's length (``dl``) comes from agrees with the words the index cuts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.search.terms import count_words, words

ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=300)
PIECES = st.sampled_from([*"ab Z9_-.,'\t\n", "é", "ß", "日", "\u00a0", "x" * 41, "y" * 40])
MIXED = st.lists(PIECES, max_size=60).map("".join)  # long runs too: words over 40 bytes are not counted


@settings(max_examples=300, deadline=None)
@given(st.one_of(ASCII, MIXED))
def test_count_words_is_the_number_of_words(text: str) -> None:
    assert count_words(text) == len(words(text))


def test_long_words_are_not_counted() -> None:
    assert count_words("a " + "b" * 40 + " " + "c" * 41 + " under_score") == 4
