"""The context builder: what an agent should know, within a token budget.

Sections, in the order they are printed: project context, the user's memories
and preferences, the latest handoff, relevant decisions and lessons (found by
search), open tasks, the session summary (only when the history was cut), and
recent messages. Over budget, sections go in seed 002's order, lessons first
and the handoff last:

    lessons, decisions, oldest messages (one by one), summary, tasks,
    preferences, memories, project, handoff

Tokens are counted by a pluggable function; the default is characters / 4,
rounded up (seed 002).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from eventstore import InvalidInputError, SessionNotFoundError, now_micros
from projections import EntryView, SearchQuery, ViewReader

from .results import ContextBlock, ContextSection
from .search import find
from .store import Store
from .validate import check_id

__all__ = ["DROP_ORDER", "build_context", "chars_over_four"]

DROP_ORDER = ("lessons", "decisions", "messages", "summary", "tasks", "preferences", "memories", "project",
              "handoff")
_TITLES = {
    "project": "Project:", "memories": "User memories:", "preferences": "Preferences:",
    "handoff": "Last session:", "decisions": "Relevant decisions:", "lessons": "Relevant lessons:",
    "tasks": "Open tasks:", "summary": "Summary of earlier conversation:", "messages": "Recent messages:",
}
_ORDER = ("project", "memories", "preferences", "handoff", "decisions", "lessons", "tasks", "summary",
          "messages")


def chars_over_four(text: str) -> int:
    """Seed 002's token estimate."""
    return math.ceil(len(text) / 4)


def build_context(store: Store, session_id: str, query: str | None, budget: int,
                  count_tokens: Callable[[str], int] | None = None, as_of: int | None = None,
                  now: int | None = None) -> ContextBlock:
    """Assemble the block for ``session_id`` within ``budget`` tokens (as of a seq, if given)."""
    count = count_tokens or chars_over_four
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InvalidInputError(f"budget must be a positive number of tokens (got {budget!r})")
    sid = check_id(session_id, "session id")
    with store.read(as_of, search=True) as views:
        session = views.session(sid)
        if session is None:
            raise SessionNotFoundError(f"session {sid} not found")
        parts = _gather(store, views, sid, session.user_id, query or "", as_of,
                        now_micros() if now is None else now)
    return _fit(parts, budget, count)


class _Parts:
    """Gathered lines per section, plus the messages and the summary."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}
        self.messages: list[str] = []
        self.summary: str | None = None
        self.cut = False


def _gather(store: Store, views: ViewReader, sid: str, user_id: str | None, query: str,
            as_of: int | None, now: int) -> _Parts:
    parts = _Parts()
    newest = list(views.session_entries(sid, newest_first=True))
    by_kind: dict[str, list[EntryView]] = {}
    for view in newest:
        by_kind.setdefault(view.kind, []).append(view)
    if project := by_kind.get("project"):
        parts.lines["project"] = [_text(project[0])]
    if user_id is not None:
        parts.lines["memories"] = [f"- {m.key}: {m.content}" for m in views.memories(user_id)
                                   ][: store.settings.max_user_memories]
        prefs = _search(store, views, SearchQuery(kinds=("preference",), user_id=user_id, limit=20,
                                                 sort="newest"), as_of, now)
        parts.lines["preferences"] = [f"- {p}" for p in prefs]
    if handoff := by_kind.get("handoff"):
        parts.lines["handoff"] = [_text(handoff[0])]
    for kind, section, limit in (("decision", "decisions", 3), ("lesson", "lessons", 2)):
        if query:
            found = _search(store, views, SearchQuery(text=query, kinds=(kind,), limit=limit), as_of, now)
        else:
            found = [_text(v) for v in by_kind.get(kind, [])[:limit]]
        parts.lines[section] = [f"- {t}" for t in found]
    tasks = [v for v in by_kind.get("task", []) if not getattr(v.entry and v.entry.details, "done", False)]
    parts.lines["tasks"] = [f"- [ ] {_text(v)}" for v in reversed(tasks)]
    messages = list(reversed(by_kind.get("message", [])))
    keep = messages[-store.settings.max_context_messages:]
    parts.cut = len(keep) < len(messages)
    parts.messages = [f"[{(v.entry.role if v.entry else None) or 'message'}]: {_text(v)}" for v in keep]
    if summary := by_kind.get("summary"):
        parts.summary = _text(summary[0])
    return parts


def _search(store: Store, views: ViewReader, query: SearchQuery, as_of: int | None,
            now: int) -> list[str]:
    return [r.content for r in find(store, query, as_of, now, reader=views)]


def _text(view: EntryView) -> str:
    return " ".join(view.entry.content.split()) if view.entry is not None else ""


def _render(parts: _Parts, dropped: set[str]) -> list[ContextSection]:
    sections = []
    for name in _ORDER:
        if name in dropped:
            continue
        if name == "messages":
            lines = parts.messages
        elif name == "summary":
            lines = [parts.summary] if parts.cut and parts.summary else []
        else:
            lines = parts.lines.get(name, [])
        if lines:
            sections.append(ContextSection(name, 0, "\n".join([_TITLES[name], *lines])))
    return sections


def _fit(parts: _Parts, budget: int, count: Callable[[str], int]) -> ContextBlock:
    dropped: list[str] = []
    while True:
        sections = _render(parts, set(dropped))
        text = _join(sections)
        if count(text) <= budget:
            break
        victim = next((n for n in DROP_ORDER if n not in dropped and _present(n, sections)), None)
        if victim == "messages" and len(parts.messages) > 1:
            parts.messages = parts.messages[1:]
            parts.cut = True
            continue
        if victim is None:
            text = _shorten(text, budget, count)
            break
        dropped.append(victim)
    final = tuple(ContextSection(s.name, count(s.text), s.text) for s in _render(parts, set(dropped)))
    if not sections:
        final = ()
    return ContextBlock(text=text, tokens=count(text), budget=budget, sections=final,
                        dropped=tuple(dropped), truncated=parts.cut)


def _present(name: str, sections: list[ContextSection]) -> bool:
    return any(s.name == name for s in sections)


def _join(sections: list[ContextSection]) -> str:
    if not sections:
        return ""
    return "## MEMORY CONTEXT\n\n" + "\n\n".join(s.text for s in sections)


def _shorten(text: str, budget: int, count: Callable[[str], int]) -> str:
    """Cut the text until it fits (only when even the handoff alone is too long)."""
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if count(text[:mid] + "…") <= budget:
            low = mid
        else:
            high = mid - 1
    return text[:low] + "…" if low else ""
