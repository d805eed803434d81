"""Compaction (seed 000): a session that reaches 90% of its size limit keeps its
most relevant entries and folds the rest into one summary entry.

- **Size.** A session's size is the content bytes (UTF-8) of its shown entries
  (live or redacted), as the views' session statistics keep it on every event;
  the limit is ``session_limit_bytes`` (10 MiB by default).
- **Trigger.** At ``compact_at`` (90%) of the limit: on a write to the session
  when ``auto_compact`` is on (:mod:`commands.app.upkeep.watch`), or on
  demand (:func:`compact`, ``memlog compact``).
- **Relevance.** Seed 000's blend as search ranks entries without a query
  (:func:`projections.score`): ``0.4 x 1 + 0.3 x decay factor + 0.2 x
  importance + 0.1 x access recency`` at the time of the compaction. The decay
  factor is ``exp(-rate_kind x age_hours)`` boosted by accesses and
  importance, with the decay parameters in force; importance is the entry's
  own, else by kind (decisions first), raised by impact or severity.
- **Policy.** Entries are taken most relevant first (ties: the newer) and kept
  while they fit in ``compact_keep`` (80%) of the session's bytes: the first
  that does not fit and every less relevant one (at least 20% of the bytes)
  leave the session.
- **Summariser input.** The summariser is given the removed entries' texts in
  the session's order, at most ``summary_input_chars`` (256 KiB, about 64k
  tokens: what an LLM's context holds) in all: over that, each text keeps its
  beginning (people state the point first), the short ones whole and the
  long ones cut to an equal share at a word boundary (:func:`fit_texts`).
- **Events.** One append to the session's stream: the summary
  (``entry.recorded``, kind ``summary``, ``derived_from`` the removed ids, text
  from the :data:`~commands.app.upkeep.summariser.Summariser`) and ``session.compacted``
  (bytes before and after, removed ids, summary id, policy). The removed
  entries stay in the log (``show`` and ``audit history`` name the
  compaction), leave search, the context and the session's statistics.

Nothing here logs content: ids and counts only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eventstore import ConcurrencyError, ReadOnlyError, SessionCompacted, SessionNotFoundError, now_micros
from projections import DecayParams, StoredEntry, ViewReader, entry_importance, score

from .. import log as _log
from ..store.settings import Settings
from ..store.store import Store
from ..store.validate import check_id
from .summariser import Summariser, check_summary

__all__ = ["ACTOR", "CompactionReport", "compact", "compact_session", "fit_texts", "policy_of",
           "sessions_over", "summarise_texts", "threshold_bytes"]

ACTOR = "memlog/maintain"
_RETRIES = 5


@dataclass(frozen=True)
class CompactionReport:
    """What a compaction did (or, dry, would do) to one session: ids and sizes, no content."""

    session_id: str
    compacted: bool
    dry_run: bool
    bytes_before: int
    bytes_after: int
    limit: int
    threshold: int
    removed_ids: tuple[str, ...]
    kept: int
    policy: str
    summary_id: str | None = None
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready builtins."""
        out = asdict(self)
        out["removed_ids"] = list(self.removed_ids)
        return out


@dataclass(frozen=True)
class _Plan:
    bytes_before: int
    kept_bytes: int
    kept: int
    removed: tuple[str, ...]


def threshold_bytes(settings: Settings) -> int:
    """The size at which a session compacts (90% of its limit by default)."""
    return int(settings.session_limit_bytes * settings.compact_at)


def policy_of(settings: Settings) -> str:
    """The policy as ``session.compacted`` records it."""
    return (f"relevance keep={settings.compact_keep:g} at={settings.compact_at:g} "
            f"limit={settings.session_limit_bytes}")


def sessions_over(store: Store, limit: int | None = None) -> list[tuple[str, int]]:
    """(session id, bytes) of every session at or over ``limit`` bytes (default:
    the compaction threshold), in id order."""
    bound = threshold_bytes(store.settings) if limit is None else limit
    with store.read() as views:
        sized = ((s.session_id, views.session_stats(s.session_id).bytes) for s in views.sessions())
        return [(sid, size) for sid, size in sized if size >= bound]


def compact(store: Store, summariser: Summariser, session_id: str | None = None,
            dry_run: bool = False) -> list[CompactionReport]:
    """Compact one session (now, whatever its size) or every session at or over
    the threshold; ``dry_run`` reports what would go and writes nothing."""
    if not dry_run:
        store.check_writable("a compaction")
    if session_id is not None:
        return [compact_session(store, summariser, check_id(session_id, "session id"), dry_run)]
    return [compact_session(store, summariser, sid, dry_run) for sid, _ in sessions_over(store)]


