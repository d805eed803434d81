"""Use cases of sessions: start, read, list, archive and restore."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eventstore import (
    InvalidInputError,
    SessionArchived,
    SessionClosed,
    SessionClosedError,
    SessionCorruptError,
    SessionNotFoundError,
    SessionRestored,
    SessionStarted,
    SessionUpdated,
)
from projections import SessionView

from .. import log as _log
from ..recall.restore import RESTORED_ON_READ, restore_on_read
from ..results import SessionResult, TranscriptPage, entry_result, session_result
from ..store.entries import new_id
from ..store.pseudonym import RAW_FROM
from ..store.store import Store
from ..store.validate import check_id, check_ids, check_labels, optional_text
from ..upkeep.extraction import on_close

__all__ = [
    "RESTORED_ON_READ", "archive_session", "check_manifest", "close_session", "restore_on_read",
    "restore_session", "session", "sessions", "start_session", "transcript", "update_session",
]


def start_session(store: Store, user_id: str | None = None, agent_ids: Iterable[str] = (),
                  tags: Iterable[str] = (), metadata: dict[str, str] | None = None,
                  channel: str | None = None, session_id: str | None = None, *,
                  event_id: str | None = None, ephemeral: bool = False) -> str:
    """Start a session; returns its id. Ingest redaction runs over its tags,
    its channel and its metadata's keys and values. ``event_id``: a client
    event id (importers). ``ephemeral``: pruned by age and count
    (:mod:`commands.app.upkeep.idle`)."""
    sid = check_id(session_id, "session id") if session_id else new_id("sess")
    if user_id is not None and session_id and len(str(user_id)) >= RAW_FROM and str(user_id) in sid:
        raise InvalidInputError("a session id must not hold its user's id (the log's stream names keep "
                                "it after the user's erasure): leave it out for a new id")
    event = _redacted(store, SessionStarted(
        session_id=sid, user_id=None if user_id is None else check_id(user_id, "user id"),
        agent_ids=check_ids(agent_ids, "agent ids"), tags=check_labels(tags, "tags"),
        metadata=_metadata(metadata),
        channel=None if channel is None else check_labels([channel], "channel")[0],
        ephemeral=bool(ephemeral),
    ))
    with store.read() as views:
        if views.session(sid) is not None or store.writer.is_pending_session(sid):
            raise InvalidInputError(f"session {sid} already exists")
    store.writer.append(f"session:{sid}", lambda: [event], event_ids=None if event_id is None else [event_id])
    store.writer.add_pending_session(sid)
    return sid


def _metadata(metadata: object) -> dict[str, str]:
    meta = metadata or {}
    pairs = meta.items() if isinstance(meta, dict) else ()
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
        raise InvalidInputError("metadata must map strings to strings")
    return dict(meta)


def _redacted(store: Store, event: SessionStarted) -> SessionStarted:
    """``event`` with its tags, channel and metadata keys and values redacted
    (when ingest redaction is on); two keys that redact alike are both kept."""
    redactor = store.entries.redactor
    if redactor is None:
        return event
    counts: dict[str, int] = {}
    metadata: dict[str, str] = {}
    for key, value in event.metadata.items():
        name = base = redactor.redact(key, counts)
        n = 1
        while name in metadata:
            n += 1
            name = f"{base} {n}"
        metadata[name] = redactor.redact(value, counts)
    tags = tuple(dict.fromkeys(redactor.redact(t, counts) for t in event.tags))
    channel = redactor.redact_optional(event.channel, counts)
    if not counts:
        return event
    _log.info("session redacted at ingest", session_id=event.session_id, spans=sum(counts.values()))
    return msgspec.structs.replace(event, tags=tags, channel=channel, metadata=metadata)


def session(store: Store, session_id: str, as_of: int | None = None) -> SessionResult:
    """A session's manifest and statistics (as of a seq, if given)."""
    sid = check_id(session_id, "session id")
    with store.read(as_of) as views:
        view = views.session(sid)
        if view is None:
            when = "" if as_of is None else f" at seq {as_of}"
            raise SessionNotFoundError(f"session {sid} not found{when}")
        check_manifest(store, view)
        return session_result(view, views.session_stats(sid))


def check_manifest(store: Store, view: SessionView) -> None:
    """Refuse a manifest that the session's stream does not vouch for: the
    event at its start must be the session's ``session.started``
    (``E_SESSION_CORRUPT`` otherwise: the views and the log disagree)."""
    found = store.log.events_at([view.started_seq])[0]
    if not isinstance(found, SessionStarted) or found.session_id != view.session_id:
        raise SessionCorruptError(
            f"session {view.session_id} cannot be read consistently: its manifest starts at seq "
            f"{view.started_seq}, which is not its session.started in the log; run `memlog replay` "
            "to rebuild the views from the log")


