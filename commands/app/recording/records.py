"""Use cases that record: entries of every kind, their updates, user memories,
and reading an entry or memory back.

Every write decides first (validation, ingest redaction, state checks against
the views) and then appends with the stream's expected version through the
store's writer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from eventstore import (
    FINDING_STATUSES,
    ROLES,
    SHOWN_STATES,
    EntryChanges,
    EntryNotFoundError,
    EntryRecorded,
    EntryUpdated,
    Event,
    InvalidInputError,
    MemorySaved,
    SessionNotFoundError,
    SessionStarted,
    SessionUpdated,
    shown,
)
from projections import DEFAULT_RATES

from .. import log as _log
from ..results import EntryResult, MemoryResult, entry_result, memory_result
from ..store.entries import new_id
from ..store.store import Store
from ..store.validate import check_choice, check_content, check_id, check_key, check_unit
from .dedup import reinforce_copy

# The stream of the project context shared by every session of the store.
PROJECT_STREAM = "project"

__all__ = [
    "PROJECT_STREAM",
    "MemoryPage",
    "change_entry",
    "memories",
    "memory_page",
    "record",
    "record_decision",
    "record_finding",
    "record_kind",
    "record_message",
    "record_project",
    "remember",
    "set_importance",
    "set_preference",
    "show",
    "update_finding",
]


def record(store: Store, entry: EntryRecorded, stream: str | None = None, *,
           event_id: str | None = None, actor: str | None = None) -> str:
    """Append an entry event to its session's stream (or its user's);
    ``event_id``: a client event id (importers); ``actor``: the writer's
    default unless given. A lesson close to a live lesson of its scope
    reinforces it instead (:mod:`commands.app.recording.dedup`): the id returned is then
    the existing lesson's. An agent that writes in a session joins its agents
    (:func:`_joined`; not for an importer's event, whose ids are its own)."""
    if entry.kind == "lesson" and event_id is None:  # dedup (seed 004)
        kept = reinforce_copy(store, entry, actor)
        if kept is not None:
            return kept
    target = stream or (f"session:{entry.session_id}" if entry.session_id
                        else store.user_stream(entry.user_id, None if event_id is None else [event_id])
                        if entry.user_id else "user:None")
    joins = event_id is None and target == f"session:{entry.session_id}"
    store.writer.append(target, lambda: [*(_joined(store, entry) if joins else ()), entry], actor,
                        keeps_live=True, event_ids=None if event_id is None else [event_id])
    _log.info("entry recorded", entry_id=entry.entry_id, kind=entry.kind, session_id=entry.session_id)
    if store.on_recorded is not None:
        store.on_recorded(entry)
    return entry.entry_id


def _joined(store: Store, entry: EntryRecorded) -> list[Event]:
    """``session.updated`` adding the entry's agent to its session's agents,
    when they lack it (appended just before the entry, in the same append);
    the agents are the views' unless the current batch changed them."""
    sid, agent = entry.session_id, entry.agent_id
    if sid is None or agent is None:
        return []
    agents: tuple[str, ...] | None = None
    for event in store.writer.queued(f"session:{sid}"):
        if isinstance(event, SessionStarted | SessionUpdated) and event.agent_ids is not None:
            agents = event.agent_ids
    if agents is None:
        with store.read() as views:
            session = views.session(sid)
        if session is None:
            return []
        agents = session.agent_ids
    return [] if agent in agents else [SessionUpdated(session_id=sid, agent_ids=(*agents, agent))]


def record_message(store: Store, session_id: str, *, role: str, content: str,
                   agent_id: str | None = None, topic: str | None = None, parent_id: str | None = None,
                   occurred_at: Any = None, tags: Iterable[str] = (),
                   importance: float | None = None, tool_call_id: str | None = None) -> str:
    """Record a conversation message; ``tool_call_id`` only on a tool message;
    ``parent_id``: a message of the same session (the one this answers)."""
    sid = check_id(session_id, "session id")
    if tool_call_id is not None and role != "tool":
        raise InvalidInputError("tool_call_id is only for messages of role 'tool'")
    details = store.entries.message(topic, parent_id, tool_call_id)
    entry = store.entries.build(
        "message", content, session_id=sid, agent_id=agent_id, role=check_choice(role, "role", ROLES),
        tags=tags, importance=importance, occurred_at=occurred_at, details=details)
    if details is not None and details.parent_id is not None:
        _check_parent_message(store, sid, details.parent_id)
    return _record_in(store, sid, entry)


def _check_parent_message(store: Store, session_id: str, parent_id: str) -> None:
    """Refuse a parent that is not a shown message of the same session
    (``E_ENTRY_NOT_FOUND``; whether the id is another session's is not told)."""
    if any(isinstance(e, EntryRecorded) and e.entry_id == parent_id and e.kind == "message"
           for e in store.writer.queued(f"session:{session_id}")):
        return  # recorded earlier in the same batch
    with store.read() as views:
        view, session = views.entry(parent_id), views.session(session_id)
    if session is None:
        raise SessionNotFoundError(f"session {session_id} not found")
    if (view is None or view.kind != "message" or view.session_id != session_id
            or view.state not in SHOWN_STATES):
        raise EntryNotFoundError(f"parent message {parent_id} not found in session {session_id}")


def record_decision(store: Store, session_id: str, *, decision: str, rationale: str | None = None,
                    alternatives: Iterable[str | Mapping[str, str | None]] = (),
                    impact: str | None = None,
                    made_by: str | None = None, approved_by: Iterable[str] = (),
                    tags: Iterable[str] = (), occurred_at: Any = None,
                    derived_from: Iterable[str] = ()) -> str:
    """Record a decision (seed 000's fields): each alternative an option, or
    ``{"option": ..., "rejected_reason": ...}``."""
    sid = check_id(session_id, "session id")
    details = store.entries.decision(rationale, alternatives, impact, made_by, approved_by)
    return _record_in(store, sid, store.entries.build(
        "decision", decision, session_id=sid, agent_id=made_by, tags=tags, occurred_at=occurred_at,
        derived_from=derived_from, details=details, field="decision"))


def record_finding(store: Store, session_id: str, *, description: str, severity: str | None = None,
                   category: str | None = None, evidence: str | None = None,
                   recommendation: str | None = None, status: str = "open",
                   tags: Iterable[str] = (), agent_id: str | None = None,
                   occurred_at: Any = None) -> str:
    """Record a finding (seed 000's fields)."""
    sid = check_id(session_id, "session id")
    details = store.entries.finding(severity, category, evidence, recommendation, status)
    return _record_in(store, sid, store.entries.build(
        "finding", description, session_id=sid, agent_id=agent_id, tags=tags,
        occurred_at=occurred_at, details=details, field="description"))


def record_kind(store: Store, kind: str, session_id: str, content: str, **fields: Any) -> str:
    """Record an entry of a kind without details of its own (lesson, handoff,
    summary, project) or a new task; ``fields`` as :meth:`EntryFactory.build`."""
    sid = check_id(session_id, "session id")
    if kind == "task":
        fields["details"] = store.entries.task()
    return _record_in(store, sid, store.entries.build(kind, content, session_id=sid, **fields))


def _record_in(store: Store, session_id: str, entry: EntryRecorded) -> str:
    """Record ``entry``, built (so checked) first, in its session: only then is
    the session checked live, and restored if archived (a refused write restores nothing)."""
    store.writer.live_session(session_id)
    if entry.derived_from:
        _check_parents(store, session_id, entry.derived_from)
    return record(store, entry)


def _check_parents(store: Store, session_id: str, parents: Iterable[str]) -> None:
    """An entry derives only from entries its session's user may see: nothing
    crosses from one user to another (a deletion of a user takes what was
    derived from the user's entries). The message names no id: whether an id
    is another user's is not told."""
    with store.read() as views:
        session = views.session(session_id)
        user = None if session is None else session.user_id
        for parent in parents:
            view = views.entry(parent)
            if view is None:
                continue
            owner = view.user_id
            if owner is None and view.session_id is not None:
                owner = getattr(views.session(view.session_id), "user_id", None)
            if owner is not None and owner != user:
                raise InvalidInputError("derived_from names an entry this session's user cannot see")


def record_project(store: Store, session_id: str | None, content: str, occurred_at: Any = None) -> str:
    """Record project context in a session, or (``session_id`` None) shared by
    every session of the store, on the ``project`` stream."""
    if session_id is not None:
        return record_kind(store, "project", session_id, content, occurred_at=occurred_at)
    return record(store, store.entries.build("project", content, occurred_at=occurred_at),
                  stream=PROJECT_STREAM)


def set_preference(store: Store, user_id: str, *, key: str, value: str, category: str | None = None,
                   confidence: float | None = None, session_id: str | None = None) -> str:
    """Record a user-scoped preference."""
    uid = check_id(user_id, "user id")
    sid = None if session_id is None else _own_session(store, store.writer.live_session(session_id), uid)
    details = store.entries.preference(key, value, category, confidence)
    return record(store, store.entries.build("preference", f"{details.key}: {details.value}",
                                             session_id=sid, user_id=uid, details=details),
                  stream=store.user_stream(uid))


def _own_session(store: Store, session_id: str, user_id: str) -> str:
    """``session_id``, refused when it is another user's session (a user's
    preference or memory never sits in another user's session, whose scope
    would then show it)."""
    sid = check_id(session_id, "session id")
    with store.read() as views:
        session = views.session(sid)
    if session is not None and session.user_id is not None and session.user_id != user_id:
        raise InvalidInputError(f"session {sid} belongs to another user than {user_id}")
    return sid


def change_entry(store: Store, entry_id: str, kinds: Iterable[str], changes: EntryChanges) -> None:
    """Append ``entry.updated`` for a shown entry of one of ``kinds``."""
    eid = check_id(entry_id, "entry id")
    allowed = tuple(kinds)
    with store.read() as views:
        view = views.entry(eid)
    if view is None or view.entry is None or view.state not in SHOWN_STATES:
        raise EntryNotFoundError(f"entry {eid} not found")
    if view.kind not in allowed:
        raise InvalidInputError(f"entry {eid} is a {view.kind}, not a {' or '.join(allowed)}")
    stream = (f"session:{view.session_id}" if view.session_id else
              store.user_stream(view.user_id) if view.user_id else PROJECT_STREAM)
    store.writer.append(stream, lambda: [EntryUpdated(entry_id=eid, changes=changes)])


def update_finding(store: Store, finding_id: str, status: str) -> None:
    """Change a finding's status."""
    check_choice(status, "status", FINDING_STATUSES)
    change_entry(store, finding_id, ("finding",), EntryChanges(status=status))  # type: ignore[arg-type]


def set_importance(store: Store, entry_id: str, importance: float) -> None:
    """Set an entry's importance (0 to 1)."""
    value = check_unit(importance, "importance")
    change_entry(store, entry_id, tuple(DEFAULT_RATES), EntryChanges(importance=value))


def remember(store: Store, user_id: str, key: str, content: str, session_id: str | None = None, *,
             memory_id: str | None = None, event_id: str | None = None) -> str:
    """Remember ``content`` for a user under ``key`` (replacing an earlier one);
    ``memory_id`` and ``event_id`` given by importers."""
    uid, k = check_id(user_id, "user id"), check_key(key)
    text = check_content(content, "content", store.settings.max_content_bytes)
    counts: dict[str, int] = {}
    if store.entries.redactor is not None:
        text = store.entries.redactor.redact(text, counts)
    mid = new_id("mem") if memory_id is None else check_id(memory_id, "memory id")
    event = MemorySaved(user_id=uid, key=k, content=text, memory_id=mid,
                        session_id=None if session_id is None else _own_session(
                            store, store.writer.live_session(session_id, closed_ok=True), uid),
                        redactions=counts)
    ids = None if event_id is None else [event_id]
    store.writer.append(store.user_stream(uid, ids), lambda: [event], event_ids=ids)
    _log.info("memory saved", memory_id=mid)
    return mid


class MemoryPage(msgspec.Struct, frozen=True):
    """One page of a user's memories: ``total`` live memories in all,
    ``next_offset`` the offset of the next page (None on the last)."""

    memories: list[MemoryResult]
    total: int
    offset: int
    limit: int | None
    next_offset: int | None

    def to_dict(self) -> dict[str, Any]:
        """The ``memories --json`` shape."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]


def memories(store: Store, user_id: str, as_of: int | None = None,
             limit: int | None = None) -> list[MemoryResult]:
    """A user's live memories, by key (as of a seq, if given), at most ``limit``."""
    return memory_page(store, user_id, limit, 0, as_of).memories


def memory_page(store: Store, user_id: str, limit: object = None, offset: object = 0,
                as_of: int | None = None) -> MemoryPage:
    """A page of a user's live memories, by key (as of a seq, if given), with the
    total: ``limit`` from 1 to 1000 (None: all), ``offset`` from 0."""
    uid = check_id(user_id, "user id")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or not 1 <= limit <= 1000):
        raise InvalidInputError(f"limit must be an integer from 1 to 1000 (got {shown(limit)})")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"offset must be an integer >= 0 (got {shown(offset)})")
    with store.read(as_of) as views:
        found = views.memories(uid)
    end = len(found) if limit is None else offset + limit
    page = [memory_result(m) for m in found[offset:end]]
    return MemoryPage(page, len(found), offset, limit, end if end < len(found) else None)


def show(store: Store, item_id: str, as_of: int | None = None) -> EntryResult | MemoryResult:
    """An entry (live, redacted, compacted, deleted) or a memory, by id (as of a seq, if given)."""
    iid = check_id(item_id, "id")
    with store.read(as_of) as views:
        view = views.entry(iid)
        if view is not None:
            return entry_result(view)
        memory = views.memory_by_id(iid)
        if memory is not None:
            return memory_result(memory)
    when = "" if as_of is None else f" at seq {as_of}"
    raise EntryNotFoundError(f"no entry or memory with id {iid}{when}")
