"""The context builder: what an agent should know, within a token budget.

Sections, in the order they are printed: project context, the user's memories
and preferences, the latest handoff ("Last session", or "Handoff (this
session)" when it is the session's own), with a query the best matches of the
user's earlier messages and memories (:meth:`_Gather._recall`), relevant
decisions, lessons and
open findings (a query's best matches first, then the newest), open tasks,
the recovery snapshot of the previous session, the session summary (only
when the history was cut), and recent messages (without those a session
summary stands for: :mod:`commands.app.upkeep.summaries`).

Everything is drawn from what the session's user may see
(:func:`~commands.app.recall.scope.session_scope`): the user's own sessions that are
not archived (the session itself always), the entries and memories carrying
the user's id, and the project context shared by every session of the store.
A session without a user sees itself and the shared project context.

Carried over from the user's earlier sessions of the same project (not
archived): when this session has no handoff yet, the newest handoff of any of
them (an empty session in between does not hide it); and while this session
has no message, the last 3 messages of the previous session (the newest
earlier one), leaving out those the handoff shown was made from (an automatic
handoff on close quotes them already).

Project context: the newest ``project`` entry recorded without a session
(shared by every session of the store, seed 002's ``_project.md``), and the
newest ``project`` entry of the user's sessions of the same project. The
project of a session is its ``project`` metadata (sessions without one form
one project of their own).

A preference key holds its latest value: older values stay in the log and in
``show``/``audit history``, not in the block.

With a query, the search memlog uses (:func:`commands.app.recall.search.find`, both
sources, in the session's scope) ranks the user's messages and memories; the
best matches not shown elsewhere in the block form the section "Relevant
earlier messages and memories", best first, each with its date and its
session (a memory: its key), but the memories the memories section shows whole.

A section's share of the budget (the setting ``context_shares``; by default
60 % for those matches, nothing for the others) is kept for it; the other
sections fit in the rest, and the section then takes what they leave (see
:mod:`commands.app.recall.fitting`). Over budget, sections are trimmed, then dropped,
in this order (seed 002's, lessons first and the handoff last, after the
matches, which take only what their share and the others leave)::

    recall, lessons, findings, decisions, messages, recovery, summary, tasks,
    preferences, memories, project, instruction, handoff

The block ends with the memory-writing instruction (section ``instruction``,
:mod:`commands.app.recall.instruction`): how to save to memory, by the MCP tools or
the ``memlog`` commands; the setting ``memory_instruction`` turns it off.

Memory resources (:mod:`commands.app.recall.resource_sections`) add a section per
block, each within its allocation (the resource's ``context_ratio`` of the
budget, split by the blocks' ratios), printed before the recent messages and
trimmed after every other section but the handoff.

Tokens are counted by a pluggable function; the default is characters / 4,
rounded up (seed 002).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, takewhile

import msgspec

from eventstore import MEMORY_DOC_KIND, InvalidInputError, SessionNotFoundError, now_micros, shown
from projections import EntryView, SearchQuery, SessionView, ViewReader

from ..results import ContextBlock, SearchResult
from ..store.store import Store
from ..store.validate import check_id
from . import search
from .fitting import Section, block, fit
from .instruction import instruction
from .resource_sections import resource_sections
from .restore import restore_on_read
from .scope import project_of, session_scope, user_sessions

__all__ = ["DROP_ORDER", "RECOVERY_MESSAGES", "build_context", "chars_over_four"]

DROP_ORDER = ("recall", "lessons", "findings", "decisions", "messages", "recovery", "summary", "tasks",
              "preferences", "memories", "project", "instruction", "handoff")
RECOVERY_MESSAGES = 3
_TITLES = {
    "project": "Project:", "memories": "User memories:", "preferences": "Preferences:",
    "handoff": "Last session:", "recall": "Relevant earlier messages and memories:",
    "decisions": "Relevant decisions:", "lessons": "Relevant lessons:",
    "findings": "Open findings:",
    "tasks": "Open tasks:", "recovery": "Recovering previous session:",
    "summary": "Summary of earlier conversation:", "messages": "Recent messages:",
}
_OWN_HANDOFF = "Handoff (this session):"
_ORDER = ("project", "memories", "preferences", "handoff", "recall", "decisions", "lessons", "findings",
          "tasks", "recovery", "summary", "messages", "instruction")
# The sections a query ranks: (kind, how many). Findings resolved or dropped stay out.
_SEARCHED = {"decisions": ("decision", 3), "lessons": ("lesson", 2), "findings": ("finding", 2)}
_CLOSED_FINDINGS = ("resolved", "wont_fix")
_MAX_TASKS = 50
_RECALL_LIMIT = 50  # the most matches the recall section is given to fit


def chars_over_four(text: str) -> int:
    """Seed 002's token estimate."""
    return math.ceil(len(text) / 4)


