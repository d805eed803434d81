"""What a deletion request selects: the refs for its tombstone, the seqs to
erase and the texts to scan for after the purge (held in memory only)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from eventstore import (
    DeletedRef,
    DeletionCriteria,
    EntryNotFoundError,
    InvalidInputError,
    MessageDetails,
    SessionNotFoundError,
    entry_texts,
)
from projections import EntryView, StoredEntry, ViewReader

from .companions import companions

__all__ = ["MIN_NEEDLE", "Selection", "check_honourable", "has_filters", "select"]


MIN_NEEDLE = 32


class Selection:
    """What a request selects: refs for the tombstone, seqs to erase, needles to scan for."""

    def __init__(self) -> None:
        self.refs: dict[str, DeletedRef] = {}
        self.seqs: set[int] = set()
        self.needles: set[bytes] = set()
        self.edited: set[str] = set()  # entries with earlier texts, in their edits' payloads

    def add_entry(self, view: EntryView) -> None:
        self.refs[view.entry_id] = DeletedRef(view.entry_id, view.kind, view.recorded_seq, view.session_id)
        self.seqs.add(view.recorded_seq)
        if view.edits:  # every edit's payload holds a text of the entry
            self.seqs.update(view.edits)
            self.edited.add(view.entry_id)
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


def select(views: ViewReader, criteria: DeletionCriteria, missing_ok: bool = False) -> Selection:
    """Resolve a request against the current views: every criterion narrows.

    The scope is the ids, or a session (of the user, when one is also given),
    or a user, or else the whole store; the filters (kinds, tags, before,
    after) then keep only the scope's entries that match all of them. A scope
    without filters goes whole: a session with its manifest, checkpoints and
    resource items, a user with every session and memory. ``missing_ok``: an
    id or session already gone selects nothing instead of failing (memlog's
    own requests, whose targets another deletion may have taken meanwhile).
    """
    check_honourable(criteria)
    sel = Selection()
    if criteria.ids:
        for item in criteria.ids:
            _select_id(views, sel, item, missing_ok)
    elif not has_filters(criteria):
        _select_whole(views, sel, criteria, missing_ok)
    else:
        for view in _scoped(views, criteria, missing_ok):
            if _matches(view, criteria):
                sel.add_entry(view)
    if criteria.include_derived:
        _add_derived(views, sel)
    for eid in sel.edited:  # the purge scans for the earlier texts too
        for _, version in views.entry_versions(eid)[:-1]:
            sel.needle(version.content)
    return sel


def has_filters(criteria: DeletionCriteria) -> bool:
    """Whether the request narrows its scope by kind, tag or time."""
    return bool(criteria.kinds or criteria.tags or criteria.before is not None
                or criteria.after is not None)


def check_honourable(criteria: DeletionCriteria) -> None:
    """Refuse what no selection can mean: nothing named, or ids with other criteria."""
    scoped = criteria.session_id is not None or criteria.user_id is not None
    if not (criteria.ids or scoped or has_filters(criteria)):
        raise InvalidInputError("say what to delete: ids, a session, a user or criteria")
    if criteria.ids and (scoped or has_filters(criteria)):
        raise InvalidInputError("ids name exactly what to delete: give them without a session, "
                                "a user, kinds, tags, before or after")
    if (criteria.before is not None and criteria.after is not None
            and criteria.after >= criteria.before):
        raise InvalidInputError("after must be earlier than before: no time is both")


def _select_whole(views: ViewReader, sel: Selection, criteria: DeletionCriteria,
                  missing_ok: bool) -> None:
    """A session or a user, whole (a session of another user than the one given: nothing)."""
    sid, uid = criteria.session_id, criteria.user_id
    if sid is None:
        if uid is not None:
            _select_user(views, sel, uid)
        return
    session = views.session(sid)
    if session is None and not missing_ok:
        raise SessionNotFoundError(f"session {sid} not found")
    if session is not None and (uid is None or session.user_id == uid):
        _select_session(views, sel, sid, missing_ok)


def _scoped(views: ViewReader, c: DeletionCriteria, missing_ok: bool) -> Iterable[EntryView]:
    """The live entries of the request's scope that may pass its filters (the
    stored version's test; :func:`_matches` reads the entry to be sure)."""
    sid, uid = c.session_id, c.user_id
    if sid is not None:
        session = views.session(sid)
        if session is None and not missing_ok:
            raise SessionNotFoundError(f"session {sid} not found")
        if session is None or (uid is not None and session.user_id != uid):
            return ()
        return itertools.chain(
            views.latest_entries(lambda s: s.session_id == sid and _may_match(s, c)),
            _resource_items(views, sid, session.user_id))
    if uid is not None:
        sessions = {s.session_id for s in views.sessions() if s.user_id == uid}
        return views.latest_entries(
            lambda s: (s.user_id == uid or s.session_id in sessions) and _may_match(s, c))
    return views.latest_entries(lambda s: _may_match(s, c))


