"""Snippets: the fast path for single-spaced text gives what collapsing whitespace gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from commands._search import make_snippet

TEXT = st.text(st.sampled_from(["a", "b", "é", " ", " ", "\n", "\t", "\xa0", "\u2028", "\x1f", "x"]),
               max_size=400)
WORDS = st.lists(st.sampled_from(["ab", "ba", "xab", "éa"]), max_size=3)


def reference(content: str, words: list[str], width: int = 160) -> str:
    """The snippet as computed before the fast path (whitespace always collapsed)."""
    flat = " ".join(content.split())
    if len(flat) <= width:
        return flat
    lower = flat.lower()
    positions = [p for w in words if (p := lower.find(w[: max(3, len(w) - 1)])) >= 0]
    start = max(0, min(positions) - 30) if positions else 0
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")


@given(content=TEXT, words=WORDS, width=st.integers(5, 200))
def test_make_snippet_matches_the_whitespace_collapsing_reference(
        content: str, words: list[str], width: int) -> None:
    assert make_snippet(content, words, width) == reference(content, words, width)


@given(content=st.text(max_size=300))
def test_single_spaced_text_is_returned_whole_when_short(content: str) -> None:
    assert make_snippet(content, [], 10_000) == " ".join(content.split())
