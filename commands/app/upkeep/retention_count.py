"""Retention by count (seed 004): at most ``lesson_limit`` lessons per scope,
the oldest going first.

A scope is ``(user_id or "", agent_id or "")``, the one dedup of lessons uses:
the lesson's user (its own, else its session's) and its agent. The views keep
every scope's lesson count and its lessons by age (:mod:`projections.views.upkeep`),
so :data:`retention_count_step`'s ``due`` reads one small index. Its ``run``
deletes a scope's oldest lessons past the limit (by ``occurred_at``, then id)
as one deletion request with the reason ``retention`` through the privacy
pipeline (tombstone, purge, verified report), then records ``retention.applied``
with the policy (``max_counts={"lesson": N}``, the scope) as ``memlog/maintain``;
a run of ``memlog maintain`` takes every scope due in one such request (one
purge), with one ``retention.applied`` per scope.
Entries derived from a deleted lesson stay, as with retention by days.
``lesson_limit = 0`` switches it off.
"""

from __future__ import annotations

from eventstore import DeletionCriteria, RetentionApplied

from .. import log as _log
from ..forgetting.pipeline import run_deletion
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM
from .maintain import Due, Step, StepContext

__all__ = ["retention_count_step", "scope_label", "scopes_over"]

REQUESTED_BY = "retention"


def scope_label(user_id: str, agent_id: str) -> str:
    """A scope as targets and events name it: ``<user>/<agent>`` (empty parts when none)."""
    return f"{user_id}/{agent_id}"


def scopes_over(store: Store, limit: int | None = None) -> list[tuple[str, str, int]]:
    """(user, agent, lessons over the limit) of every scope past ``lesson_limit``."""
    most = store.settings.lesson_limit if limit is None else limit
    if not most:
        return []
    with store.read() as views:
        return [(u, a, n - most) for u, a, n in views.lesson_scopes() if n > most]


def _due(store: Store, now: int) -> list[Due]:
    limit = store.settings.lesson_limit
    return [Due("retention_count", scope_label(u, a),
                f"{over} lessons over lesson_limit={limit}", items=over)
            for u, a, over in scopes_over(store)]


def _run(store: Store, due: Due, ctx: StepContext) -> int:
    """One scope: the batch of one (deletion.requested, entries.deleted,
    purge.completed, retention.applied)."""
    return _run_all(store, [due], ctx)


def _run_all(store: Store, dues: list[Due], ctx: StepContext) -> int:
    """Every scope past the limit at once: one deletion request (one purge) for
    all their oldest lessons, then one ``retention.applied`` per scope naming it."""
    limit = store.settings.lesson_limit
    over = {scope_label(u, a): (u, a, n) for u, a, n in scopes_over(store)}
    scopes = [over[d.target] for d in dues if d.target in over]
    if not scopes:
        return 0
    with store.read() as views:
        ids = tuple(i for u, a, n in scopes for i in views.oldest_lessons(u, a, n))
    report = run_deletion(store, DeletionCriteria(ids=ids, include_derived=False), "retention",
                          REQUESTED_BY, False, missing_ok=True)
    applied = [RetentionApplied(as_of=ctx.now, policy={}, request_id=report.request_id,
                                max_counts={"lesson": limit}, scope=scope_label(u, a)) for u, a, _ in scopes]
    store.writer.append(SYSTEM_STREAM, lambda: list(applied), actor=ctx.actor)
    _log.info("retention by count applied", request_id=report.request_id, scopes=len(scopes),
              deleted=report.deleted, verified=report.verified)
    return 3 + len(applied)  # deletion.requested, entries.deleted, purge.completed, retention.applied each


retention_count_step = Step("retention_count", _due, _run, _run_all)