def build_context(store: Store, session_id: str, query: str | None, budget: int | None,
                  count_tokens: Callable[[str], int] | None = None, as_of: int | None = None,
                  now: int | None = None, face: str = "cli") -> ContextBlock:
    """Assemble the block for ``session_id`` within ``budget`` tokens (None: the
    settings' ``context_budget_tokens``; 0 is refused, not taken for None), as
    of a seq, if given; ``face`` (cli or mcp) words the memory-writing
    instruction (:mod:`commands.app.recall.instruction`)."""
    count = count_tokens or chars_over_four
    if budget is None:
        budget = store.settings.context_budget_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InvalidInputError(f"budget must be a positive number of tokens (got {shown(budget)})")
    if query is not None and (not isinstance(query, str) or len(query) > 1000):
        raise InvalidInputError("query must be a string of at most 1000 characters")
    sid = check_id(session_id, "session id")
    with store.read(as_of, search=True) as views:
        session = views.session(sid)
        if session is None:
            when = "" if as_of is None else f" at seq {as_of}"
            raise SessionNotFoundError(f"session {sid} not found{when}")
        gather = _Gather(store, views, session, as_of, now_micros() if now is None else now)
        sections = gather.sections(query or "")
        sections += instruction(session, face, store.settings.memory_instruction)
        # memory resources: their blocks, each within its allocation
        extra = resource_sections(store.settings.resources, views, session, budget, count,
                                  None if as_of is not None else gather.now, store.alias)
    order, drop_order = _with_resources(extra)
    if session.archived and as_of is None:  # a read restores it
        restore_on_read(store, sid)
    shares = store.settings.context_shares
    live, dropped = fit(sections + extra, budget, count, order, drop_order, shares)
    while gather.drop_repeats(live):  # a memory shown in its own section is not shown twice
        live, dropped = fit(sections + extra, budget, count, order, drop_order, shares)
    trimmed_messages = any(s.name == "messages" and s.removed for s in live) or "messages" in dropped
    return block(live, dropped, budget, count, order, gather.cut or trimmed_messages)