def sessions(store: Store, user_id: str | None = None, archived: bool | None = False,
             as_of: int | None = None) -> list[SessionResult]:
    """Sessions (not archived by default; ``archived=None`` for all)."""
    with store.read(as_of) as views:
        return [session_result(v, views.session_stats(v.session_id)) for v in views.sessions()
                if (user_id is None or v.user_id == user_id)
                and (archived is None or v.archived == archived)]


def archive_session(store: Store, session_id: str, reason: str | None = None) -> None:
    """Archive a session: it leaves default search and context."""
    sid = store.writer.live_session(session_id, closed_ok=True, restore=False)
    text = _reason(store, reason)
    store.writer.append(f"session:{sid}", lambda: [SessionArchived(session_id=sid, reason=text)])


def close_session(store: Store, session_id: str, reason: str | None = None) -> None:
    """Close a session: it takes no new entries and stays readable and searchable.
    Before it closes, its automatic handoff and extraction
    (:func:`commands.app.upkeep.extraction.on_close`)."""
    sid = check_id(session_id, "session id")
    if not store.writer.is_pending_session(sid):
        with store.read() as views:
            view = views.session(sid)
        if view is not None and view.closed_at is not None:
            raise SessionClosedError(f"session {sid} is already closed")
    sid = store.writer.live_session(sid)
    text = _reason(store, reason)
    on_close(store, sid)  # handoff and extraction first; never stops the close
    store.writer.append(f"session:{sid}", lambda: [SessionClosed(session_id=sid, reason=text)])
    store.writer.end_pending_session(sid)


def update_session(store: Store, session_id: str, *, agent_ids: Iterable[str] | None = None,
                   tags: Iterable[str] | None = None, metadata: dict[str, str] | None = None) -> None:
    """Change a session's agents or tags (replaced) or metadata (merged). The
    session's state stays as it was: a closed session stays closed, and an
    archived one stays archived (an update restores nothing)."""
    sid = _updatable(store, session_id)
    if agent_ids is None and tags is None and metadata is None:
        raise InvalidInputError("nothing to update: give agents, tags or metadata")
    probe = _redacted(store, SessionStarted(
        session_id=sid, agent_ids=check_ids(agent_ids or (), "agent ids"),
        tags=check_labels(tags or (), "tags"), metadata=_metadata(metadata)))
    event = SessionUpdated(session_id=sid, agent_ids=None if agent_ids is None else probe.agent_ids,
                           tags=None if tags is None else probe.tags,
                           metadata=None if metadata is None else probe.metadata)
    store.writer.append(f"session:{sid}", lambda: [event])


def _updatable(store: Store, session_id: str) -> str:
    """The id of a session that exists (open, closed or archived), as it is."""
    sid = check_id(session_id, "session id")
    with store.read() as views:
        view = views.session(sid)
    if view is None or not view.archived:
        return store.writer.live_session(sid, closed_ok=True)  # started in a batch, or live
    return sid


def transcript(store: Store, session_id: str, limit: int | None = 50, offset: int = 0) -> TranscriptPage:
    """A session's messages in the order they occurred, one page at a time."""
    sid = check_id(session_id, "session id")
    if limit is not None and (type(limit) is not int or limit < 1):
        raise InvalidInputError("limit must be a positive integer")
    if type(offset) is not int or offset < 0:
        raise InvalidInputError("offset must be an integer >= 0")
    with store.read() as views:
        view = views.session(sid)
        if view is None:
            raise SessionNotFoundError(f"session {sid} not found")
        check_manifest(store, view)
        page, total = views.session_page(sid, ("message",), offset, limit)
        messages = [entry_result(v) for v in page]
    if view.archived:
        restore_on_read(store, sid)
    end = offset + len(messages)
    return TranscriptPage(session_id=sid, messages=messages, total=total, offset=offset, limit=limit,
                          next_offset=end if end < total else None)


def _reason(store: Store, reason: str | None) -> str | None:
    text = optional_text(reason, "reason", 2000)
    if text is not None and store.entries.redactor is not None:
        text = store.entries.redactor.redact(text.strip(), {})
    return text


def restore_session(store: Store, session_id: str) -> None:
    """Restore an archived session."""
    sid = check_id(session_id, "session id")
    with store.read() as views:
        view = views.session(sid)
    if view is None:
        raise SessionNotFoundError(f"session {sid} not found")
    if not view.archived:
        raise InvalidInputError(f"session {sid} is not archived")
    store.writer.append(f"session:{sid}", lambda: [SessionRestored(session_id=sid)])
