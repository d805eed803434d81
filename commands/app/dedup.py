"""Dedup of lessons (seed 004): a new lesson close to a live one of its scope
reinforces that lesson instead of adding a copy.

- **Similarity.** Jaccard of the two word sets (:func:`projections.lesson_words`:
  lower-cased runs of letters and digits, no stemming): ``|A & B| / |A | B|``.
- **Threshold.** ``lesson_dedup_threshold`` (0.8, seed 004): at or above it
  the lesson reinforces; 0 turns dedup off; 1.0 reinforces identical word
  sets only. A lesson without any word is always added.
- **Scope.** The same user and agent: the lesson's user (its own, else its
  session's user; none for a lesson of a session without a user or of the
  shared project stream) and its agent (none when not given). A lesson
  without a session, written for a user, is in that user's scope.
- **Candidates.** The views index every live lesson by scope with its word
  count (:meth:`projections.ViewReader.scope_lessons`); only those whose count
  can reach the threshold (``t*n <= m <= n/t``) are read from the log.
- **Reinforcement.** ``entry.reinforced`` (the lesson's id, when, the id the
  new write would have had, the similarity, the write's session) on the
  lesson's stream; the call returns the existing lesson's id. The views count
  it as an access (decay boost and access score) and tally it
  (:meth:`projections.ViewReader.reinforcement`); ``history`` lists it.
- **Where.** Every lesson written through :func:`commands.app.records.record`
  (``record_lesson``, MCP, extraction), except importers' (they carry
  client event ids and keep every record). Two processes writing the same
  lesson at the same moment may both add it (the check is not serialised
  with the other's append).
"""

from __future__ import annotations

import math

from eventstore import SHOWN_STATES, EntryRecorded, EntryReinforced, now_micros
from projections import ViewReader, lesson_words

from . import log as _log
from .store import Store

__all__ = ["find_copy", "jaccard", "reinforce_copy"]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|`` (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def find_copy(views: ViewReader, entry: EntryRecorded, threshold: float) -> tuple[str, float] | None:
    """The live lesson of ``entry``'s scope most similar to it, at or above
    ``threshold`` (ties: the one recorded first), and the similarity; else None."""
    words = lesson_words(entry.content)
    if not words or threshold <= 0:
        return None
    user = entry.user_id
    if user is None and entry.session_id is not None:
        session = views.session(entry.session_id)
        user = None if session is None else session.user_id
    n = len(words)
    low, high = math.ceil(threshold * n - 1e-9), math.floor(n / threshold + 1e-9)
    ids = [eid for eid, m in views.scope_lessons(user, entry.agent_id) if low <= m <= high]
    best: tuple[str, float, int] | None = None
    for view in views.entries(ids):  # one batch read of the log
        if view is None or view.entry is None or view.state not in SHOWN_STATES:
            continue
        similarity = jaccard(words, lesson_words(view.entry.content))
        better = best is None or (similarity, -view.recorded_seq) > (best[1], -best[2])
        if similarity >= threshold and better:
            best = (view.entry_id, similarity, view.recorded_seq)
    return None if best is None else (best[0], best[1])


def reinforce_copy(store: Store, entry: EntryRecorded, actor: str | None = None) -> str | None:
    """When ``entry`` is a lesson close enough to a live lesson of its scope,
    append ``entry.reinforced`` to that lesson's stream and return its id;
    else None (the caller records ``entry``)."""
    threshold = store.settings.lesson_dedup_threshold
    if entry.kind != "lesson" or threshold <= 0:
        return None
    with store.read() as views:
        found = find_copy(views, entry, threshold)
        stored = None if found is None else views.stored_entry(found[0])
    if found is None or stored is None:
        return None
    eid, similarity = found
    stream = (f"session:{stored.session_id}" if stored.session_id else
              f"user:{stored.user_id}" if stored.user_id else "project")
    event = EntryReinforced(entry_id=eid, at=now_micros(), by_entry_id=entry.entry_id,
                            similarity=min(1.0, round(similarity, 6)), session_id=entry.session_id)
    store.writer.append(stream, lambda: [event], actor=actor)
    _log.info("lesson reinforced", entry_id=eid, by_entry_id=entry.entry_id, similarity=event.similarity)
    return eid