def compact_session(store: Store, summariser: Summariser, session_id: str,
                    dry_run: bool = False) -> CompactionReport:
    """Plan against the views, summarise the removed entries, and append the
    summary and ``session.compacted`` with the stream's expected version (a
    concurrent writer makes it plan again)."""
    settings = store.settings
    stream = f"session:{session_id}"
    for attempt in range(_RETRIES):
        version = store.log.stream_version(stream)
        with store.read() as views:
            if views.session(session_id) is None:
                raise SessionNotFoundError(f"session {session_id} not found")
            plan = _plan(views, settings, session_id, now_micros())
            texts = _texts(views, plan.removed) if plan.removed and not dry_run else []
        report = _report(settings, session_id, plan, dry_run)
        if dry_run or not plan.removed:
            return report
        if store.read_only:
            raise ReadOnlyError("the store is open read-only; compaction appends to the log")
        text = summarise_texts(summariser, texts, settings.summary_input_chars)
        summary = store.entries.build("summary", text, session_id=session_id, derived_from=plan.removed)
        after = plan.kept_bytes + len(summary.content.encode())
        event = SessionCompacted(session_id=session_id, policy=report.policy, removed_entry_ids=plan.removed,
                                 summary_entry_id=summary.entry_id, bytes_before=plan.bytes_before,
                                 bytes_after=after)
        try:
            result = store.log.append(stream, [summary, event], actor=ACTOR, expected_version=version)
        except ConcurrencyError:
            if attempt == _RETRIES - 1:
                raise
            continue
        _log.info("session compacted", session_id=session_id, removed=len(plan.removed),
                  summary_id=summary.entry_id, bytes_before=plan.bytes_before, bytes_after=after)
        return CompactionReport(**{**asdict(report), "compacted": True, "bytes_after": after,
                                   "summary_id": summary.entry_id, "seq": result.first_seq})
    raise AssertionError("unreachable")


def _report(settings: Settings, session_id: str, plan: _Plan, dry_run: bool) -> CompactionReport:
    return CompactionReport(
        session_id=session_id, compacted=False, dry_run=dry_run, bytes_before=plan.bytes_before,
        bytes_after=plan.kept_bytes if plan.removed else plan.bytes_before,
        limit=settings.session_limit_bytes, threshold=threshold_bytes(settings), removed_ids=plan.removed,
        kept=plan.kept, policy=policy_of(settings))


def _plan(views: ViewReader, settings: Settings, session_id: str, now: int) -> _Plan:
    """Which entries stay: the most relevant, while they fit in ``compact_keep``
    of the session's bytes (read without any content)."""
    stored = list(views.session_stored(session_id))
    total = sum(s.size for s in stored)
    params = views.decay_params()
    accessed = views.any_access()
    ranked = sorted(stored, key=lambda s: (-_relevance(views, s, params, now, accessed), -s.occurred_at,
                                           s.entry_id))
    budget = int(total * settings.compact_keep)
    kept_bytes = 0
    kept = 0
    for entry in ranked:  # a prefix of the ranking: the first that does not fit ends it
        if kept_bytes + entry.size > budget:
            break
        kept_bytes += entry.size
        kept += 1
    gone = {s.entry_id for s in ranked[kept:]}
    removed = tuple(s.entry_id for s in stored if s.entry_id in gone)
    return _Plan(total, kept_bytes, len(stored) - len(removed), removed)


def _relevance(views: ViewReader, stored: StoredEntry, params: DecayParams, now: int,
               accessed: bool) -> float:
    """Seed 000's blend of an entry without a query (text counts as a full match)."""
    access = views.access(stored.entry_id) if accessed else None
    count, last = (access.count, access.last_at) if access is not None else (0, 0)
    blend, _ = score(1.0, 1.0, stored.kind, stored.occurred_at, now, count, last,
                     entry_importance(stored), params)
    return blend


def _texts(views: ViewReader, ids: Sequence[str]) -> list[str]:
    """The removed entries' contents, in the session's order."""
    return [v.entry.content for v in views.entries(ids) if v is not None and v.entry is not None]


def fit_texts(texts: Sequence[str], limit: int) -> list[str]:
    """``texts`` within ``limit`` characters in all: unchanged when they fit,
    else the short ones whole and the others cut to an equal share of what is
    left, each keeping its beginning (cut at a word boundary)."""
    if sum(len(t) for t in texts) <= limit:
        return list(texts)
    out = list(texts)
    left = limit
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for done, i in enumerate(order):
        share = left // (len(order) - done)
        if len(out[i]) > share:
            head = out[i][:share]
            out[i] = head.rsplit(" ", 1)[0] if " " in head else head
        left -= len(out[i])
    return [t for t in out if t.strip()]


def summarise_texts(summariser: Summariser, texts: Sequence[str], limit: int) -> str:
    """The summariser's text for ``texts`` (fitted to ``limit`` characters), checked."""
    return check_summary(summariser(fit_texts(texts, limit)))
