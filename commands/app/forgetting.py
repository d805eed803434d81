"""Use cases that forget: delete, forget, redact, retention, purge, and the ledger."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eventstore import ENTRY_KINDS, DeletionCriteria, InvalidInputError, MemoryNotFoundError, now_micros
from eventstore.timeutil import MAX_MICROS
from projections import DeletionRecord

from .privacy import expired, run_deletion, run_redaction, run_retention
from .purging import purge_deferred
from .redaction import PATTERNS, Redactor
from .results import DeletionReport
from .store import Store
from .validate import check_choice, check_content, check_id, check_ids, check_key, check_labels, to_time

__all__ = ["delete", "deletions", "forget", "purge", "redact", "retention"]

_MAX_DAYS = MAX_MICROS // 86_400_000_000  # 1970 to the end of 9999, as retention.applied takes it


def delete(store: Store, *, ids: Iterable[str] | None = None, session_id: str | None = None,
           user_id: str | None = None, kinds: Iterable[str] | None = None,
           tags: Iterable[str] | None = None, before: Any = None, after: Any = None,
           reason: str, requested_by: str, include_derived: bool = True,
           defer: bool = False) -> DeletionReport:
    """Delete by ids, by session, by user, or by criteria; then purge (unless deferred).

    Entries derived from a deleted one (``derived_from``) go too, unless
    ``include_derived=False``.
    """
    criteria = DeletionCriteria(
        ids=check_ids(ids, "ids"),
        session_id=None if session_id is None else check_id(session_id, "session id"),
        user_id=None if user_id is None else check_id(user_id, "user id"),
        kinds=tuple(check_choice(k, "type", ENTRY_KINDS) for k in (kinds or ())),  # type: ignore[misc]
        tags=check_labels(tags, "tags"), before=to_time(before, "before"),
        after=to_time(after, "after"), include_derived=bool(include_derived),
    )
    if criteria == DeletionCriteria(include_derived=criteria.include_derived):
        raise InvalidInputError("say what to delete: ids, a session, a user or criteria")
    return run_deletion(store, criteria, _reason(store, reason), check_id(requested_by, "requested_by"),
                        defer)

def forget(store: Store, user_id: str, key: str, requested_by: str | None = None) -> DeletionReport:
    """Forget a user memory by key, through the deletion pipeline (every saved version)."""
    uid, k = check_id(user_id, "user id"), check_key(key)
    with store.read() as views:
        found = [m for m in views.memories(uid) if m.key == k]
    if not found:
        raise MemoryNotFoundError(f"user {uid} has no memory under key {k}")
    criteria = DeletionCriteria(ids=(found[0].memory_id,))
    return run_deletion(store, criteria, "forgotten at the user's request",
                        check_id(requested_by or uid, "requested_by"), False)

def redact(store: Store, entry_id: str, *, patterns: Iterable[str] | None = None,
           regex: str | None = None, reason: str, requested_by: str,
           defer: bool = False) -> DeletionReport:
    """Remove spans (email, api_key, password, or a regex) from a stored entry, for good."""
    kinds = tuple(check_choice(p, "pattern", PATTERNS) for p in (patterns or ()))
    if not kinds and regex is None:
        kinds = tuple(PATTERNS)
    redactor = Redactor(kinds, {"custom": regex} if regex else None)
    return run_redaction(store, check_id(entry_id, "entry id"), redactor, _reason(store, reason),
                         check_id(requested_by, "requested_by"), defer)

def retention(store: Store, as_of: Any = None, days: dict[str, int] | None = None,
              defer: bool = False) -> DeletionReport | None:
    """Apply per-kind retention (days) as deletions with the reason "retention"."""
    return run_retention(store, *_retention_policy(store, as_of, days), defer)


def retention_due(store: Store, as_of: Any = None, days: dict[str, int] | None = None) -> dict[str, str]:
    """What :func:`retention` would delete (id -> kind); writes nothing."""
    return expired(store, *_retention_policy(store, as_of, days))


def _retention_policy(store: Store, as_of: Any, days: dict[str, int] | None) -> tuple[int, dict[str, int]]:
    """The retention's time and its days by kind, checked."""
    when = to_time(as_of, "as_of") or now_micros()
    policy = dict(store.settings.retention_days if days is None else days)
    for kind, value in policy.items():
        check_choice(kind, "kind", ENTRY_KINDS)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_DAYS:
            raise InvalidInputError(f"retention days for {kind} must be an integer from 0 to {_MAX_DAYS}")
    return when, policy

def purge(store: Store) -> DeletionReport | None:
    """Run every deferred purge now; None when nothing is pending."""
    return purge_deferred(store)

def deletions(store: Store) -> list[DeletionRecord]:
    """The deletion ledger: every request, its tombstone and its purge."""
    with store.read() as views:
        return views.deletions()


def _reason(store: Store, reason: object) -> str:
    """The request's reason, checked and (when ingest redaction is on) redacted."""
    text = check_content(reason, "reason", 2000).strip()
    redactor = store.entries.redactor
    return text if redactor is None else redactor.redact(text, {})
