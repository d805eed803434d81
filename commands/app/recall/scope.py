"""Who is reading: the :class:`~projections.Scope` of a user, an agent or a session.

A user sees their own sessions (not the archived ones unless asked), the
entries and memories that carry their user id (preferences, memories), and
the project context shared by every session of the store. An agent sees the
entries it wrote, the sessions it took part in, and the shared project
context. Both at once (``--user U --agent A``): what A may see of U, that is
U's own entries and U's sessions that A took part in. Nothing of another user
is ever in a user's scope.

A search scoped to a user looks through entries and memories alike unless a
source is given (:func:`default_source`).

The sessions come from the views (as of the reader's seq), so a scope is
computed inside the read transaction the search then uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from projections import Scope, SearchQuery, SessionView, ViewReader

from ..store.store import Store
from ..store.validate import check_id

__all__ = ["PROJECT_KEY", "default_source", "project_of", "reader_scope", "scoped_query", "session_scope",
           "user_sessions"]

# The session metadata key that names the project a session belongs to.
PROJECT_KEY = "project"


def project_of(session: SessionView) -> str | None:
    """The project a session belongs to (its ``project`` metadata), or None."""
    return session.metadata.get(PROJECT_KEY)


def user_sessions(views: ViewReader, user_id: str, include_archived: bool = False,
                  agent_id: str | None = None) -> Iterator[SessionView]:
    """The sessions of ``user_id`` (not archived unless asked; with ``agent_id``,
    only those the agent took part in)."""
    for session in views.sessions():
        if session.user_id != user_id or (session.archived and not include_archived):
            continue
        if agent_id is None or agent_id in session.agent_ids:
            yield session


def reader_scope(views: ViewReader, user_id: object = None, agent_id: object = None,
                 include_archived: bool = False) -> Scope | None:
    """The scope of a user, an agent, or both (None when neither is given:
    no visibility filter)."""
    uid = None if user_id is None else check_id(user_id, "user id")
    aid = None if agent_id is None else check_id(agent_id, "agent id")
    if uid is None and aid is None:
        return None
    if uid is None:
        assert aid is not None
        sids = tuple(s.session_id for s in views.sessions()
                     if aid in s.agent_ids and (include_archived or not s.archived))
        return Scope(agent_id=aid, session_ids=sids)
    sids = tuple(s.session_id for s in user_sessions(views, uid, include_archived, aid))
    return Scope(user_id=uid, session_ids=sids)


def session_scope(views: ViewReader, session: SessionView,
                  mine: Iterable[SessionView] | None = None) -> Scope:
    """What the context of ``session`` may draw on: its user's scope (the
    session itself always included), or for a session without a user, the
    session alone; plus the shared project context. ``mine``: the user's
    sessions, when the caller has them already."""
    if session.user_id is None:
        return Scope(session_ids=(session.session_id,))
    found = user_sessions(views, session.user_id) if mine is None else mine
    sids = [s.session_id for s in found]
    if session.session_id not in sids:
        sids.append(session.session_id)
    return Scope(user_id=session.user_id, session_ids=tuple(sids))


def default_source(source: object, user_id: object) -> object:
    """What a search looks through when ``source`` is not given (None): for a
    user-scoped search, ``both`` (the user's entries, preferences and memories,
    and the shared project context); else ``entries``. A given source stays."""
    if source is not None:
        return source
    return "both" if user_id is not None else "entries"


def scoped_query(store: Store, query: SearchQuery, user_id: object = None, agent_id: object = None,
                 as_of: int | None = None) -> SearchQuery:
    """``query`` limited to what ``user_id`` and/or ``agent_id`` may see (as of a
    seq, if given); unchanged when neither is given. Archived sessions stay
    out unless the query includes them."""
    if user_id is None and agent_id is None:
        return query
    with store.read(as_of) as views:
        scope = reader_scope(views, user_id, agent_id, query.include_archived)
    return msgspec.structs.replace(query, scope=scope)
