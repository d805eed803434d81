"""Use case of agents (seed 002's ``listAgents`` and ``getCategoryCounts``):
the agents of a scope, each with its entries counted by kind and its last
activity.

An agent of a scope is one a session of the scope names (its ``agent_ids``)
or one that wrote an entry there (the entry's ``agent_id``). Everything comes
from the views: the sessions' manifests and the entries' stored versions,
which keep each entry's agent, so no content is read from the log; only a
version stored before the views kept the agent (an older store not replayed
since) has its entry read back. Deleted entries count for nothing; redacted
ones still count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eventstore import format_micros
from projections import AGENT_UNKNOWN, SessionView, StoredEntry, ViewReader

from ..store.store import Store
from ..store.validate import check_id

__all__ = ["AgentResult", "agents"]


@dataclass(frozen=True)
class AgentResult:
    """One agent of a scope: its entries by kind, how many in all, the
    sessions it takes part in or wrote in, and its last activity (the newest
    of its entries' recording times and its sessions' starts; ISO 8601)."""

    agent_id: str
    counts: dict[str, int]
    entries: int
    sessions: int
    last_activity: str | None


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    last: int = 0

    def saw(self, session_id: str, at: int) -> None:
        self.sessions.add(session_id)
        self.last = max(self.last, at)

    def result(self, agent_id: str) -> AgentResult:
        counts = dict(sorted(self.counts.items()))
        return AgentResult(agent_id, counts, sum(counts.values()), len(self.sessions),
                           format_micros(self.last) if self.last else None)


def agents(store: Store, user_id: str | None = None) -> list[AgentResult]:
    """The agents of every session (archived ones too), or of ``user_id``'s
    sessions, by agent id."""
    user = None if user_id is None else check_id(user_id, "user id")
    tallies: dict[str, _Tally] = {}
    with store.read() as views:
        for session in views.sessions():
            if user is None or session.user_id == user:
                _count_session(views, session, tallies)
    return [tallies[a].result(a) for a in sorted(tallies)]


def _count_session(views: ViewReader, session: SessionView, tallies: dict[str, _Tally]) -> None:
    sid = session.session_id
    for agent in session.agent_ids:
        tallies.setdefault(agent, _Tally()).saw(sid, session.started_at)
    unknown: list[StoredEntry] = []
    for stored in views.session_stored(sid):
        if stored.agent_id == AGENT_UNKNOWN:
            unknown.append(stored)
        elif stored.agent_id is not None:
            _count(tallies, stored.agent_id, stored.kind, stored.recorded_at, sid)
    for view in views.resolve(unknown) if unknown else ():
        if view.entry is not None and view.entry.agent_id is not None:
            _count(tallies, view.entry.agent_id, view.kind, view.recorded_at, sid)


def _count(tallies: dict[str, _Tally], agent: str, kind: str, at: int, sid: str) -> None:
    tally = tallies.setdefault(agent, _Tally())
    tally.counts[kind] = tally.counts.get(kind, 0) + 1
    tally.saw(sid, at)