def _select_id(views: ViewReader, sel: Selection, item: str, missing_ok: bool) -> None:
    view = views.entry(item)
    if view is not None and view.state != "deleted":
        sel.add_entry(view)
        return
    memory = views.memory_by_id(item)
    if memory is None:
        if missing_ok:
            return
        raise EntryNotFoundError(f"nothing to delete with id {item}")
    _select_memory(views, sel, memory.user_id, memory.key)


def _select_memory(views: ViewReader, sel: Selection, user_id: str, key: str) -> None:
    """Every saved version of the memory, and of the memories that copy its
    content (:mod:`.companions`: a LangGraph item's search text)."""
    for name in (key, *companions(key)):
        for version in views.memory_versions(user_id, name):
            sel.refs[version.memory_id] = DeletedRef(version.memory_id, "memory", version.saved_seq)
            sel.seqs.add(version.saved_seq)
            if version.content:
                sel.needle(version.content)


def _select_session(views: ViewReader, sel: Selection, session_id: str, missing_ok: bool) -> None:
    session = views.session(session_id)
    if session is None:
        if missing_ok:
            return
        raise SessionNotFoundError(f"session {session_id} not found")
    sel.refs[session_id] = DeletedRef(session_id, "session", session.started_seq)
    # every manifest change: its metadata, tags, and the reasons of archive and close
    sel.seqs.update(views.session_change_seqs(session_id) or [session.started_seq])
    for mark in views.session_checkpoints(session_id):  # its checkpoints go too
        sel.seqs.add(mark.seq)
        for label in (mark.chat_id, mark.model_id):
            if label:
                sel.needle(label)
    for text in (*session.metadata.keys(), *session.metadata.values(), *session.tags,
                 *((session.channel,) if session.channel else ())):
        sel.needle(text)
    for view in views.latest_entries(lambda s: s.session_id == session_id and s.state != "deleted"):
        sel.add_entry(view)
    for view in _resource_items(views, session_id, session.user_id):
        sel.add_entry(view)


def _resource_items(views: ViewReader, session_id: str, user_id: str | None) -> Iterator[EntryView]:
    """The items of memory resources keyed by the session: they carry no
    session id (they stay out of its transcript), but the session's id as their
    ``conversation_id`` and a ``resource:`` tag; only its user's sessionless
    entries are read to find them."""
    candidates = views.latest_entries(
        lambda s: s.session_id is None and s.user_id == user_id and s.state != "deleted")
    for view in candidates:
        entry = view.entry
        if (entry is not None and isinstance(entry.details, MessageDetails)
                and entry.details.conversation_id == session_id
                and any(t.startswith("resource:") for t in entry.tags)):
            yield view


def _select_user(views: ViewReader, sel: Selection, user_id: str) -> None:
    for session in list(views.sessions()):
        if session.user_id == user_id:
            _select_session(views, sel, session.session_id, missing_ok=False)
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
