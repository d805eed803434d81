"""Idle and ephemeral sessions: auto-archive (seed 000), auto-restore
on a read, and the pruning of ephemeral sessions (seed 004).

A session's **activity** is the latest of its start, its last restore and its
last entry recorded (``SessionStats.last_activity``), all read from the views.

- :data:`archive_step`: a session (not archived) idle for ``archive_idle_days``
  is archived (``session.archived``, actor ``memlog/maintain``, a reason naming
  the idle days).
- :data:`ephemeral_step`: an ephemeral session (``start_session(...,
  ephemeral=True)``) idle for ``ephemeral_max_age_hours``, or past the newest
  ``ephemeral_max_count`` of them (the least recently active go first), is
  deleted through the privacy pipeline (tombstone, purge, verified report),
  reason ``retention: ephemeral ...``, then ``retention.applied`` records the
  policy (actor ``memlog/maintain``).
- :func:`~commands.app.sessions.lifecycle.restore_on_read`: a read naming an archived session (transcript,
  context, search with a session) restores it (``session.restored``, reason
  ``auto-restore: a read named the archived session``) when ``auto_restore`` is on; a read-only store
  skips the restore and reads as it is. A write restores through
  :meth:`~commands.app.store.writer.Writer.live_session`.

0 switches a threshold off. ``due`` reads the views only: the sessions'
manifests and statistics (no entry, no log).
"""

from __future__ import annotations

from eventstore import DeletionCriteria, RetentionApplied, SessionArchived
from projections import SessionView, ViewReader

from .. import log as _log
from ..forgetting.pipeline import run_deletions
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM
from .maintain import Due, Step, StepContext

__all__ = ["activity", "archive_step", "ephemeral_step"]

_HOUR = 3_600_000_000
_DAY = 24 * _HOUR
REQUESTED_BY = "retention"  # the deletions' requester, as retention by days has it


def activity(views: ViewReader, session: SessionView) -> int:
    """The time of a session's last activity: its start, last restore or last entry."""
    return max(session.started_at, session.restored_at, views.session_stats(session.session_id).last_activity)


# -- auto-archive -------------------------------------------------------------

def _idle(store: Store, now: int) -> dict[str, str]:
    """Sessions (not archived) idle past ``archive_idle_days`` -> the reason."""
    days = store.settings.archive_idle_days
    if not days:
        return {}
    cutoff = now - days * _DAY
    out = {}
    with store.read() as views:
        for view in views.sessions():
            if view.archived or max(view.started_at, view.restored_at) >= cutoff:
                continue
            last = activity(views, view)
            if last < cutoff:
                out[view.session_id] = (f"idle for {(now - last) // _DAY} days "
                                        f"(archive_idle_days={days})")
    return out


def _archive_due(store: Store, now: int) -> list[Due]:
    return [Due("archive", sid, reason) for sid, reason in _idle(store, now).items()]


def _archive_run(store: Store, due: Due, ctx: StepContext) -> int:
    if due.target not in _idle(store, ctx.now):
        return 0  # written to, archived or deleted since
    store.writer.append(f"session:{due.target}",
                        lambda: [SessionArchived(session_id=due.target, reason=due.reason)], actor=ctx.actor)
    _log.info("idle session archived", session_id=due.target)
    return 1


archive_step = Step("archive", _archive_due, _archive_run)


# -- ephemeral sessions -------------------------------------------------------

def _ephemeral(store: Store, now: int) -> dict[str, str]:
    """Ephemeral sessions past their age or count -> the reason."""
    hours, most = store.settings.ephemeral_max_age_hours, store.settings.ephemeral_max_count
    if not hours and not most:
        return {}
    with store.read() as views:
        found = [(activity(views, v), v.started_seq, v.session_id)
                 for sid in views.ephemeral_sessions() if (v := views.session(sid)) is not None]
    found.sort()
    out = {}
    if most and len(found) > most:
        for _, _, sid in found[: len(found) - most]:
            out[sid] = f"retention: ephemeral, over {most} sessions (ephemeral_max_count={most})"
    if hours:
        for last, _, sid in found:
            if last < now - hours * _HOUR:
                out[sid] = (f"retention: ephemeral, idle for {(now - last) // _HOUR} hours "
                            f"(ephemeral_max_age_hours={hours})")
    return out


def _ephemeral_due(store: Store, now: int) -> list[Due]:
    return [Due("ephemeral", sid, reason) for sid, reason in _ephemeral(store, now).items()]


def _ephemeral_run(store: Store, due: Due, ctx: StepContext) -> int:
    """One session: the batch of one (deletion.requested, entries.deleted,
    purge.completed, retention.applied); 0 when it is active again, or gone."""
    return _ephemeral_run_all(store, [due], ctx)


def _ephemeral_run_all(store: Store, dues: list[Due], ctx: StepContext) -> int:
    """Every due ephemeral session in one transaction of deletion requests (one
    per session, each with its reason) and one purge; then one
    ``retention.applied`` per session naming its request."""
    reasons = _ephemeral(store, ctx.now)
    sids = [d.target for d in dues if d.target in reasons]  # not active again, nor gone
    if not sids:
        return 0
    report, request_ids = run_deletions(
        store, [(DeletionCriteria(session_id=sid), reasons[sid]) for sid in sids], REQUESTED_BY,
        missing_ok=True)
    settings = store.settings
    policy = {"ephemeral_max_count": settings.ephemeral_max_count,
              "ephemeral_max_age_hours": settings.ephemeral_max_age_hours}
    applied = [RetentionApplied(as_of=ctx.now, policy={}, request_id=request_ids[i], scope=sids[i],
                                max_counts=policy) for i in sorted(request_ids)]
    store.writer.append(SYSTEM_STREAM, lambda: list(applied), actor=ctx.actor)
    _log.info("ephemeral sessions deleted", sessions=len(applied), request_id=report.request_id,
              verified=report.verified)
    return 2 * len(applied) + 1 + len(applied)  # requests and tombstones, purge.completed, retention.applied


ephemeral_step = Step("ephemeral", _ephemeral_due, _ephemeral_run, _ephemeral_run_all)
