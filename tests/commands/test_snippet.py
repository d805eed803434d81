"""Snippets: the single-spaced fast path is taken only where collapsing whitespace changes nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from commands.app.recall.search import _single_spaced, make_snippet

TEXT = st.text(st.sampled_from(["a", "b", "é", " ", " ", "\n", "\t", "\xa0", "\u2028", "\x1f", "x"]),
               max_size=400)
WORDS = st.lists(st.sampled_from(["ab", "ba", "xab", "éa"]), max_size=3)


@given(content=TEXT)
def test_the_fast_path_is_taken_only_where_collapsing_changes_nothing(content: str) -> None:
    """make_snippet skips collapsing whitespace when _single_spaced says so; that
    must only happen where collapsing would give the text back unchanged."""
    if _single_spaced(content):
        assert " ".join(content.split()) == content


@given(content=TEXT, words=WORDS, width=st.integers(5, 200))
def test_snippets_are_windows_of_the_collapsed_text(content: str, words: list[str], width: int) -> None:
    flat = " ".join(content.split())
    snippet = make_snippet(content, words, width)
    assert snippet.strip("…") in flat and len(snippet.strip("…")) <= width


@given(content=st.text(max_size=300))
def test_single_spaced_text_is_returned_whole_when_short(content: str) -> None:
    assert make_snippet(content, [], 10_000) == " ".join(content.split())
