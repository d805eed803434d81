"""Summarisers: a callable from texts to one text.

memlog folds what it compacts, summarises or flushes into a summary entry. Any
callable ``(texts) -> text`` will do (an LLM behind it, for one); the default,
:class:`ExtractiveSummariser`, needs no model and is deterministic: the same
texts always give the same summary.

How the default picks sentences:

1. Each text is cut into sentences (after ``.``, ``!`` or ``?`` followed by a
   space, and at line breaks); sentences of fewer than 3 words are left out.
2. Each remaining sentence scores the mean weight of its distinct content
   terms (stemmed words, function words left out); a term's weight is the
   number of texts it appears in, so what recurs across the texts counts most.
   The first sentence of each text gains 10% (people state the point first).
3. Sentences are taken best first (ties: the earlier one), skipping any whose
   terms are 80% covered by one already taken, until ``max_chars`` would be
   passed or ``max_sentences`` are taken.
4. The chosen sentences are joined in their original order, each cut to
   ``max_chars`` at a word boundary if it alone is longer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

from eventstore import InvalidInputError
from projections import content_terms

__all__ = ["DEFAULT_SUMMARY_CHARS", "ExtractiveSummariser", "Summariser", "check_summary"]

Summariser = Callable[[Sequence[str]], str]
DEFAULT_SUMMARY_CHARS: Final = 2000

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MIN_WORDS = 3
_FIRST_BONUS = 1.1
_OVERLAP = 0.8


class ExtractiveSummariser:
    """The default summariser: the sentences that best cover what recurs (see the module)."""

    def __init__(self, max_chars: int = DEFAULT_SUMMARY_CHARS, max_sentences: int = 12) -> None:
        if max_chars < 1 or max_sentences < 1:
            raise InvalidInputError("max_chars and max_sentences must be positive")
        self.max_chars = max_chars
        self.max_sentences = max_sentences

    def __call__(self, texts: Sequence[str]) -> str:
        candidates = _sentences(texts)
        if not candidates:
            return _cut(" ".join(t.strip() for t in texts if t.strip()), self.max_chars)
        weight = _doc_weights(texts)
        scored = sorted(range(len(candidates)), key=lambda i: (-_score(candidates[i], weight), i))
        return self._pick(candidates, scored)

    def _pick(self, candidates: list[tuple[int, int, str, frozenset[str], bool]],
              order: list[int]) -> str:
        chosen: list[int] = []
        covered: list[frozenset[str]] = []
        used = 0
        for i in order:
            text, terms = candidates[i][2], candidates[i][3]
            if any(len(terms & c) >= _OVERLAP * len(terms) for c in covered):
                continue
            cost = len(text) + (1 if chosen else 0)
            if chosen and used + cost > self.max_chars:
                continue
            chosen.append(i)
            covered.append(terms)
            used += min(cost, self.max_chars)
            if len(chosen) >= self.max_sentences:
                break
        chosen.sort(key=lambda i: candidates[i][:2])
        return _cut(" ".join(candidates[i][2] for i in chosen), self.max_chars)


def check_summary(summary: object) -> str:
    """A summariser's result, checked: a non-empty string."""
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidInputError("the summariser returned no text")
    return summary.strip()


def _sentences(texts: Sequence[str]) -> list[tuple[int, int, str, frozenset[str], bool]]:
    """(text index, sentence index, sentence, its content terms, is first) of every usable sentence."""
    out = []
    for t, text in enumerate(texts):
        for s, sentence in enumerate(p.strip() for p in _SENTENCE_END.split(text) if p.strip()):
            if len(sentence.split()) < _MIN_WORDS:
                continue
            terms = frozenset(content_terms(sentence))
            if terms:
                out.append((t, s, sentence, terms, s == 0))
    return out


def _doc_weights(texts: Sequence[str]) -> Counter[str]:
    """In how many texts each content term appears."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(content_terms(text)))
    return counts


def _score(candidate: tuple[int, int, str, frozenset[str], bool], weight: Counter[str]) -> float:
    terms = candidate[3]
    mean = sum(weight[t] for t in terms) / len(terms)
    return mean * (_FIRST_BONUS if candidate[4] else 1.0)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return head.rstrip(",;: ")
