"""Seed 002's extraction rules, as data: which line is a decision, which a lesson.

The ten decision and ten lesson patterns of seed 002's compaction (Portuguese
and English, case-insensitive), plus the words its session-close extraction
names besides them (decidimos, escolhemos, will use, recomendação, stack
principal, aprendemos, lição, risco): those not already matched by the ten
add ``recomendação`` and ``stack principal`` to the decisions and ``risco``
to the lessons. A line matching a decision pattern is a decision (even if a
lesson pattern matches too).

Only lines longer than :data:`MIN_LINE_CHARS` characters (stripped) are
looked at; each extracted text keeps at most :data:`MAX_CHARS` characters; a
run keeps at most :data:`MAX_PER_KIND` decisions and as many lessons, the
first ones in the conversation's order.
"""

from __future__ import annotations

import re
from typing import Final, Literal

__all__ = [
    "CLOSE_DECISION_PATTERNS",
    "CLOSE_LESSON_PATTERNS",
    "DECISION_PATTERNS",
    "HASHTAG",
    "LESSON_PATTERNS",
    "MAX_CHARS",
    "MAX_PER_KIND",
    "MIN_LINE_CHARS",
    "classify",
]

MIN_LINE_CHARS: Final = 15
MAX_CHARS: Final = 300
MAX_PER_KIND: Final = 10

# Seed 002, compaction: "Decision regex" and "Lesson regex", as written there.
DECISION_PATTERNS: Final = (
    r"\bdecid", r"\bchose\b", r"\bwill use\b", r"\bdecisão", r"\bescolh",
    r"\boptamos", r"\badotamos", r"\bvamos usar\b", r"\bwent with\b", r"\bsettled on\b",
)
LESSON_PATTERNS: Final = (
    r"\blearned\b", r"\bimportant", r"\bnote:", r"\baprendemos", r"\bimportante",
    r"\blição", r"\bdiscovery", r"\binsight", r"\bdescobr", r"\bobserv",
)
# Seed 002, session close: the words it names that the ten above miss.
CLOSE_DECISION_PATTERNS: Final = (r"\brecomendação", r"\bstack principal\b")
CLOSE_LESSON_PATTERNS: Final = (r"\brisco",)

# Seed 002's vault: tags come from ``#(\w+)`` in the content.
HASHTAG: Final = re.compile(r"#(\w+)")

_DECISION = re.compile("|".join(DECISION_PATTERNS + CLOSE_DECISION_PATTERNS), re.IGNORECASE)
_LESSON = re.compile("|".join(LESSON_PATTERNS + CLOSE_LESSON_PATTERNS), re.IGNORECASE)


def classify(line: str) -> Literal["decision", "lesson"] | None:
    """``decision``, ``lesson`` or None for one line (already stripped)."""
    if len(line) <= MIN_LINE_CHARS:
        return None
    if _DECISION.search(line):
        return "decision"
    if _LESSON.search(line):
        return "lesson"
    return None
