"""Use cases of sessions: start, read, list, archive and restore."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eventstore import (
    InvalidInputError,
    SessionArchived,
    SessionNotFoundError,
    SessionRestored,
    SessionStarted,
)

from . import log as _log
from .entries import new_id
from .results import SessionResult, session_result
from .store import Store
from .validate import check_id, check_ids, check_labels, optional_text

__all__ = ["archive_session", "restore_session", "session", "sessions", "start_session"]


def start_session(store: Store, user_id: str | None = None, agent_ids: Iterable[str] = (),
                  tags: Iterable[str] = (), metadata: dict[str, str] | None = None,
                  channel: str | None = None, session_id: str | None = None, *,
                  event_id: str | None = None) -> str:
    """Start a session; returns its id. Ingest redaction runs over its tags,
    its channel and its metadata's keys and values. ``event_id``: a client
    event id (importers)."""
    sid = check_id(session_id, "session id") if session_id else new_id("sess")
    meta = metadata or {}
    pairs = meta.items() if isinstance(meta, dict) else ()
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
        raise InvalidInputError("metadata must map strings to strings")
    event = _redacted(store, SessionStarted(
        session_id=sid, user_id=None if user_id is None else check_id(user_id, "user id"),
        agent_ids=check_ids(agent_ids, "agent ids"), tags=check_labels(tags, "tags"),
        metadata=dict(meta), channel=None if channel is None else check_labels([channel], "channel")[0],
    ))
    with store.read() as views:
        if views.session(sid) is not None or store.writer.is_pending_session(sid):
            raise InvalidInputError(f"session {sid} already exists")
    store.writer.append(f"session:{sid}", lambda: [event], event_ids=None if event_id is None else [event_id])
    store.writer.add_pending_session(sid)
    return sid


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
        return session_result(view, views.session_stats(sid))


def sessions(store: Store, user_id: str | None = None, archived: bool | None = False,
             as_of: int | None = None) -> list[SessionResult]:
    """Sessions (not archived by default; ``archived=None`` for all)."""
    with store.read(as_of) as views:
        return [session_result(v, views.session_stats(v.session_id)) for v in views.sessions()
                if (user_id is None or v.user_id == user_id)
                and (archived is None or v.archived == archived)]


def archive_session(store: Store, session_id: str, reason: str | None = None) -> None:
    """Archive a session: it leaves default search and context."""
    sid = store.writer.live_session(session_id)
    text = optional_text(reason, "reason", 2000)
    if text is not None and store.entries.redactor is not None:
        text = store.entries.redactor.redact(text.strip(), {})
    store.writer.append(f"session:{sid}", lambda: [SessionArchived(session_id=sid, reason=text)])


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
