"""The terms of the search index: words as Tantivy's tokenizer cuts them,
lower-cased and, with :data:`STEM`, reduced to their English stem.

Tantivy's ``en_stem`` tokenizer and PyStemmer's ``english`` stemmer are the
same Snowball algorithm, so the terms computed here for a query (term
queries take terms, not text) and for a candidate's text (exact BM25, see
:mod:`.bm25`) are the ones the index holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import Stemmer

__all__ = ["STEM", "STOP_WORDS", "TOKENIZER", "content_terms", "count_words", "stem_all", "terms", "words"]

STEM = True  # measured: see docs/search.md
TOKENIZER = "en_stem" if STEM else "default"
# Function words of English questions and statements: left out of a query
# (unless nothing else is left). Measured on LoCoMo: Lucene's 33 words alone
# cost 0.5 at R@10, this list (question words, pronouns, auxiliaries) gained
# 6 points: a question's function words match every turn of a chat.
_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with what when where who whom which why how did do does done has have "
    "had i you he she we me my your his her our its him them us am were been being would could should "
    "can about from")
STOP_WORDS: frozenset[str] = frozenset(_STOP.split())
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # runs of letters and digits; the underscore splits
_OVER_40 = 40
_ALNUM = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ASCII_SPACES = bytes(c if c in _ALNUM else 32 for c in range(256))  # letters and digits kept
_ASCII_RUNS = bytes(97 if c in _ALNUM else 32 for c in range(256))  # letters and digits as "a"
_LONG_RUN = b"a" * (_OVER_40 + 1)
_stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` of at most 40 bytes (Tantivy drops longer ones)."""
    found: list[str] = _WORD.findall(text.lower())
    if max(map(len, found), default=0) <= 10:  # 10 characters are at most 40 bytes
        return found
    return [w for w in found if len(w.encode()) <= 40]


def count_words(text: str) -> int:
    """``len(words(text))`` without the regex or the list: in ASCII text a word
    is a run of letters and digits and its bytes are its characters, so a table
    turns every letter and digit into ``a`` and every other byte into a space,
    and the words are the runs of ``a``, counted where one starts, all in C
    (half the time of cutting them with ``split``: a rebuild and a shard's
    purge count every document's words). A word over 40 bytes, which
    the index drops, sends the text to the split."""
    if not text.isascii():
        return len(words(text))
    marked = text.encode().translate(_ASCII_RUNS)
    if _LONG_RUN in marked:
        found = text.encode().translate(_ASCII_SPACES).split()
        return len(found) - sum(map(_OVER_40.__lt__, map(len, found)))
    return marked.count(b" a") + marked.startswith(b"a")


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order (with repeats)."""
    found = words(text)
    return _stem(found) if STEM and found else found


def stem_all(found: list[str]) -> list[str]:
    """The terms of already cut ``found`` words."""
    return _stem(found) if STEM and found else found


def content_terms(text: str) -> list[str]:
    """The terms of ``text`` without its function words (:data:`STOP_WORDS`), in order."""
    return stem_all([w for w in words(text) if w not in STOP_WORDS])
