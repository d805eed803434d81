"""The maintenance steps of the life-cycle issue (compaction, memory resources),
retention by days, and the list ``memlog maintain`` runs, in order (see
:mod:`commands.app.upkeep.maintain`).

Each ``due`` reads the views only: the sessions' statistics for compaction,
for resources the oldest item of each instance whose spec has a TTL, and for
retention every stored entry's kind and ``occurred_at`` (no content).
"""

from __future__ import annotations

from eventstore import PurgeUnverifiedError

from ..forgetting.requests import retention, retention_due
from ..forgetting.shared_purge import purge_due, purge_shared
from ..resources.reading import specs
from ..store.store import Store
from .compaction import compact_session, sessions_over, threshold_bytes
from .extraction import extraction_step
from .idle import archive_step, ephemeral_step
from .maintain import Due, Step, StepContext
from .resources import ResourceHandle
from .retention_count import retention_count_step

__all__ = ["COMPACTION_STEP", "REFIT_STEP", "RESOURCE_STEP", "RETENTION_STEP", "SHARED_PURGE_STEP",
           "default_steps"]


def _compaction_due(store: Store, now: int) -> list[Due]:
    bound = threshold_bytes(store.settings)
    return [Due("compaction", sid, f"{size} bytes, at or over {bound} "
                f"({store.settings.compact_at:.0%} of the {store.settings.session_limit_bytes}-byte limit)")
            for sid, size in sessions_over(store, bound)]


def _compact(store: Store, due: Due, context: StepContext) -> int:
    report = compact_session(store, context.summariser, due.target)
    return 2 if report.compacted else 0  # the summary and session.compacted


COMPACTION_STEP = Step("compaction", _compaction_due, _compact)


def _resource_due(store: Store, now: int) -> list[Due]:
    out: list[Due] = []
    with store.read() as views:
        by_id = specs(store.settings.resources, views)
        for key in views.resource_keys():
            state = views.resource_state(key)
            spec = None if state is None else by_id.get(state.resource_id)
            if state is None or spec is None or spec.ttl_seconds is None:
                continue
            cutoff = now - spec.ttl_seconds * 1_000_000
            stored = (views.stored_entry(i.entry_id) for i in state.items)
            old = sum(1 for s in stored if s is not None and s.state in ("live", "redacted")
                      and s.occurred_at < cutoff)
            if old:
                out.append(Due("resources", key, f"resource {spec.id}: {old} item(s) past the "
                               f"{spec.ttl_seconds}-second TTL", items=old))
    return out


def _tidy(store: Store, due: Due, context: StepContext) -> int:
    with store.read() as views:
        state = views.resource_state(due.target)
        spec = None if state is None else specs(store.settings.resources, views).get(state.resource_id)
    if spec is None:
        return 0
    return ResourceHandle.at_key(store, spec, due.target, context.summariser).tidy(context.actor)


RESOURCE_STEP = Step("resources", _resource_due, _tidy)


def _retention_due(store: Store, now: int) -> list[Due]:
    """One item per kind with entries older than its ``retention_days`` as of ``now``."""
    days = store.settings.retention_days
    by_kind: dict[str, list[str]] = {}
    for entry_id, kind in retention_due(store, as_of=now).items():
        by_kind.setdefault(kind, []).append(entry_id)
    return [Due("retention", kind, f"{len(ids)} {kind} entr{'y' if len(ids) == 1 else 'ies'} older "
                f"than {days[kind]} days (retention_days.{kind})", items=len(ids), ids=ids)
            for kind, ids in sorted(by_kind.items())]


def _retain(store: Store, due: Due, context: StepContext) -> int:
    """One kind's expired entries (the policy of that kind alone)."""
    return _retained(store, context, {due.target: store.settings.retention_days[due.target]})


def _retain_all(store: Store, dues: list[Due], context: StepContext) -> int:
    """Every kind at once: ``retention`` by the whole policy in force, one
    deletion request (one purge) with the reason "retention"."""
    return _retained(store, context, None)


def _retained(store: Store, context: StepContext, days: dict[str, int] | None) -> int:
    report = retention(store, as_of=context.now, days=days)
    if report is None:
        return 1  # retention.applied alone: what was due went meanwhile
    if report.verified is False:
        raise PurgeUnverifiedError(f"the purge of {report.request_id} is not verified: "
                                   "run `memlog audit deletions` to see what was found where")
    return 4  # deletion.requested, entries.deleted, purge.completed, retention.applied


RETENTION_STEP = Step("retention", _retention_due, _retain, _retain_all)


def _refit_due(store: Store, now: int) -> list[Due]:
    proj = store.proj
    head = store.log.head().seq
    if not proj.refit_due(head):
        return []
    return [Due("search_refit", "search", f"{proj.shard_count} search shard(s); a {head}-event log "
                f"fits {proj.wanted_shards(head)}", items=head)]


def _refit(store: Store, due: Due, context: StepContext) -> int:
    store.proj.refit()
    return 0  # a replay of the projections writes no event


REFIT_STEP = Step("search_refit", _refit_due, _refit)


def _shared_purge_due(store: Store, now: int) -> list[Due]:
    waiting = purge_due(store)
    return [Due("shared_purge", "projections", f"{waiting} system event(s) of the shared log "
                "not purged for on this host", items=waiting)] if waiting else []


def _shared_purge(store: Store, due: Due, context: StepContext) -> int:
    purge_shared(store)
    return 0  # a local purge of the projections writes no event


SHARED_PURGE_STEP = Step("shared_purge", _shared_purge_due, _shared_purge)


def default_steps() -> list[Step]:
    """The steps ``memlog maintain`` runs, in order (first this host's purge of
    the deletions other hosts made on a shared log; the search refit last: it
    replays what the steps before wrote)."""
    return [SHARED_PURGE_STEP, extraction_step, COMPACTION_STEP, RESOURCE_STEP, RETENTION_STEP,
            retention_count_step, ephemeral_step, archive_step, REFIT_STEP]

