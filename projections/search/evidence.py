"""What a hit's score means: how much of the query the hit carries, in [0, 1].

A score is absolute, never a share of the best hit, so a floor such as
``min_relevance 0.5`` means the same for every query:

- **text**: the hit's text score (global BM25 with the context signals,
  :mod:`.rank`) over the query's *ideal* score, the score of an
  average-length document that holds each of the query's words once (the sum
  of their idfs, a word in no document counting as the rarest). 1 is a
  document holding every query word (or as much by its context); 0.5 one
  holding half the query's weight; a word in no document (an unknown account
  code, say) weighs much, so a hit missing it scores low. Capped at 1.
- **semantic**: the cosine between the hit and the query's meaning words
  (:func:`~.identifiers.meaning_words`), at least the model's floor.
- **hybrid**: the text evidence, with the semantic evidence filling half of
  what the words leave: ``t + (1 - t) * 0.5 * cosine``.

A candidate with no evidence (score 0) is no hit. When no word of the query
is in any document, candidates come only from near words (typos) and from
the indexed words the last word begins (still being typed); each must then
cover every word of the query, so one accidental near word is no match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from ..models import EntryView, MemoryView
from .bm25 import FUZZY_WEIGHT, Stats, counts_of, doc_freq, idf_of, near, term_counts
from .identifiers import EDGE, holds, is_identifier
from .index import memory_text, searchable_text
from .signals import with_text
from .terms import terms

__all__ = ["Evidence", "coverage", "covers_all", "ends_in_identifier", "evidence_of", "group_score",
           "text_of", "weighed"]

C = TypeVar("C", bound=tuple[Any, ...])  # a ranking candidate: a named tuple (text score, ..., view)


class Evidence(NamedTuple):
    """A query's yardsticks for the evidence a candidate carries."""

    ideal: float                                   # the query's ideal text score (> 0)
    groups: tuple[tuple[tuple[str, ...], float], ...]  # several-word identifiers (terms) found with all
                                                   # their terms in some document, and their idf sum
    strict: bool                                   # no query word in any document
    words: tuple[str, ...]                         # the query's terms
    expansions: tuple[str, ...]                    # words the last term begins


def evidence_of(searchers: list[tuple[int, Any]], stats: Stats, stems: Sequence[str],
                groups: Sequence[Sequence[str]], expansions: tuple[str, ...]) -> Evidence:
    """The query's :class:`Evidence` (``stems``: its terms outside the
    several-word identifiers ``groups``)."""
    plain = dict.fromkeys(stems)
    ideal = sum(stats.idf.get(w) or idf_of(stats.docs, 0) for w in plain)
    found: list[tuple[tuple[str, ...], float]] = []
    for group in groups:
        dfs = [doc_freq(searchers, w) for w in group]
        weight = sum(idf_of(stats.docs, df) for df in dfs)
        ideal += weight
        if all(dfs):
            found.append((tuple(group), weight))
    strict = not any(w in stats.idf for w in plain) and not found
    return Evidence(ideal or 1.0, tuple(found), strict, tuple(plain), expansions)


def group_score(text: str, evidence: Evidence) -> float:
    """What ``text`` earns for the several-word identifiers it holds in order."""
    if not evidence.groups:
        return 0.0
    found = terms(text)
    return sum(weight for group, weight in evidence.groups if holds(found, group))


def coverage(evidence: Evidence, stats: Stats) -> Callable[[EntryView | MemoryView], float]:
    """The query's measure of a view: the share of the query's weight (its
    words' idfs, :attr:`Evidence.ideal`) that the view's text holds: a word
    itself, the last word by an indexed word it begins, a word in no document
    by a near word (at the fuzzy weight), a several-word identifier in
    order. 1 when it holds every query word. The weights are found once."""
    unknown = idf_of(stats.docs, 0)
    weights = [(w, stats.idf.get(w) or unknown) for w in evidence.words]
    last = evidence.words[-1] if evidence.words else None
    fuzzy = {w: d for w, (d, _) in stats.fuzzy.items()}

    def measure(view: EntryView | MemoryView) -> float:
        entry = view.entry if isinstance(view, EntryView) else None
        held = counts_of(entry, searchable_text) if entry is not None else term_counts(text_of(view))
        total = 0.0
        for word, weight in weights:
            if word in held or (word == last and any(e in held for e in evidence.expansions)):
                total += weight
            elif word in fuzzy and any(near(word, token, fuzzy[word]) for token in held):
                total += FUZZY_WEIGHT * weight
        if evidence.groups:
            total += group_score(text_of(view), evidence)
        return min(1.0, total / evidence.ideal)

    return measure


def covers_all(text: str, evidence: Evidence, stats: Stats) -> bool:
    """Whether ``text`` covers every query word: the word itself, a near word
    (a word in no document, matched fuzzily) or, for the last, an indexed
    word it begins."""
    held = set(terms(text))
    last = evidence.words[-1] if evidence.words else None
    for word in evidence.words:
        if word in held or (word == last and any(e in held for e in evidence.expansions)):
            continue
        fuzzy = stats.fuzzy.get(word)
        if fuzzy is None or not any(near(word, token, fuzzy[0]) for token in held):
            return False
    return True


def weighed(candidates: list[C], evidence: Evidence, stats: Stats, cover_all: bool = True) -> list[C]:
    """The text candidates with what their several-word identifiers earn,
    without those left with no text score (one piece of an identifier alone)
    and, when no query word is in any document (and ``cover_all``), without
    those that do not cover every word. A candidate is a named
    tuple whose first field is its text score and last its view."""
    strict = evidence.strict and cover_all
    if not evidence.groups and not strict:
        return candidates
    out = []
    for c in candidates:
        text = text_of(c[-1])
        score = c[0] + group_score(text, evidence)
        if score <= 0 or (strict and not covers_all(text, evidence, stats)):
            continue  # no evidence: not a candidate (nor a neighbour's or a session's)
        out.append(c if score == c[0] else with_text(c, score))
    return out


def text_of(view: EntryView | MemoryView) -> str:
    """The indexed text of an entry's or a memory's view."""
    if isinstance(view, MemoryView):
        return memory_text(view.key, view.content or "")
    assert view.entry is not None
    return searchable_text(view.entry)


def ends_in_identifier(text: str) -> bool:
    """Whether the query's last token is identifier-like (so not a word being typed)."""
    last = text.split()[-1:]
    return bool(last) and is_identifier(last[0].strip(EDGE))
