"""The shared ingest: every record of an import is decided through the app
layer (validation, ingest redaction, session checks) inside one writer batch,
so either the whole import lands in one transaction or nothing does.

A record whose session, entry or memory id the store already has (a deleted
entry's included), or whose event id the log already holds (a forgotten
memory's), is skipped: ids derive from source ids, so a second import of the
same files adds nothing. Each append also carries the record's client event
id, so the log itself refuses (``E_DUPLICATE_EVENT``) to take one twice. A bad record (a reader's
:class:`~commands.transfer.model.Bad`, or one the app layer refuses) stops the
import with :class:`~eventstore.ImportRecordError` naming ``file:line`` and
the reason, unless ``skip_bad``: then the good records are written and the bad
ones reported (by place and reason, never content).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from eventstore import (
    ENTRY_KINDS,
    AbortedError,
    DecisionDetails,
    Details,
    EntryRecorded,
    Event,
    FindingDetails,
    ImportRecordError,
    InvalidInputError,
    MessageDetails,
    NotFoundError,
    PreferenceDetails,
    SessionArchived,
    SessionArchivedError,
    SessionClosed,
    SessionClosedError,
    TaskDetails,
)

from ..app.recording import records
from ..app.recording.records import PROJECT_STREAM
from ..app.sessions import lifecycle as sessions
from ..app.store.store import Store
from .model import Bad, EntryRec, MemoryRec, Record, SessionRec, event_id

__all__ = ["BadRecord", "ImportReport", "ingest", "refuse_unreadable"]

_DETAILS: dict[str, type[Details]] = {
    "message": MessageDetails, "decision": DecisionDetails, "finding": FindingDetails,
    "preference": PreferenceDetails, "task": TaskDetails,
}
_GOT = re.compile(r"\s*\(got .*?\)(?=;|$| \(|\Z)", re.S)
_TIME = re.compile(r"invalid time .*?: use", re.S)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")  # any value a validator quotes (msgspec's enums, keys)
# What a single record may fail with; anything else (storage, a conflict) stops the import.
_RECORD_ERRORS = (InvalidInputError, NotFoundError, SessionArchivedError, SessionClosedError)


class BadRecord(msgspec.Struct, frozen=True):
    """A refused record: where it is and why (fields named, never content)."""

    file: str
    line: int
    reason: str


class ImportReport(msgspec.Struct, frozen=True):
    """What an import did (or, with ``dry_run``, would do): records read,
    written, already present (skipped), counts by kind, and the bad records."""

    format: str
    records: int
    written: int
    already_present: int
    by_kind: dict[str, int]
    bad: tuple[BadRecord, ...]
    dry_run: bool
    seq: int

    def to_dict(self) -> dict[str, Any]:
        """The ``import --json`` shape."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


class _Run:
    """One import's state while its records are decided."""

    def __init__(self, store: Store, fmt: str, recs: Sequence[Record]) -> None:
        self.store = store
        self.fmt = fmt
        self.bad: list[BadRecord] = []
        self.seen: set[str] = set()
        self.present = 0
        self.by_kind: dict[str, int] = {}
        self.later: list[tuple[str, str, Event]] = []  # closes and archives, after the entries
        self.existing = _existing_ids(store, recs)

    def take(self, rec: Record) -> None:
        """Decide one record into the batch (or count it present, or bad)."""
        if isinstance(rec, Bad):
            self.bad.append(BadRecord(rec.origin.file, rec.origin.line, rec.reason))
            return
        if rec.event_id in self.seen or _own_id(rec) in self.existing or (
                isinstance(rec, MemoryRec) and self.store.log.seq_of(rec.event_id) is not None):
            # The views keep every session and entry id (a deleted entry's too), not a
            # forgotten memory's: for memories the log's event id index answers.
            self.present += 1
            return
        try:
            kind = self._write(rec)
        except _RECORD_ERRORS as exc:
            self.bad.append(BadRecord(rec.origin.file, rec.origin.line, _reason(exc.message)))
            return
        self.seen.add(rec.event_id)
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def _write(self, rec: SessionRec | EntryRec | MemoryRec) -> str:
        store = self.store
        if isinstance(rec, SessionRec):
            metadata = rec.metadata if rec.metadata is not None else {}
            sid = sessions.start_session(store, rec.user_id, rec.agent_ids or (), rec.tags or (), metadata,
                                         rec.channel, rec.session_id, event_id=rec.event_id)
            if rec.closed:
                self.later.append((sid, event_id(self.fmt, "closed:" + rec.event_id), SessionClosed(sid)))
            if rec.archived:
                self.later.append((sid, event_id(self.fmt, "archived:" + rec.event_id), SessionArchived(sid)))
            return "session"
        if isinstance(rec, MemoryRec):
            records.remember(store, rec.user_id, rec.key, rec.content, rec.session_id,
                             memory_id=rec.memory_id, event_id=rec.event_id)
            return "memory"
        entry, stream = _entry(store, rec)
        records.record(store, entry, stream, event_id=rec.event_id)
        return entry.kind

    def finish(self) -> None:
        """Close, then archive, the imported sessions closed or archived at the source."""
        for sid, eid, event in self.later:
            self.store.writer.append(f"session:{sid}", lambda e=event: [e], event_ids=[eid])  # type: ignore[misc]

    @property
    def written(self) -> int:
        return sum(self.by_kind.values())


