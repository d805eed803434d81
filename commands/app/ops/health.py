"""Health and metrics of a store: aggregate numbers, ids at most, never content.

:func:`health` answers "is this store well?" in one read: the log head, a
verify of its tail, each projection's lag behind the head (read before
anything is caught up), sizes on disk, the last purge, compaction and flush,
pending purges, skipped events and the sessions over their size limit.
:func:`metrics_text` gives the same numbers, and this process's latency
histograms, in Prometheus text format.
"""

from __future__ import annotations

from typing import Any, Final

from eventstore import StorageError, format_micros

from ..forgetting import purging
from ..metrics import METRICS, render
from ..store.store import Store
from ..upkeep.compaction import sessions_over
from .admin import disk_sizes

__all__ = ["LAST_EVENTS", "TAIL", "health", "metrics_text"]

TAIL: Final = 1000  # records checked by the tail verify
# What health reports the last of: a name and the event type that records it.
LAST_EVENTS: Final = {
    "purge": "purge.completed", "compaction": "session.compacted", "summary": "session.summarised",
    "flush": "resource.flushed", "eviction": "resource.evicted",
    "retention": "retention.applied", "decay": "decay.applied",
}
_COUNTED: Final = {
    "memlog_deletions_total": "deletion.requested", "memlog_purges_total": "purge.completed",
    "memlog_compactions_total": "session.compacted", "memlog_summaries_total": "session.summarised",
    "memlog_flushes_total": "resource.flushed",
    "memlog_evictions_total": "resource.evicted",
}


def health(store: Store, tail: int = TAIL, session_limit: int | None = None) -> dict[str, Any]:
    """The store's health report (see the module); ``status`` is ``ok``,
    ``degraded`` (work waits: lag, pending purges, skipped events, sessions over
    their limit) or ``failing`` (the tail does not verify). ``session_limit``
    defaults to the setting ``session_limit_bytes``."""
    if session_limit is None:
        session_limit = store.settings.session_limit_bytes
    head = store.log.head()
    lag = _lag(store, head.seq)
    checked = store.log.verify_tail(tail)
    counters, skipped, over, problem = _from_views(store, session_limit)
    pending = purging.pending_purges(store)
    report: dict[str, Any] = {
        "head": {"seq": head.seq, "hash": head.hash,
                 "recorded_at": format_micros(head.recorded_at) if head.seq else None},
        "verify_tail": {"ok": checked.ok, "checked": checked.events,
                        "first_bad_seq": checked.first_bad_seq, "problem": checked.problem},
        "lag": lag, "bytes_on_disk": disk_sizes(store),
        "last": {name: _last(store, counters.get(f"last:{kind}")) for name, kind in LAST_EVENTS.items()},
        "pending_purges": pending, "skipped_events": skipped,
        "sessions_over_limit": {"limit_bytes": session_limit, "count": len(over), "ids": over[:20]},
        "views_error": problem,
    }
    report["status"] = _status(report)
    return report


def _from_views(store: Store, limit: int) -> tuple[dict[str, int], int, list[str], str | None]:
    """Counters, skipped events and sessions over ``limit`` from the caught-up
    views; a log the views cannot catch up on gives its error (code and seq)."""
    try:
        with store.read() as views:
            counters, skipped = views.counters(), len(views.skipped())
        return counters, skipped, [sid for sid, _ in sessions_over(store, limit)], None
    except StorageError as exc:
        return {}, 0, [], f"{exc.code}: {exc.message}"


def metrics_text(store: Store) -> str:
    """Prometheus text: the store's counts, sizes and lag, and this process's histograms."""
    head = store.log.head().seq
    lag = _lag(store, head)
    with store.read() as views:
        counters = views.counters()
    series: dict[str, dict[str, float]] = {
        "memlog_events_total": {f'type="{k[5:]}"': v for k, v in counters.items() if k.startswith("type:")},
        "memlog_entries": {f'kind="{k[5:]}"': v for k, v in counters.items() if k.startswith("kind:")},
        "memlog_bytes": {f'part="{k}"': v for k, v in disk_sizes(store).items()},
        "memlog_projection_lag_events": {f'projection="{k}"': v for k, v in lag.items() if v is not None},
        "memlog_head_seq": {"": head},
    }
    for name, kind in _COUNTED.items():
        series[name] = {"": counters.get(f"type:{kind}", 0)}
    return render(series, METRICS)


def _lag(store: Store, head: int) -> dict[str, int | None]:
    """How far each projection is behind ``head``, before any catch-up (None: not built yet)."""
    proj = store.proj
    views = None if proj.views is None else head - proj.views.checkpoint()
    search = None if proj.search_index is None else head - proj.search_index.checkpoint()
    vectors = None if proj.vectors is None else head - proj.vectors.checkpoint()
    return {"views": views, "search": search, "vectors": vectors}


def _last(store: Store, seq: int | None) -> dict[str, Any] | None:
    if not seq:
        return None
    return {"seq": seq, "at": format_micros(store.log.get(seq).recorded_at)}


def _status(report: dict[str, Any]) -> str:
    if not report["verify_tail"]["ok"] or report["views_error"]:
        return "failing"
    waiting = (report["pending_purges"]["pending"] or report["skipped_events"]
               or report["sessions_over_limit"]["count"])
    return "degraded" if waiting else "ok"
