"""Use cases that forget: delete, forget, redact, retention, purge, and the ledger."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eventstore import ENTRY_KINDS, DeletionCriteria, InvalidInputError, MemoryNotFoundError, now_micros
from eventstore.timeutil import MAX_MICROS
from projections import DeletionRecord

from ..results import DeletionReport
from ..store.redaction import PATTERNS, Redactor
from ..store.store import Store
from ..store.validate import (
    check_choice,
    check_content,
    check_flag,
    check_id,
    check_ids,
    check_key,
    check_labels,
    to_time,
)
from .pipeline import counts_by_kind, expired, requester, run_deletion, run_redaction, run_retention
from .purging import purge_deferred
from .selection import check_honourable, select

__all__ = ["criteria_of", "delete", "deletions", "forget", "preview", "purge", "redact", "retention",
           "retention_due"]

_MAX_DAYS = MAX_MICROS // 86_400_000_000  # 1970 to the end of 9999, as retention.applied takes it


def delete(store: Store, *, ids: Iterable[str] | None = None, session_id: str | None = None,
           user_id: str | None = None, kinds: Iterable[str] | None = None,
           tags: Iterable[str] | None = None, before: Any = None, after: Any = None,
           reason: str, requested_by: str, include_derived: bool = True,
           defer: bool = False, dry_run: bool = False) -> DeletionReport:
    """Delete what every criterion given selects together, then purge (unless deferred).

    Ids alone, or a scope (a session, a user, both, or the whole store)
    narrowed by kinds, tags, before and after: see
    :func:`commands.app.forgetting.selection.select`. Entries derived from a deleted one
    (``derived_from``) go too, unless ``include_derived=False``. With
    ``dry_run`` nothing is written: the report lists the ids that would go
    (``request_id`` empty, ``seq`` the log head it read).
    """
    criteria = criteria_of(ids=ids, session_id=session_id, user_id=user_id, kinds=kinds, tags=tags,
                           before=before, after=after, include_derived=include_derived)
    why, who = _reason(store, reason), check_id(requested_by, "requested_by")
    if check_flag(dry_run, "dry_run"):
        return preview(store, criteria)
    return run_deletion(store, criteria, why, who, check_flag(defer, "defer"))


def criteria_of(*, ids: Iterable[str] | None = None, session_id: str | None = None,
                user_id: str | None = None, kinds: Iterable[str] | None = None,
                tags: Iterable[str] | None = None, before: Any = None, after: Any = None,
                include_derived: bool = True) -> DeletionCriteria:
    """A deletion request's criteria, checked (nothing named, or ids with other
    criteria, is refused: :func:`commands.app.forgetting.selection.check_honourable`)."""
    criteria = DeletionCriteria(
        ids=check_ids(ids, "ids"),
        session_id=None if session_id is None else check_id(session_id, "session id"),
        user_id=None if user_id is None else check_id(user_id, "user id"),
        kinds=tuple(check_choice(k, "type", ENTRY_KINDS) for k in (kinds or ())),  # type: ignore[misc]
        tags=check_labels(tags, "tags"), before=to_time(before, "before"),
        after=to_time(after, "after"), include_derived=check_flag(include_derived, "include_derived"),
    )
    check_honourable(criteria)
    return criteria


def preview(store: Store, criteria: DeletionCriteria) -> DeletionReport:
    """What a deletion with these criteria would take now; writes nothing."""
    with store.read() as views:
        sel = select(views, criteria)
    head = store.log.head().seq
    refs = tuple(sel.refs.values())
    return DeletionReport(request_id="", deleted=len(refs), ids=tuple(sel.refs), purged=False, seq=head,
                          counts_by_kind=counts_by_kind(refs), dry_run=True)

def forget(store: Store, user_id: str, key: str, requested_by: str | None = None) -> DeletionReport:
    """Forget a user memory by key, through the deletion pipeline (every saved version)."""
    uid, k = check_id(user_id, "user id"), check_key(key)
    with store.read() as views:
        found = [m for m in views.memories(uid) if m.key == k]
    if not found:
        raise MemoryNotFoundError(f"user {uid} has no memory under key {k}")
    criteria = DeletionCriteria(ids=(found[0].memory_id,))
    # the user, or any user of the store, is kept as its pseudonym (:mod:`.pseudonym`)
    who = requester(store, check_id(requested_by or uid, "requested_by"), uid)
    return run_deletion(store, criteria, "forgotten at the user's request", who, False)

def redact(store: Store, entry_id: str, *, patterns: Iterable[str] | None = None,
           regex: str | None = None, reason: str, requested_by: str,
           defer: bool = False) -> DeletionReport:
    """Remove spans (email, api_key, password, or a regex) from a stored entry, for good."""
    kinds = tuple(check_choice(p, "pattern", PATTERNS) for p in (patterns or ()))
    if not kinds and regex is None:
        kinds = tuple(PATTERNS)
    redactor = Redactor(kinds, {"custom": regex} if regex else None)
    return run_redaction(store, check_id(entry_id, "entry id"), redactor, _reason(store, reason),
                         check_id(requested_by, "requested_by"), check_flag(defer, "defer"))

def retention(store: Store, as_of: Any = None, days: dict[str, int] | None = None,
              defer: bool = False) -> DeletionReport | None:
    """Apply per-kind retention (days) as deletions with the reason "retention"."""
    return run_retention(store, *_retention_policy(store, as_of, days), check_flag(defer, "defer"))


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
