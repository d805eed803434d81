"""Two ranking signals beyond a candidate's own words (measured with
``tools/bench/bench_recall.py``; see ``docs/search.md``):

- **session**: a conversation's answer sits among turns about the same thing,
  so an entry gains a share of how strongly its session matches the query
  (the sum of the session's three best text scores among the candidates,
  relative to the best session), scaled to the best text score;
- **dates**: a query naming a month (``in June``) or a year (``in 2023``)
  favours entries whose event time falls in it (UTC): their text score is
  multiplied by ``1 + share``. Month names and four-digit years in English
  only.

Both only reorder candidates the text (or its neighbours) found; a semantic
candidate with no text score is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = ["by_date", "by_session", "period_of", "with_text"]


def with_text(candidate: Any, text: float) -> Any:
    """``candidate`` (a named tuple whose first field is its text score) with
    ``text`` instead: ``_replace(text=...)`` without its keyword machinery."""
    return type(candidate)(text, *candidate[1:])


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
# "may" is a month only written "May" and not first (it is a verb too).
_MONTH = re.compile(r"\b((?i:" + "|".join(m for m in _MONTHS if m != "may") + r")|(?<=\S )May)\b")
_YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")
_TOP_PER_SESSION = 3


def period_of(text: str) -> tuple[int | None, int | None] | None:
    """The month and/or year ``text`` names (the first of each), or None:
    ``"camping in June"`` -> (6, None), ``"in May 2023"`` -> (5, 2023)."""
    month, year = _MONTH.search(text), _YEAR.search(text)
    if month is None and year is None:
        return None
    return (_MONTHS.index(month.group(1).lower()) + 1 if month else None,
            int(year.group(1)) if year else None)


def by_date(texts: Sequence[float], times: Sequence[int], query_text: str, share: float) -> list[float]:
    """The candidates' text scores, those of the ones whose event time
    (``times``, µs) falls in the month/year the query names gaining ``share``
    of themselves."""
    period = period_of(query_text) if share else None
    if period is None:
        return list(texts)
    month, year = period

    def inside(micros: int) -> bool:
        when = datetime.fromtimestamp(micros / 1e6, UTC)
        return (month is None or when.month == month) and (year is None or when.year == year)

    return [t * (1 + share) if t > 0 and inside(at) else t for t, at in zip(texts, times, strict=True)]


def by_session(texts: Sequence[float], sessions: Sequence[str | None], share: float) -> list[float]:
    """The candidates' text scores, each with one (>= 0) gaining ``share`` x its
    session's strength (its best text scores summed, relative to the best
    session's) x the best text score. ``sessions``: each candidate's session
    (None: no session)."""
    if not share:
        return list(texts)
    scores: dict[str, list[float]] = {}
    for t, sid in zip(texts, sessions, strict=True):
        if sid is not None and t > 0:
            scores.setdefault(sid, []).append(t)
    strength = {s: sum(sorted(v, reverse=True)[:_TOP_PER_SESSION]) for s, v in scores.items()}
    best_session = max(strength.values(), default=0.0)
    best_text = max(texts, default=0.0)
    if best_session <= 0 or best_text <= 0:
        return list(texts)
    unit = share * best_text / best_session
    return [t + unit * strength[sid] if t >= 0 and sid is not None and strength.get(sid) else t
            for t, sid in zip(texts, sessions, strict=True)]