def _with_resources(extra: list[Section]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The print and drop orders with the resources' sections: printed before the
    recent messages, trimmed after every other section but the handoff."""
    names = tuple(s.name for s in extra)
    if not names:
        return _ORDER, DROP_ORDER
    at = _ORDER.index("messages")
    return _ORDER[:at] + names + _ORDER[at:], DROP_ORDER[:-1] + names + DROP_ORDER[-1:]


class _Gather:
    """Collects each section's items for one session, inside one read."""

    def __init__(self, store: Store, views: ViewReader, session: SessionView, as_of: int | None,
                 now: int) -> None:
        self.store, self.views, self.session = store, views, session
        self.as_of, self.now = as_of, now
        self.sid = session.session_id
        mine = [] if session.user_id is None else list(user_sessions(views, session.user_id))
        self.scope = session_scope(views, session, mine)
        # Archived sessions stay out, but an archived session's own context still shows it.
        self.exclude = tuple(a for a in views.archived_sessions() if a != self.sid)
        self.previous = _previous_session(mine, session)
        self.earlier = [s.session_id for s in mine
                        if s.started_seq < session.started_seq and project_of(s) == project_of(session)]
        self.same_project = [s.session_id for s in mine if s.session_id != self.sid
                             and project_of(s) == project_of(session)] + [self.sid]
        self.cut = False
        self.shown: set[str] = set()  # the messages the block shows outside the recall section
        self.memory_ids: list[str] = []  # the memories section's, in its order
        self.recalled: list[str] = []  # the recall section's ids, in its order
        self.recall: Section | None = None

    def sections(self, query: str) -> list[Section]:
        """Every section, items most valuable first."""
        messages = self._messages()
        handoff, handed = self._handoff()
        out = [self._project(), *self._user_sections(), handoff, *self._searched(query),
               self._tasks(), messages]
        if not messages.items and self.previous is not None:
            out.append(self._recovery(self.previous, handed))
        summary = self._own("summary", 1)
        # compaction and summaries: history folded into a summary
        # (compacted or summarised: its ``derived_from``) was cut too.
        if summary and (self.cut or _folds(summary[0])):
            out.append(Section("summary", _TITLES["summary"], [_text(summary[0])]))
        if query:
            out.append(self._recall(query))
        return out

    def _recall(self, query: str) -> Section:
        """The best matches of ``query`` among the messages and memories of the
        session's scope, as memlog's search ranks them, but those the block
        shows already (this session's recent messages, the recovery)."""
        found = search.make_query(query, kinds=("message",), limit=_RECALL_LIMIT, source="both",
                                  scope=self.scope)
        found = msgspec.structs.replace(found, exclude_sessions=self.exclude)
        hits = [h for h in search.find(self.store, found, as_of=self.as_of, now=self.now, reader=self.views)
                if h.id not in self.shown]
        self.recalled = [h.id for h in hits]
        self.recall = Section("recall", _TITLES["recall"], [self._recalled(h) for h in hits])
        return self.recall

    def _recalled(self, hit: SearchResult) -> str:
        """``- DATE SESSION: text`` (a memory: ``- DATE memory KEY: value``)."""
        day = hit.occurred_at[:10]
        if hit.type == MEMORY_DOC_KIND:
            memory = self.views.memory_by_id(hit.id)
            return f"- {day} memory {memory.key if memory else ''}: {_flat(hit.content)}"
        return f"- {day} {hit.session_id}: {_flat(hit.content)}"

    def drop_repeats(self, live: list[Section]) -> bool:
        """Leave out of the recall section the memories that the fitted
        memories section (``live``) shows whole; True when any went."""
        memories = next((s for s in live if s.name == "memories"), None)
        if memories is None or self.recall is None:
            return False
        whole = set(self.memory_ids[: len(memories.items) - memories.cut])
        keep = [(i, item) for i, item in zip(self.recalled, self.recall.items, strict=True) if i not in whole]
        if len(keep) == len(self.recalled):
            return False
        self.recalled, self.recall.items = [i for i, _ in keep], [item for _, item in keep]
        return True

    def _find(self, kinds: tuple[str, ...], text: str = "", limit: int = 10,
              sort: str = "newest") -> list[EntryView]:
        """Entries of ``kinds`` in the session's scope, as the search ranks them."""
        query = SearchQuery(text=text, kinds=kinds, limit=limit, sort=sort,  # type: ignore[arg-type]
                            scope=self.scope, include_archived=True, exclude_sessions=self.exclude)
        # The ranking's views as they are (no results with snippets, no second read).
        ranking = self.store.proj.search(query, as_of=self.as_of, now=self.now, reader=self.views)
        return [r.view for r in ranking.entries if isinstance(r.view, EntryView) and r.view.entry is not None]

    def _newest(self, kind: str, session_ids: Iterable[str]) -> Iterator[EntryView]:
        """Entries of ``kind`` in ``session_ids``, newest first (read from the
        views, session by session, merged by event time)."""
        streams = [self.views.session_entries(sid, (kind,), newest_first=True) for sid in session_ids]
        return heapq.merge(*streams, key=lambda v: (-v.occurred_at, v.entry_id))

    def _own(self, kind: str, limit: int, session_id: str | None = None) -> list[EntryView]:
        """The newest ``limit`` entries of ``kind`` in this (or another) session."""
        found = self.views.session_entries(session_id or self.sid, (kind,), newest_first=True)
        return list(islice(found, limit))

    def _project(self) -> Section:
        mine = next(self._newest("project", self.same_project), None)
        found = self._find(("project",), limit=100)
        shared = next((v for v in found if v.session_id is None and v.user_id is None), None)
        items = list(dict.fromkeys(_text(v) for v in (mine, shared) if v is not None))
        return Section("project", _TITLES["project"], items)

    def _user_sections(self) -> list[Section]:
        uid = self.session.user_id
        if uid is None:
            return []
        memories = sorted(self.views.memories(uid), key=lambda m: -m.saved_seq)
        limit = self.store.settings.max_user_memories
        items = [f"- {m.key}: {_flat(m.content or '')}" for m in memories[:limit]]
        self.memory_ids = [m.memory_id for m in memories[:limit]]
        latest: dict[str, str] = {}
        for view in self._find(("preference",), limit=1000):
            details = view.entry.details if view.entry is not None else None
            key = getattr(details, "key", None)
            if view.user_id == uid and key is not None and key not in latest:
                latest[key] = f"- {key}: {_flat(getattr(details, 'value', ''))}"
        return [Section("memories", _TITLES["memories"], items),
                Section("preferences", _TITLES["preferences"], list(latest.values()))]

    def _handoff(self) -> tuple[Section, frozenset[str]]:
        """The latest handoff, and the messages it was made from (an automatic
        handoff on close: the recovery does not repeat them)."""
        own = self._own("handoff", 1)  # this session's own handoff is not the last session's
        found = own or list(islice(self._newest("handoff", self.earlier), 1))
        sources = frozenset(i for v in found if v.entry is not None for i in v.entry.derived_from)
        title = _OWN_HANDOFF if own else _TITLES["handoff"]
        return Section("handoff", title, [_text(v) for v in found]), sources

    def _searched(self, query: str) -> list[Section]:
        """Each searched kind's best matches for ``query``, then its newest to fill
        the places left: a query orders what is shown, it does not hide the
        session's only decision because it shares no word with the query."""
        out = []
        for name, (kind, limit) in _SEARCHED.items():
            matched = self._find((kind,), query, limit * 2, "relevance") if query else []
            found = [v for v in matched if _shown(v)][:limit]
            taken = {v.entry_id for v in found}
            for view in self._newest(kind, self.scope.session_ids):
                if len(found) >= limit:
                    break
                if view.entry_id not in taken and _shown(view):
                    found.append(view)
            out.append(Section(name, _TITLES[name], [f"- {_text(v)}" for v in found]))
        return out

    def _tasks(self) -> Section:
        found = self._newest("task", self.scope.session_ids)
        is_open = (v for v in found if not getattr(v.entry and v.entry.details, "done", False))
        open_tasks = list(islice(is_open, _MAX_TASKS))
        return Section("tasks", _TITLES["tasks"], [f"- [ ] {_text(v)}" for v in open_tasks],
                       chronological=True)

    def _messages(self) -> Section:
        keep = self.store.settings.max_context_messages
        found = self._own("message", keep + 1)
        # compaction and summaries: messages a session summary
        # stands for leave the context (the newest summary shows instead).
        shown = list(takewhile(lambda v: self.views.summarised_by(v.entry_id) is None, found))
        self.cut = len(found) > keep or len(shown) < len(found)
        found = shown
        self.shown.update(v.entry_id for v in found[:keep])
        return Section("messages", _TITLES["messages"], [_message(v) for v in found[:keep]],
                       chronological=True)

    def _recovery(self, previous: SessionView, handed: frozenset[str]) -> Section:
        found = self._own("message", RECOVERY_MESSAGES, previous.session_id)
        shown = [_message(v) for v in found if v.entry_id not in handed]
        self.shown.update(v.entry_id for v in found if v.entry_id not in handed)
        return Section("recovery", _TITLES["recovery"], shown, chronological=True)


def _previous_session(mine: list[SessionView], session: SessionView) -> SessionView | None:
    """The newest of the user's sessions (``mine``, not archived) of the same
    project started before ``session``, or None."""
    earlier = [s for s in mine
               if s.started_seq < session.started_seq and project_of(s) == project_of(session)]
    return max(earlier, key=lambda s: s.started_seq, default=None)


def _message(view: EntryView) -> str:
    return f"[{(view.entry.role if view.entry else None) or 'message'}]: {_text(view)}"


def _text(view: EntryView) -> str:
    return _flat(view.entry.content) if view.entry is not None else ""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _shown(view: EntryView) -> bool:
    """Whether a searched entry belongs in the context (not a closed finding)."""
    return getattr(view.entry and view.entry.details, "status", None) not in _CLOSED_FINDINGS


def _folds(view: EntryView) -> bool:
    """Whether a summary stands for entries (compaction, session summaries)."""
    return view.entry is not None and bool(view.entry.derived_from)
