"""The read tools: recall, context, show, sessions, memories, history, as_of.

Each is a method whose signature is the tool's input schema and whose
TypedDict return is its output schema. Every id an argument names goes
through the :class:`~commands.mcp.scope.Guard`; every search is scoped to the
server's user (and agent) by the facade's own scope.
"""

from __future__ import annotations

from eventstore import EntryKind, FindingStatus, InvalidInputError, Level, SearchMode, SearchSource

from ..app import MemoryResult
from ..memory import MemoryLog
from .results import (
    AgentsOut,
    AsOfOut,
    ContextOut,
    HistoryOut,
    MemoryPageOut,
    RecallOut,
    RecoveryOut,
    SessionsOut,
    ShowOut,
    TranscriptOut,
    agents_out,
    context_out,
    entry_out,
    history_item_out,
    hit_out,
    memory_out,
    recovery_out,
    session_out,
    show_out,
    transcript_out,
)
from .scope import Guard, ServerScope

__all__ = ["ReadTools"]


class ReadTools:
    """The tools that read; none of them writes (a search records its
    accesses unless the server is read-only)."""

    def __init__(self, mem: MemoryLog, scope: ServerScope) -> None:
        self.mem = mem
        self.scope = scope
        self.guard = Guard(mem, scope)

    def recall(self, query: str = "", kinds: list[EntryKind] | None = None, session_id: str | None = None,
               tags: list[str] | None = None, since: str | None = None, until: str | None = None,
               limit: int = 10, mode: SearchMode | None = None, source: SearchSource = "both",
               user_id: str | None = None, statuses: list[FindingStatus] | None = None,
               severities: list[Level] | None = None, topic: str | None = None) -> RecallOut:
        """Search the user's entries and memories (and the shared project context).

        mode: text (BM25), semantic or hybrid (default: hybrid when an embedder
        is installed, else text); source: entries, memories or both; since and
        until are ISO 8601 times; session_id keeps one of the user's sessions;
        statuses and severities keep the findings with one of them; topic keeps the
        messages of that topic."""
        if session_id is not None:
            self.guard.session(session_id)
        hits = self.mem.search(query, kinds=kinds, session_id=session_id, tags=tags, since=since,
                               until=until, limit=limit, mode=mode, source=source,
                               user_id=self.guard.reader(user_id), agent_id=self.scope.agent,
                               record_access=False if self.scope.read_only else None,
                               statuses=statuses, severities=severities, topic=topic)
        return {"results": [hit_out(h) for h in hits], "count": len(hits)}

    def context(self, session_id: str, query: str | None = None, budget: int | None = None) -> ContextOut:
        """A context block for one of the user's sessions, within a token budget
        (default from the store's settings), to paste into a prompt. With a
        query, a section "Relevant earlier messages and memories" (``recall``)
        holds the best matches of the user's messages and memories, each with
        its date and session, within the share of the budget kept for it."""
        self.guard.session(session_id)
        if budget is not None and not 50 <= budget <= 1_000_000:
            raise InvalidInputError(f"budget must be from 50 to 1000000 tokens (got {budget})")
        return context_out(self.mem.context(session_id, query=query, budget_tokens=budget, face="mcp"))

    def show(self, item_id: str) -> ShowOut:
        """An entry (live, redacted or deleted: then without content) or a memory, by id."""
        return show_out(self.guard.item(item_id))

    def recover(self, agent_id: str | None = None, user_id: str | None = None) -> RecoveryOut:
        """Resume where the user left off: the newest checkpoint still valid (7
        days by default) of the user (and agent: the server's, unless given),
        with the context and the session's last messages as of it."""
        agent = agent_id if agent_id is not None else self.scope.agent
        return recovery_out(self.mem.recover(self.guard.user(user_id), agent, face="mcp"))

    def transcript(self, session_id: str, limit: int = 50, offset: int = 0) -> TranscriptOut:
        """The messages of one of the user's sessions in the order they occurred,
        a page at a time (also the resource memory://session/{id}/transcript)."""
        sid = self.guard.session(session_id).id
        return transcript_out(self.mem.transcript(sid, limit=limit, offset=offset))

    def sessions(self, include_archived: bool = False, user_id: str | None = None) -> SessionsOut:
        """The user's sessions (archived ones too if asked)."""
        found = self.mem.sessions(self.guard.reader(user_id), archived=None if include_archived else False)
        return {"sessions": [session_out(s) for s in found]}

    def memories(self, limit: int = 50, offset: int = 0, user_id: str | None = None) -> MemoryPageOut:
        """A page of the user's memories, by key, with the total and the next offset."""
        page = self.mem.memory_page(self.guard.user(user_id), limit=limit, offset=offset)
        return {"memories": [memory_out(m) for m in page.memories], "total": page.total,
                "offset": page.offset, "limit": page.limit, "next_offset": page.next_offset}

    def agents(self, user_id: str | None = None) -> AgentsOut:
        """The agents of the user's sessions, each with its entries counted by
        kind (message, decision, finding, ...), its sessions and its last activity."""
        return agents_out(self.mem.agents(self.guard.reader(user_id)))

    def history(self, item_id: str) -> HistoryOut:
        """Every event that touched one of the user's entries, memories or
        sessions, oldest first (content only while it still exists)."""
        self.guard.history_target(item_id)
        return {"id": item_id, "events": [history_item_out(i) for i in self.mem.history(item_id)]}

    def as_of(self, point: str, item_id: str | None = None, session_id: str | None = None,
              query: str | None = None, limit: int = 10, user_id: str | None = None) -> AsOfOut:
        """What memlog knew at a point: an ISO 8601 time or a seq ("@120").

        item_id: that entry or memory as it was ("absent" if recorded later);
        query (with session_id to keep one session): a search as of then;
        session_id alone: that session's manifest then; nothing: the user's
        memories then."""
        pit = self.mem.as_of(_point(point))
        out: AsOfOut = {"seq": pit.seq, "entry": None, "memory": None, "session": None,
                        "results": None, "memories": None}
        if item_id is not None:
            self.guard.item(item_id)
            item = pit.show(item_id)
            if isinstance(item, MemoryResult):
                out["memory"] = memory_out(item)
            else:
                out["entry"] = entry_out(item)
        elif query is not None:
            if session_id is not None:
                self.guard.session(session_id)
            hits = pit.search(query, session_id=session_id, limit=limit,
                              user_id=self.guard.reader(user_id), agent_id=self.scope.agent)
            out["results"] = [hit_out(h) for h in hits]
        elif session_id is not None:
            self.guard.session(session_id)
            out["session"] = session_out(pit.session(session_id))
        else:
            out["memories"] = [memory_out(m) for m in pit.memories(self.guard.user(user_id))]
        return out


def _point(point: str) -> str | int:
    """A time or ``@N`` as the facade takes it (a bare number is a seq too)."""
    text = point.strip()
    if not text:
        raise InvalidInputError("point must be an ISO 8601 time or a seq like @120")
    return int(text) if text.isdigit() else text
