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
- **Candidates.** The views index every shown lesson by scope with its word
  count and source seq (:meth:`projections.ViewReader.scope_lessons`); only
  those whose count can reach the threshold (``t*n <= m <= n/t``) are
  compared, their texts read from the log once per process: the word sets
  are kept in memory by (id, source seq) and dropped whole whenever the
  ``system`` stream moves (every deletion and redaction appends there), so
  no erased lesson's words outlive its erasure past the next check.
- **Reinforcement.** ``entry.reinforced`` (the lesson's id, when, the id the
  new write would have had, the similarity, the write's session) on the
  lesson's stream; the call returns the existing lesson's id. The views count
  it as an access (decay boost and access score) and tally it
  (:meth:`projections.ViewReader.reinforcement`); ``history`` lists it.
- **Where.** Every lesson written through :func:`commands.app.recording.records.record`
  (``record_lesson``, MCP, extraction), except importers' (they carry
  client event ids and keep every record). Two processes writing the same
  lesson at the same moment may both add it (the check is not serialised
  with the other's append).
"""

from __future__ import annotations

import math
from weakref import WeakKeyDictionary

from eventstore import SHOWN_STATES, EntryRecorded, EntryReinforced, now_micros
from projections import ViewReader, lesson_words

from .. import log as _log
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM

__all__ = ["WordSets", "find_copy", "jaccard", "reinforce_copy"]

# (id, source seq) -> word set, of the lessons already compared
WordSets = dict[tuple[str, int], frozenset[str]]
_CACHE: WeakKeyDictionary[Store, tuple[int, WordSets]] = WeakKeyDictionary()


def _word_sets(store: Store) -> WordSets:
    """The store's cached word sets, emptied when the ``system`` stream moved."""
    version = store.log.stream_version(SYSTEM_STREAM)
    cached = _CACHE.get(store)
    if cached is None or cached[0] != version:
        cached = (version, {})
        _CACHE[store] = cached
    return cached[1]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|`` (0 for two empty sets)."""
    common = len(a & b)
    union = len(a) + len(b) - common
    return common / union if union else 0.0


def find_copy(views: ViewReader, entry: EntryRecorded, threshold: float,
              cache: WordSets | None = None) -> tuple[str, float] | None:
    """The live lesson of ``entry``'s scope most similar to it, at or above
    ``threshold`` (ties: the lowest source seq), and the similarity; else None.
    ``cache``: word sets already known (read from the log otherwise, and kept there)."""
    words = lesson_words(entry.content)
    if not words or threshold <= 0:
        return None
    user = entry.user_id
    if user is None and entry.session_id is not None:
        session = views.session(entry.session_id)
        user = None if session is None else session.user_id
    n = len(words)
    low, high = math.ceil(threshold * n - 1e-9), math.floor(n / threshold + 1e-9)
    found = {(eid, seq) for eid, m, seq in views.scope_lessons(user, entry.agent_id) if low <= m <= high}
    known = {} if cache is None else cache
    missing = [key for key in found if key not in known]
    for (eid, seq), view in zip(missing, views.entries(e for e, _ in missing), strict=True):
        if view is not None and view.entry is not None and view.state in SHOWN_STATES:
            known[(eid, seq)] = lesson_words(view.entry.content)  # one batch read of the log
    held = _held_elsewhere(views, [eid for eid, _ in found], entry.session_id)
    best: tuple[str, float, int] | None = None
    for key in found:
        if key[0] in held:
            continue
        other = known.get(key)
        similarity = 0.0 if other is None else jaccard(words, other)
        if similarity >= threshold and (best is None or (similarity, -key[1]) > (best[1], -best[2])):
            best = (key[0], similarity, key[1])
    return None if best is None else (best[0], best[1])


def _held_elsewhere(views: ViewReader, ids: list[str], session_id: str | None) -> set[str]:
    """The lessons among ``ids`` a new lesson of ``session_id`` must not fold into:
    those of another session that is ephemeral (pruned in hours) or archived
    (out of search and context), so the user's write never goes with them."""
    out: set[str] = set()
    seen: dict[str, bool] = {}
    for eid in ids:
        stored = views.stored_entry(eid)
        sid = None if stored is None else stored.session_id
        if sid is None or sid == session_id:
            continue
        if sid not in seen:
            session = views.session(sid)
            seen[sid] = session is None or session.ephemeral or session.archived
        if seen[sid]:
            out.add(eid)
    return out


def reinforce_copy(store: Store, entry: EntryRecorded, actor: str | None = None) -> str | None:
    """When ``entry`` is a lesson close enough to a live lesson of its scope,
    append ``entry.reinforced`` to that lesson's stream and return its id;
    else None (the caller records ``entry``)."""
    threshold = store.settings.lesson_dedup_threshold
    if entry.kind != "lesson" or threshold <= 0:
        return None
    with store.read() as views:
        found = find_copy(views, entry, threshold, _word_sets(store))
        stored = None if found is None else views.stored_entry(found[0])
    if found is None or stored is None:
        return None
    eid, similarity = found
    stream = (f"session:{stored.session_id}" if stored.session_id else
              store.user_stream(stored.user_id) if stored.user_id else "project")
    event = EntryReinforced(entry_id=eid, at=now_micros(), by_entry_id=entry.entry_id,
                            similarity=min(1.0, round(similarity, 6)), session_id=entry.session_id)
    store.writer.append(stream, lambda: [event], actor=actor)
    _log.info("lesson reinforced", entry_id=eid, by_entry_id=entry.entry_id, similarity=event.similarity)
    return eid
