"""Forgetting for real: deletion, redaction and retention, each ending in a purge.

The flow of a deletion (DESIGN section 5):

1. the purge's intent is journaled (:mod:`commands.app.forgetting.journal`: ids and
   seqs, no content), so a crash at any later step is finished by the next open;
2. ``deletion.requested`` and the tombstone ``entries.deleted`` are appended in
   one transaction; the erased payloads are deleted right after it commits;
3. the purge (:mod:`commands.app.forgetting.purging`) rewrites the log's payload segments
   that held them, the views when the request touched memories or sessions (the
   only content they hold), and every search shard that held a deleted entry;
4. a forensic scan reads every file under the data directory that could hold
   the deleted content (kept in memory only, never written), and structural
   checks confirm the rest;
5. ``purge.completed`` records what was rewritten, checked and found; the
   intent goes.

Nothing here logs or returns content: reports hold ids, counts and reasons.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import msgspec

from eventstore import (
    SHOWN_STATES,
    AppendRequest,
    ConcurrencyError,
    DeletedRef,
    DeletionCriteria,
    DeletionRequested,
    EntriesDeleted,
    EntryNotFoundError,
    EntryRecorded,
    EntryRedacted,
    InvalidInputError,
    RedactionNote,
    RetentionApplied,
    entry_texts,
    map_texts,
)
from eventstore.storage import crashpoint
from projections import EntryView, StoredEntry

from .. import log as _log
from ..results import DeletionReport
from ..store.entries import hashtags, new_id
from ..store.pseudonym import id_needles, is_pseudonym
from ..store.redaction import Redactor
from ..store.store import Store
from ..store.writer import SYSTEM_STREAM
from .journal import Held, Journal, PurgeIntent
from .purging import purge
from .selection import Selection, has_filters, select

__all__ = ["MIN_SPAN", "counts_by_kind", "expired", "requester", "run_deletion", "run_deletions",
           "run_redaction", "run_retention"]

_RETRY_SECONDS = 10.0  # how long a decision is made again while other system writes come between
_T = TypeVar("_T")
MIN_SPAN = 6  # a redacted span shorter than this is not scanned for (too likely by chance)




def run_deletion(store: Store, criteria: DeletionCriteria, reason: str, requested_by: str,
                 defer: bool, missing_ok: bool = False) -> DeletionReport:
    """Journal the purge, append the request and tombstone (erasing payloads),
    then purge unless deferred (``missing_ok``: see :func:`.selection.select`)."""
    report, held, sel = _decided(store, lambda version: _tombstone(
        store, version, criteria, reason, requested_by, defer, missing_ok))
    if defer:
        held.release()
        return report
    return purge(store, report, held, sel.needles, _names(criteria))


def _names(criteria: DeletionCriteria) -> dict[bytes, bytes]:
    """The erased user's id, as the purge scans for it, when the request takes
    the user whole (a narrower one leaves items that name the user)."""
    uid = criteria.user_id
    return {} if uid is None or criteria.session_id or has_filters(criteria) else id_needles(uid)


def requester(store: Store, who: str, erased: str | None = None) -> str:
    """The requester as the log keeps it: its pseudonym when it is the user
    erased (``erased``) or any user of the store, else as given (``dpo``)."""
    if who == erased or _is_user(store, who):
        return store.pseudonyms.of(who)
    if erased and erased in who:  # a requester named after the erased user: the name goes too
        return who.replace(erased, store.pseudonyms.of(erased))
    return who


def _is_user(store: Store, who: str) -> bool:
    """Whether ``who`` is a user of the store: it has a stream of its own, or a session."""
    if is_pseudonym(who):
        return False
    try:
        if store.log.stream_version(f"user:{who}") or store.log.stream_version(store.user_stream(who)):
            return True
    except InvalidInputError:  # no stream can have that name (a store written before pseudonyms)
        pass
    with store.read() as views:
        return any(s.user_id == who for s in views.sessions())


def _request(store: Store, request_id: str, criteria: DeletionCriteria, reason: str,
             requested_by: str, by_user: bool) -> DeletionRequested:
    """The request as the log keeps it: a user id (the criteria's, the
    requester when it is that user or ``by_user``, the erased user's in the
    reason) as its pseudonym."""
    uid = criteria.user_id
    if uid is not None:
        alias = store.pseudonyms.of(uid)
        criteria = msgspec.structs.replace(criteria, user_id=alias)
        reason = reason.replace(uid, alias)
    by = store.pseudonyms.of(requested_by) if by_user or requested_by == uid else requested_by
    if uid is not None and uid in by:  # a requester named after the erased user (``mcp:<id>``)
        by = by.replace(uid, store.pseudonyms.of(uid))
    return DeletionRequested(request_id=request_id, criteria=criteria, reason=reason, requested_by=by)


def _decided(store: Store, attempt: Callable[[int], _T]) -> _T:
    """``attempt(version)``: read the views, decide, and append to the system
    stream expecting it at ``version``, read before the views. Every deletion
    and redaction appends there, so one committed since that read fails the
    append (nothing written) and the decision is made again on views that see
    it: a redaction never brings back an entry deleted meanwhile, and a
    deletion also erases the payload of a redaction committed meanwhile. Any
    other write to the system stream (a purge's record, decay) costs a retry
    too, so the retries have a time budget, not a count; any other conflict
    is raised as it is."""
    deadline = time.monotonic() + _RETRY_SECONDS
    for tried in itertools.count():
        version = store.log.stream_version(SYSTEM_STREAM)
        try:
            return attempt(version)
        except ConcurrencyError as exc:
            if (exc.stream, exc.expected) != (SYSTEM_STREAM, version) or time.monotonic() > deadline:
                raise
        time.sleep(random.uniform(0, min(0.05, 0.002 * 2 ** min(tried, 5))))  # apart from the writer it met
    raise AssertionError("unreachable")


def _tombstone(store: Store, version: int, criteria: DeletionCriteria, reason: str, requested_by: str,
               defer: bool, missing_ok: bool) -> tuple[DeletionReport, Held, Selection]:
    """Select, journal the intent, and append the request and its tombstone."""
    with store.read() as views:
        sel = select(views, criteria, missing_ok)
    if not sel.refs:
        raise InvalidInputError("the request selects nothing to delete")
    request_id = new_id("del")
    seqs = tuple(sorted(sel.seqs))
    ids = tuple(sel.refs)
    counts = counts_by_kind(sel.refs.values())
    tombstone = EntriesDeleted(request_id=request_id, entry_ids=ids, erased_seqs=seqs,
                               counts_by_kind=counts, refs=tuple(sel.refs.values()))
    asked = _request(store, request_id, criteria, reason, requested_by, _is_user(store, requested_by))
    in_views = any(k in ("memory", "session") for k in counts) or bool(_names(criteria))
    intent = PurgeIntent(event_id=f"{request_id}.tombstone", request_ids=(request_id,), entry_ids=ids,
                         views=in_views, erased_seqs=seqs, deferred=defer)
    held = Journal(store.data_dir).write(intent)
    by = asked.requested_by
    try:
        crashpoint("delete: append the tombstone")
        results = store.log.append_many([
            AppendRequest(SYSTEM_STREAM, [asked], by, version),
            AppendRequest(SYSTEM_STREAM, [tombstone], by, event_ids=[intent.event_id], erases=seqs)])
    except BaseException:
        _drop_unless_committed(store, held)
        raise
    _log.info("deletion recorded", request_id=request_id, entries=len(ids), erased=len(seqs))
    report = DeletionReport(request_id=request_id, deleted=len(ids), ids=ids, purged=False,
                            seq=results[-1].last_seq, erased_seqs=seqs, counts_by_kind=counts,
                            pending=True)
    return report, held, sel


class _Batch:
    """The tombstones of several deletion requests, and what they select together."""

    def __init__(self) -> None:
        self.asked: list[AppendRequest] = []
        self.refs: dict[str, DeletedRef] = {}
        self.seqs: set[int] = set()
        self.needles: set[bytes] = set()
        self.names: dict[bytes, bytes] = {}
        self.request_ids: dict[int, str] = {}

    def add(self, store: Store, index: int, sel: Selection, criteria: DeletionCriteria, reason: str,
            by: str, by_user: bool) -> None:
        """One request: what ``sel`` selects that no earlier request did."""
        refs = {k: v for k, v in sel.refs.items() if k not in self.refs}
        if not refs:
            return
        request_id = self.request_ids[index] = new_id("del")
        mine = tuple(sorted(sel.seqs - self.seqs))
        self.refs.update(refs)
        self.seqs.update(mine)
        self.needles |= sel.needles
        self.names |= _names(criteria)
        tombstone = EntriesDeleted(request_id=request_id, entry_ids=tuple(refs), erased_seqs=mine,
                                   counts_by_kind=counts_by_kind(refs.values()), refs=tuple(refs.values()))
        asked = _request(store, request_id, criteria, reason, by, by_user)
        self.asked += [AppendRequest(SYSTEM_STREAM, [asked], asked.requested_by),
                       AppendRequest(SYSTEM_STREAM, [tombstone], asked.requested_by, erases=mine)]


def run_deletions(store: Store, requests: Sequence[tuple[DeletionCriteria, str]],
                  requested_by: str, missing_ok: bool = False) -> tuple[DeletionReport, dict[int, str]]:
    """Several deletion requests, each (criteria, reason), tombstoned in one
    transaction and purged once (``memlog maintain``'s batches: one purge for
    many sessions). Returns the combined report and, by the index of each
    request that selected anything, its request id. What an earlier request
    selected is not selected again."""
    report, held, batch = _decided(store, lambda version: _tombstones(store, version, requests, requested_by,
                                                                      missing_ok))
    return purge(store, report, held, batch.needles, batch.names), batch.request_ids


def _tombstones(store: Store, version: int, requests: Sequence[tuple[DeletionCriteria, str]],
                requested_by: str, missing_ok: bool) -> tuple[DeletionReport, Held, _Batch]:
    """Select every request, journal the intent, and append the requests and tombstones."""
    batch = _Batch()
    by_user = _is_user(store, requested_by)
    with store.read() as views:
        for index, (criteria, reason) in enumerate(requests):
            batch.add(store, index, select(views, criteria, missing_ok), criteria, reason, requested_by,
                      by_user)
    if not batch.refs:
        raise InvalidInputError("the requests select nothing to delete")
    first = next(iter(batch.request_ids.values()))
    intent = PurgeIntent(event_id=f"{first}.tombstone", request_ids=tuple(batch.request_ids.values()),
                         entry_ids=tuple(batch.refs), erased_seqs=tuple(sorted(batch.seqs)),
                         views=bool(batch.names) or any(r.kind in ("memory", "session")
                                                        for r in batch.refs.values()))
    # The first tombstone carries the intent's event id: the witness that the transaction committed.
    batch.asked[0] = msgspec.structs.replace(batch.asked[0], expected_version=version)
    batch.asked[1] = msgspec.structs.replace(batch.asked[1], event_ids=[intent.event_id])
    held = Journal(store.data_dir).write(intent)
    try:
        crashpoint("delete: append the tombstone")
        results = store.log.append_many(batch.asked)
    except BaseException:
        _drop_unless_committed(store, held)
        raise
    _log.info("deletions recorded", requests=len(batch.request_ids), entries=len(batch.refs),
              erased=len(batch.seqs))
    report = DeletionReport(request_id=first, deleted=len(batch.refs), ids=tuple(batch.refs), purged=False,
                            seq=results[-1].last_seq, erased_seqs=intent.erased_seqs,
                            counts_by_kind=counts_by_kind(batch.refs.values()), pending=True)
    return report, held, batch


def counts_by_kind(refs: Iterable[DeletedRef]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ref in refs:
        counts[ref.kind] = counts.get(ref.kind, 0) + 1
    return counts


def run_redaction(store: Store, entry_id: str, redactor: Redactor, reason: str,
                  requested_by: str, defer: bool) -> DeletionReport:
    """Remove spans from a stored entry: erase its payloads, append the redacted entry, purge."""
    report, held, needles = _decided(store, lambda version: _redaction(
        store, version, entry_id, redactor, reason, requested_by, defer))
    if defer:
        held.release()
        return report
    return purge(store, report, held, needles)


def _redaction(store: Store, version: int, entry_id: str, redactor: Redactor, reason: str,
               requested_by: str, defer: bool) -> tuple[DeletionReport, Held, set[bytes]]:
    """Read the entry, redact it, journal the intent, and append the redaction."""
    with store.read() as views:
        view = views.entry(entry_id)
    if view is None or view.entry is None or (view.state not in SHOWN_STATES and view.state != "superseded"):
        raise EntryNotFoundError(f"entry {entry_id} not found")
    counts: dict[str, int] = {}
    needles = {span.encode() for text in entry_texts(view.entry) for span in redactor.spans(text)
               if len(span.encode()) >= MIN_SPAN}
    entry = _redacted_entry(view, redactor, counts)
    if view.edits:
        needles |= _earlier_spans(store, entry_id, redactor, counts)
    if not counts:
        raise InvalidInputError(f"no pattern matched in entry {entry_id}; nothing was redacted")
    seqs = sorted({view.recorded_seq, *view.edits, *((view.redacted.seq,) if view.redacted else ())})
    requested_by = requester(store, requested_by)
    event = EntryRedacted(entry_id=entry_id, target_seq=view.recorded_seq, spans=counts,
                          reason=reason, requested_by=requested_by, redacted=entry,
                          prior=_prior_notes(store, view))
    intent = PurgeIntent(event_id=new_id("red"), entry_ids=(entry_id,), erased_seqs=tuple(seqs),
                         deferred=defer)
    held = Journal(store.data_dir).write(intent)
    try:
        crashpoint("redact: append the redaction")
        result = store.log.erase(seqs, event, stream=SYSTEM_STREAM, actor=requested_by,
                                 expected_version=version, event_id=intent.event_id)
    except BaseException:
        _drop_unless_committed(store, held)
        raise
    _log.info("entry redacted", entry_id=entry_id, spans=sum(counts.values()))
    report = DeletionReport(request_id=intent.event_id, deleted=0, ids=(entry_id,), purged=False,
                            seq=result.last_seq, erased_seqs=tuple(seqs), counts_by_kind=counts,
                            pending=True)
    return report, held, needles


def _drop_unless_committed(store: Store, held: Held) -> None:
    """After a failed erasing append: drop the intent when nothing was appended,
    keep it (for the next open to finish) when the append did commit, or when
    that cannot be told (an error after the commit, a log that cannot be read)."""
    try:
        committed = store.log.seq_of(held.intent.event_id) is not None
    except Exception:
        committed = True
    if committed:
        held.release()
    else:
        held.done()


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


def _earlier_spans(store: Store, entry_id: str, redactor: Redactor, counts: dict[str, int]) -> set[bytes]:
    """The spans in an edited entry's earlier texts, counted into ``counts``:
    the redaction erases those versions' payloads (the redacted current text
    is the entry's only text from then on). Returns the needles to scan for."""
    with store.read() as views:
        earlier = views.entry_versions(entry_id)[:-1]
    needles: set[bytes] = set()
    for _, version in earlier:
        redactor.redact(version.content, counts)
        found = (span.encode() for span in redactor.spans(version.content))
        needles |= {raw for raw in found if len(raw) >= MIN_SPAN}
    return needles


def _redacted_entry(view: EntryView, redactor: Redactor, counts: dict[str, int]) -> EntryRecorded:
    """The entry with every text redacted, less the tags that hashtags inside a
    redacted span gave it (:func:`.entries.with_hashtags`)."""
    assert view.entry is not None
    redacted = map_texts(view.entry, lambda text: redactor.redact(text, counts))
    gone = set(hashtags(view.entry.content)) - set(hashtags(redacted.content))
    if not gone:
        return redacted
    return msgspec.structs.replace(redacted, tags=tuple(t for t in redacted.tags if t.lower() not in gone))


def expired(store: Store, as_of: int, policy: dict[str, int]) -> dict[str, str]:
    """The entries older than their kind's retention as of ``as_of``: id -> kind."""
    day = 86_400_000_000

    def old(s: StoredEntry) -> bool:
        return s.kind in policy and s.state != "deleted" and s.occurred_at < as_of - policy[s.kind] * day

    with store.read() as views:
        return {v.entry_id: v.kind for v in views.latest_entries(old) if v.entry is not None}


def run_retention(store: Store, as_of: int, policy: dict[str, int], defer: bool) -> DeletionReport | None:
    """Delete every entry older than its kind's retention, as a deletion with reason "retention"."""
    ids = tuple(expired(store, as_of, policy))
    report = None
    if ids:
        criteria = DeletionCriteria(ids=ids, include_derived=False)
        report = run_deletion(store, criteria, "retention", "retention", defer, missing_ok=True)
    applied = RetentionApplied(as_of=as_of, policy=policy, request_id=report.request_id if report else None)
    store.log.append(SYSTEM_STREAM, [applied], actor="retention")
    return report
