"""Forgetting for real: deletion, redaction and retention, each ending in a purge.

The flow of a deletion (DESIGN section 5):

1. ``deletion.requested`` and the tombstone ``entries.deleted`` are appended in
   one transaction; the erased payloads are deleted right after it commits;
2. the purge rewrites the log's payload segments that held them (compacting
   copy, swap, zero-fill), the views when the request touched memories or
   sessions (the only content they hold), and every search shard that held a
   deleted entry (rebuilt into a fresh directory, swapped in, the old files
   zero-filled);
3. a forensic scan reads every file under the data directory that could hold
   the deleted content (all but the payload segments and search shards the
   purge did not rewrite, see :func:`commands.app.scan.purge_scope`), looking for
   it (kept in memory only, never written);
4. ``purge.completed`` records what was rewritten and the scan's result.

Nothing here logs or returns content: reports hold ids, counts and reasons.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import msgspec

from eventstore import (
    SHOWN_STATES,
    AppendRequest,
    DeletedRef,
    DeletionCriteria,
    DeletionRequested,
    EntriesDeleted,
    EntryNotFoundError,
    EntryRecorded,
    EntryRedacted,
    InvalidInputError,
    PurgeCompleted,
    PurgeReport,
    RedactionNote,
    RetentionApplied,
    SessionNotFoundError,
    entry_texts,
    map_texts,
)
from projections import EntryView, StoredEntry, ViewReader

from . import log as _log
from .entries import new_id
from .redaction import Redactor
from .scan import purge_scope, scan_needles
from .search import find, make_query
from .store import Store

__all__ = [
    "DeletionReport",
    "Selection",
    "purge_pending",
    "run_deletion",
    "run_redaction",
    "run_retention",
    "select",
]


MIN_NEEDLE = 32


class DeletionReport(msgspec.Struct, frozen=True):
    """The outcome of a deletion: ids, counts and the purge, never content."""

    request_id: str
    deleted: int
    ids: tuple[str, ...]
    purged: bool
    seq: int
    erased_seqs: tuple[int, ...] = ()
    counts_by_kind: dict[str, int] = {}
    pending: bool = False
    verified: bool | None = None
    bytes_scanned: int = 0
    files_rewritten: tuple[str, ...] = ()
    seconds: dict[str, float] = {}


class Selection:
    """What a request selects: refs for the tombstone, seqs to erase, needles to scan for."""

    def __init__(self) -> None:
        self.refs: dict[str, DeletedRef] = {}
        self.seqs: set[int] = set()
        self.needles: set[bytes] = set()

    def add_entry(self, view: EntryView) -> None:
        self.refs[view.entry_id] = DeletedRef(view.entry_id, view.kind, view.recorded_seq, view.session_id)
        self.seqs.add(view.recorded_seq)
        if view.redacted is not None:
            self.seqs.add(view.redacted.seq)
        if view.entry is not None:
            for text in entry_texts(view.entry):
                self.needle(text)

    def needle(self, text: str) -> None:
        raw = text.encode()
        # Short strings turn up elsewhere by chance (in a million notes, a
        # four-word phrase often does), which would fail an honest purge.
        if len(raw) >= MIN_NEEDLE:
            self.needles.add(raw)


def select(views: ViewReader, criteria: DeletionCriteria) -> Selection:
    """Resolve a request against the current views."""
    sel = Selection()
    for item in criteria.ids:
        _select_id(views, sel, item)
    if criteria.session_id is not None:
        _select_session(views, sel, criteria.session_id)
    if criteria.user_id is not None:
        _select_user(views, sel, criteria.user_id)
    if criteria.kinds or criteria.tags or criteria.before is not None or criteria.after is not None:
        for view in views.latest_entries(lambda stored: _may_match(stored, criteria)):
            if _matches(view, criteria):
                sel.add_entry(view)
    if criteria.include_derived:
        _add_derived(views, sel)
    return sel


def _select_id(views: ViewReader, sel: Selection, item: str) -> None:
    view = views.entry(item)
    if view is not None and view.state != "deleted":
        sel.add_entry(view)
        return
    memory = views.memory_by_id(item)
    if memory is None:
        raise EntryNotFoundError(f"nothing to delete with id {item}")
    _select_memory(views, sel, memory.user_id, memory.key)


def _select_memory(views: ViewReader, sel: Selection, user_id: str, key: str) -> None:
    for version in views.memory_versions(user_id, key):
        sel.refs[version.memory_id] = DeletedRef(version.memory_id, "memory", version.saved_seq)
        sel.seqs.add(version.saved_seq)
        if version.content:
            sel.needle(version.content)


def _select_session(views: ViewReader, sel: Selection, session_id: str) -> None:
    session = views.session(session_id)
    if session is None:
        raise SessionNotFoundError(f"session {session_id} not found")
    sel.refs[session_id] = DeletedRef(session_id, "session", session.started_seq)
    sel.seqs.add(session.started_seq)
    for value in session.metadata.values():
        sel.needle(value)
    for view in views.latest_entries(lambda s: s.session_id == session_id and s.state != "deleted"):
        sel.add_entry(view)


def _select_user(views: ViewReader, sel: Selection, user_id: str) -> None:
    for session in list(views.sessions()):
        if session.user_id == user_id:
            _select_session(views, sel, session.session_id)
    for view in views.latest_entries(lambda s: s.user_id == user_id and s.state != "deleted"):
        sel.add_entry(view)
    for memory in views.memories(user_id, include_gone=True):
        _select_memory(views, sel, user_id, memory.key)


def _may_match(stored: StoredEntry, c: DeletionCriteria) -> bool:
    """The criteria a stored version answers without its content (all but tags)."""
    if stored.state == "deleted" or (c.kinds and stored.kind not in c.kinds):
        return False
    if c.before is not None and stored.occurred_at >= c.before:
        return False
    return not (c.after is not None and stored.occurred_at < c.after)


def _matches(view: EntryView, c: DeletionCriteria) -> bool:
    if view.entry is None or view.state == "deleted":
        return False
    if c.kinds and view.kind not in c.kinds:
        return False
    if c.tags and not set(c.tags) & set(view.entry.tags):
        return False
    if c.before is not None and view.occurred_at >= c.before:
        return False
    return not (c.after is not None and view.occurred_at < c.after)


def _add_derived(views: ViewReader, sel: Selection) -> None:
    queue = [r.entry_id for r in sel.refs.values() if r.kind not in ("memory", "session")]
    while queue:
        for child in views.derived_from(queue.pop()):
            view = views.entry(child)
            if child not in sel.refs and view is not None and view.state != "deleted":
                sel.add_entry(view)
                queue.append(child)


def run_deletion(store: Store, criteria: DeletionCriteria, reason: str, requested_by: str,
                 defer: bool) -> DeletionReport:
    """Append the request and tombstone (erasing payloads), then purge unless deferred."""
    with store.read() as views:
        sel = select(views, criteria)
    if not sel.refs:
        raise InvalidInputError("the request selects nothing to delete")
    request_id = new_id("del")
    counts: dict[str, int] = {}
    for ref in sel.refs.values():
        counts[ref.kind] = counts.get(ref.kind, 0) + 1
    seqs = tuple(sorted(sel.seqs))
    ids = tuple(sel.refs)
    tombstone = EntriesDeleted(request_id=request_id, entry_ids=ids, erased_seqs=seqs,
                               counts_by_kind=counts, refs=tuple(sel.refs.values()))
    asked = DeletionRequested(request_id=request_id, criteria=criteria, reason=reason,
                              requested_by=requested_by)
    results = store.log.append_many([AppendRequest("system", [asked], requested_by),
                                   AppendRequest("system", [tombstone], requested_by, erases=seqs)])
    _log.info("deletion recorded", request_id=request_id, entries=len(ids), erased=len(seqs))
    report = DeletionReport(request_id=request_id, deleted=len(ids), ids=ids, purged=False,
                            seq=results[-1].last_seq, erased_seqs=seqs, counts_by_kind=counts,
                            pending=True)
    if defer:
        return report
    return finish_purge(store, report, [request_id], ids, sel.needles, views=_in_views(counts))


def finish_purge(store: Store, report: DeletionReport, request_ids: list[str],
                 entry_ids: Iterable[str], needles: set[bytes], *, views: bool) -> DeletionReport:
    """Purge log and shards (and with ``views`` the views); scan; record ``purge.completed``."""
    started = time.perf_counter()
    head_before = store.log.head()
    # The log's purge (compacting copies of the dirty segments; LMDB releases
    # the GIL) runs beside the projections' purge (the shard rebuild, and the
    # views' copy when they held purged memories or sessions).
    store.proj.catch_up(search=True)
    with ThreadPoolExecutor(1, thread_name_prefix="memlog-purge") as pool:
        log_job = pool.submit(_timed_log_purge, store)
        split = store.proj.purge(entry_ids, store.log.settings.purge_lock_timeout, views=views)
        log_report, log_s = log_job.result()
    scan_started = time.perf_counter()
    scope = purge_scope((*log_report.files_rewritten, *split.files_rewritten))
    _, scanned, found = scan_needles(store.data_dir, needles, scope)
    found = {n for n in found if not _held_by_live_entry(store, n)}
    # A compacting copy moves pages, it does not re-encode records: the rewritten
    # log must end at the same chain head and hold none of the erased payloads.
    # (`memlog audit verify` walks the whole chain.)
    head_after = store.log.head()
    same_chain = (head_after.seq, head_after.hash) == (head_before.seq, head_before.hash)
    erased_gone = all(store.log.get(seq).event is None for seq in report.erased_seqs)
    verify_s = time.perf_counter() - scan_started
    verified = not found and same_chain and erased_gone
    root = os.path.abspath(store.data_dir)
    files = tuple(os.path.relpath(os.path.abspath(f), root)
                  for f in (*log_report.files_rewritten, *split.files_rewritten))
    total = time.perf_counter() - started
    done = PurgeCompleted(request_ids=tuple(request_ids), files_rewritten=files, bytes_scanned=scanned,
                          verified=verified, seconds=round(total, 6))
    seq = store.log.append("system", [done], actor="purge").last_seq
    _log.info("purge completed", requests=len(request_ids), verified=verified, files=len(files))
    return msgspec.structs.replace(
        report, purged=True, pending=False, verified=verified, bytes_scanned=scanned,
        files_rewritten=files, seq=seq,
        seconds={"log_compact_s": round(log_s, 6), "views_compact_s": round(split.views_seconds, 6),
                 "index_rebuild_s": round(split.search_seconds, 6), "verify_s": round(verify_s, 6),
                 "total_s": round(total, 6)})


def _in_views(kinds: Iterable[str]) -> bool:
    """Whether purged items of these kinds leave content in the views: memory
    values and session metadata live there; entries are read from the log."""
    return any(kind in ("memory", "session") for kind in kinds)


def _timed_log_purge(store: Store) -> tuple[PurgeReport, float]:
    started = time.perf_counter()
    report = store.log.purge()
    return report, time.perf_counter() - started


def _held_by_live_entry(store: Store, needle: bytes) -> bool:
    """True when a live entry legitimately holds the same text (not a leak)."""
    text = needle.decode(errors="ignore")
    hits = find(store, make_query(" ".join(text.split()[:12]), limit=50))
    with store.read() as views:
        entries = views.entries(h.id for h in hits)
    return any(view is not None and view.entry is not None
               and any(text in t for t in entry_texts(view.entry)) for view in entries)


def purge_pending(store: Store) -> DeletionReport | None:
    """Run the physical purge for every deletion whose purge was deferred."""
    with store.read() as views:
        pending = [d for d in views.deletions() if d.deleted_seq is not None and d.purge_seq is None]
    if not pending:
        return None
    ids = tuple(i for d in pending for i in d.entry_ids)
    seqs = tuple(sorted({s for d in pending for s in d.erased_seqs}))
    report = DeletionReport(request_id=pending[-1].request_id, deleted=len(ids), ids=ids, purged=False,
                            seq=store.log.head().seq, erased_seqs=seqs, pending=True)
    return finish_purge(store, report, [d.request_id for d in pending], ids, set(),
                        views=_in_views(k for d in pending for k in d.counts_by_kind))


def run_redaction(store: Store, entry_id: str, redactor: Redactor, reason: str,
                  requested_by: str, defer: bool) -> DeletionReport:
    """Remove spans from a stored entry: erase its payloads, append the redacted entry, purge."""
    with store.read() as views:
        view = views.entry(entry_id)
    if view is None or view.entry is None or view.state not in SHOWN_STATES:
        raise EntryNotFoundError(f"entry {entry_id} not found")
    counts: dict[str, int] = {}
    needles = Selection()
    for text in entry_texts(view.entry):
        for span in redactor.spans(text):
            if len(span.encode()) >= 6:
                needles.needles.add(span.encode())
    entry = _redacted_entry(view, redactor, counts)
    if not counts:
        raise InvalidInputError(f"no pattern matched in entry {entry_id}; nothing was redacted")
    seqs = sorted({view.recorded_seq, *((view.redacted.seq,) if view.redacted else ())})
    event = EntryRedacted(entry_id=entry_id, target_seq=view.recorded_seq, spans=counts,
                          reason=reason, requested_by=requested_by, redacted=entry,
                          prior=_prior_notes(store, view))
    result = store.log.erase(seqs, event, stream="system", actor=requested_by)
    _log.info("entry redacted", entry_id=entry_id, spans=sum(counts.values()))
    report = DeletionReport(request_id=result.event_ids[0], deleted=0, ids=(entry_id,), purged=False,
                            seq=result.last_seq, erased_seqs=tuple(seqs), counts_by_kind=counts,
                            pending=True)
    if defer:
        return report
    return finish_purge(store, report, [], [entry_id], needles.needles, views=False)


def _prior_notes(store: Store, view: EntryView) -> tuple[RedactionNote, ...]:
    """The notes of every earlier redaction of the entry: this redaction erases
    the latest one's payload, and with it the notes it carried."""
    if view.redacted is None:
        return ()
    earlier = store.log.events_at([view.redacted.seq])[0]
    carried = earlier.prior if isinstance(earlier, EntryRedacted) else ()
    r = view.redacted
    return (*carried, RedactionNote(seq=r.seq, spans=dict(r.spans), reason=r.reason,
                                    requested_by=r.requested_by))


def _redacted_entry(view: EntryView, redactor: Redactor, counts: dict[str, int]) -> EntryRecorded:
    assert view.entry is not None
    return map_texts(view.entry, lambda text: redactor.redact(text, counts))


def run_retention(store: Store, as_of: int, policy: dict[str, int], defer: bool) -> DeletionReport | None:
    """Delete every entry older than its kind's retention, as a deletion with reason "retention"."""
    day = 86_400_000_000
    def expired(s: StoredEntry) -> bool:
        return s.kind in policy and s.state != "deleted" and s.occurred_at < as_of - policy[s.kind] * day

    with store.read() as views:
        ids = tuple(v.entry_id for v in views.latest_entries(expired) if v.entry is not None)
    report = None
    if ids:
        criteria = DeletionCriteria(ids=ids, include_derived=False)
        report = run_deletion(store, criteria, "retention", "retention", defer)
    applied = RetentionApplied(as_of=as_of, policy=policy, request_id=report.request_id if report else None)
    store.log.append("system", [applied], actor="retention")
    return report
