"""Identifier-like tokens of a query: matched exactly in text, never by meaning.

Agents search for ticket numbers, error codes, order ids, hashes and
emails. Such a token means itself and nothing else, so:

- in text it matches exactly: never fuzzily, never as a prefix of longer
  words, and a token of several words (``ABC-1234``, an email, a UUID)
  counts only where the entry holds its words in that order, side by side
  (:func:`holds`), never by one of its pieces alone;
- it never reaches the shipped model's embedding (:func:`strip_identifiers`):
  the static model would cut it into digit and letter pieces that match any
  text with the same pieces.

A token (a run of non-space characters, its edge punctuation stripped) is
identifier-like when it holds a digit, or an ``@`` between letters or digits
(an email). The redaction's placeholder, ``[REDACTED]``, holds neither and
stays a plain word.
"""

from __future__ import annotations

from collections.abc import Sequence

from .terms import STOP_WORDS, words

__all__ = ["EDGE", "holds", "identifiers", "is_identifier", "meaning_words", "split_query",
           "strip_identifiers"]

EDGE = "\"'()[]{}<>,;:!?.*`"


def is_identifier(token: str) -> bool:
    """Whether a raw token (no spaces) looks like an identifier."""
    if any(ch.isdigit() for ch in token):
        return True
    at = token.find("@")
    return 0 < at < len(token) - 1 and token[at - 1].isalnum() and token[at + 1].isalnum()


def identifiers(text: str) -> list[str]:
    """The identifier-like tokens of ``text``, edge punctuation stripped, in order."""
    return [t for raw in text.split() if (t := raw.strip(EDGE)) and is_identifier(t)]


def split_query(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The query's identifiers as index words: (the one-word identifiers, the
    identifiers of several words, each as its words in order)."""
    single: list[str] = []
    multi: list[tuple[str, ...]] = []
    for token in identifiers(text):
        found = words(token)
        if len(found) == 1:
            single.append(found[0])
        elif found:
            multi.append(tuple(found))
    return tuple(dict.fromkeys(single)), tuple(dict.fromkeys(multi))


def holds(text_words: Sequence[str], group: Sequence[str]) -> bool:
    """Whether ``text_words`` hold ``group`` in order, side by side."""
    n = len(group)
    first = group[0]
    return any(text_words[i : i + n] == list(group) for i, w in enumerate(text_words)
               if w == first and i + n <= len(text_words))


def strip_identifiers(text: str) -> str:
    """``text`` without its identifier-like tokens."""
    return " ".join(raw for raw in text.split() if not is_identifier(raw.strip(EDGE)))


def meaning_words(text: str) -> list[str]:
    """The content words of ``text`` that may reach an embedding: no
    identifier-like token, no function word, no number."""
    return [w for w in words(strip_identifiers(text)) if w not in STOP_WORDS and not w.isdigit()]