def ingest(store: Store, fmt: str, recs: Sequence[Record], *, skip_bad: bool = False,
           dry_run: bool = False, progress: Callable[[int], None] | None = None) -> ImportReport:
    """Decide every record, then write them all in one transaction (none with
    ``dry_run``, none when a record is bad unless ``skip_bad``)."""
    run = _Run(store, fmt, recs)
    discard = AbortedError("dry run: nothing written")  # raised inside the batch, it drops it
    actor, store.writer.actor = store.writer.actor, f"memlog/import:{fmt}"  # the importer is the actor
    try:
        with store.writer.batch():
            for rec in recs:
                run.take(rec)
                if progress is not None:
                    progress(1)
            run.finish()
            if run.bad and not skip_bad:
                raise _refusal(run.bad)
            if dry_run:
                raise discard
    except AbortedError as exc:
        if exc is not discard:
            raise
    finally:
        store.writer.actor = actor
    return ImportReport(format=fmt, records=len(recs), written=run.written, already_present=run.present,
                        by_kind=dict(sorted(run.by_kind.items())), bad=tuple(run.bad), dry_run=dry_run,
                        seq=0 if dry_run else store.writer.last_seq)


def refuse_unreadable(recs: Sequence[Record], skip_bad: bool = False) -> None:
    """Refuse, before any store is opened, a source whose reader found bad records
    (unless ``skip_bad``)."""
    bad = [BadRecord(r.origin.file, r.origin.line, r.reason) for r in recs if isinstance(r, Bad)]
    if bad and not skip_bad:
        raise _refusal(bad)


def _reason(message: str) -> str:
    """A refusal's reason without the values it quotes (``(got '...')``, any
    quoted value): a report names fields, never what a source held."""
    return _QUOTED.sub("(a value)", _TIME.sub("invalid time: use", _GOT.sub("", message)))


def _refusal(bad: list[BadRecord]) -> ImportRecordError:
    first = bad[0]
    more = f" ({len(bad)} bad records in all)" if len(bad) > 1 else ""
    return ImportRecordError(
        f"{first.file}:{first.line}: {first.reason}{more}; nothing of this import was written "
        f"(--skip-bad writes the good records)", file=first.file, line=first.line, reason=first.reason)


def _own_id(rec: SessionRec | EntryRec | MemoryRec) -> str:
    if isinstance(rec, SessionRec):
        return rec.session_id
    return rec.memory_id if isinstance(rec, MemoryRec) else rec.entry_id


def _existing_ids(store: Store, recs: Sequence[Record]) -> set[str]:
    """The session, entry and memory ids of ``recs`` the store already has."""
    found: set[str] = set()
    with store.read() as views:
        for rec in recs:
            if isinstance(rec, SessionRec):
                if views.session(rec.session_id) is not None:
                    found.add(rec.session_id)
            elif isinstance(rec, EntryRec):
                if isinstance(rec.entry_id, str) and views.stored_entry(rec.entry_id) is not None:
                    found.add(rec.entry_id)
            elif isinstance(rec, MemoryRec) and views.memory_by_id(rec.memory_id) is not None:
                found.add(rec.memory_id)
    return found


def _entry(store: Store, rec: EntryRec) -> tuple[EntryRecorded, str]:
    """The validated, redacted entry event of ``rec`` and its stream."""
    if rec.kind not in ENTRY_KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(ENTRY_KINDS)}")
    sid = None if rec.session_id is None else store.writer.live_session(rec.session_id)
    if rec.kind == "preference" and rec.user_id is None:
        raise InvalidInputError("a preference needs a user_id")
    entry = store.entries.build(
        rec.kind, rec.content, session_id=sid, user_id=rec.user_id, agent_id=rec.agent_id, role=rec.role,
        tags=rec.tags, importance=rec.importance, occurred_at=rec.occurred_at,
        derived_from=rec.derived_from, details=_details(rec.kind, rec.details), entry_id=rec.entry_id)
    if rec.redactions:
        earlier = _convert(rec.redactions, dict[str, int], "redactions")
        counts = {k: earlier.get(k, 0) + entry.redactions.get(k, 0) for k in {*earlier, *entry.redactions}}
        entry = msgspec.structs.replace(entry, redactions=dict(sorted(counts.items())))
    if entry.user_id is not None and (entry.kind == "preference" or sid is None):
        return entry, store.user_stream(entry.user_id, [rec.event_id])
    return entry, f"session:{sid}" if sid is not None else PROJECT_STREAM


def _details(kind: str, raw: object) -> Details | None:
    """A kind's details from a source mapping, checked by msgspec's types."""
    cls = _DETAILS.get(kind)
    if cls is None:
        if raw:
            raise InvalidInputError(f"a {kind} has no details")
        return None
    if raw is not None and not isinstance(raw, dict):
        raise InvalidInputError("details must be an object")
    data = {k: v for k, v in (raw or {}).items() if v is not None and k != "kind"}
    details = _convert(data, cls, "details")
    if kind == "message" and not any(msgspec.structs.astuple(details)):
        return None  # as record_message: a message without topic, parent (or call id) has no details
    return details  # type: ignore[no-any-return]


def _convert(data: object, kind: Any, field: str) -> Any:
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(f"{field}: {exc}") from None

