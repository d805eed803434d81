"""The decay projection's math (seed 000), as pure functions.

``factor = max(floor, min(1, exp(-rate_kind * age_hours) * (1 + access_boost * accesses)
* (1 + importance_boost * importance)))``; the rates and boosts come from the
last ``decay.applied`` event. Relevance is ``0.4 text + 0.3 time + 0.2
importance + 0.1 access``. Times are event times or a caller-given ``now``;
nothing here reads the clock.
"""

from __future__ import annotations

import math

from eventstore import Details, EntryRecorded

from .models import DecayParams, StoredEntry

__all__ = [
    "WEIGHTS",
    "access_score",
    "decay_factor",
    "detail_level",
    "entry_importance",
    "importance_of",
    "relevance",
]

WEIGHTS = {"text": 0.4, "time": 0.3, "importance": 0.2, "access": 0.1}
_BASE_IMPORTANCE = {
    "decision": 1.0, "finding": 0.8, "preference": 0.7, "lesson": 0.7, "project": 0.9,
    "task": 0.6, "handoff": 0.8, "summary": 0.6, "message": 0.5,
}
_HOUR = 3_600_000_000


def importance_of(kind: str, given: float | None, level: str | None = None) -> float:
    """Seed 000's importance: by kind, boosted for high impact or severity."""
    if given is not None:
        return given
    score = _BASE_IMPORTANCE.get(kind, 0.5)
    if level in ("high", "critical"):
        score *= 1.3
    return min(score, 1.0)


def detail_level(details: Details | None) -> str | None:
    """The impact (decisions) or severity (findings) of an entry's details."""
    level: str | None = getattr(details, "impact", None) or getattr(details, "severity", None)
    return level


def entry_importance(entry: EntryRecorded | StoredEntry) -> float:
    """:func:`importance_of` an entry: its own, else by kind, raised by impact or
    severity. A stored entry carries its own importance and level, so the value
    is the same without its content."""
    level = entry.level if isinstance(entry, StoredEntry) else detail_level(entry.details)
    return importance_of(entry.kind, entry.importance, level)


def decay_factor(kind: str, occurred_at: int, now: int, accesses: int, importance: float,
                 params: DecayParams) -> float:
    """The decay factor of an entry at ``now`` (microseconds)."""
    age_hours = max(0.0, (now - occurred_at) / _HOUR)
    rate = params.rates.get(kind, 0.05)
    base = math.exp(-rate * age_hours)
    boosted = base * (1 + params.access_boost * accesses) * (1 + params.importance_boost * importance)
    return max(params.floor, min(boosted, 1.0))


def access_score(last_access: int, now: int) -> float:
    """Recency of the last access (0.5 when never accessed), as in seed 000."""
    if last_access <= 0:
        return 0.5
    return math.exp(-0.05 * max(0.0, (now - last_access) / _HOUR))


def relevance(text: float, time: float, importance: float, access: float) -> float:
    """The weighted sum of the four components, each in [0, 1]."""
    return _W_TEXT * text + _W_TIME * time + _W_IMPORTANCE * importance + _W_ACCESS * access


# The weights as constants: relevance is computed for every search candidate.
_W_TEXT, _W_TIME, _W_IMPORTANCE, _W_ACCESS = (
    WEIGHTS["text"], WEIGHTS["time"], WEIGHTS["importance"], WEIGHTS["access"])
