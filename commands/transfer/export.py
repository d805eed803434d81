"""Export a store (or one user's, or one session's part of it, as of a point)
as JSONL or markdown, both for people to read.

Only what ``show`` shows is exported: live and redacted entries (their text
as it is now, the redacted spans gone), live memories, sessions. Deleted
entries and forgotten memories leave nothing, not even their ids.
``recorded_at`` and ``recorded_seq`` are facts of this store's log, not of the
memory, and are not exported (an import records anew); so are a session's
``started_at`` and ``closed_at`` and a memory's ``saved_at``.

JSONL: a header line (``{"type": "memlog.export", ...}``), then one line per
session, entry (in ``occurred_at`` order) and memory; ``memlog import jsonl``
reads it back with the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from eventstore import SHOWN_STATES, SessionNotFoundError, format_micros
from projections import EntryView, SessionView

from ..app.results import entry_result, shown_details
from ..app.store.store import Store

__all__ = ["EXPORT_VERSION", "export_jsonl", "export_markdown", "exported"]

EXPORT_VERSION = 1
_json = msgspec.json.Encoder()
_ENTRY_FIELDS = ("session_id", "user_id", "agent_id", "role", "tags", "importance", "details",
                 "occurred_at", "derived_from", "redactions")


class Exported(msgspec.Struct):
    """What an export holds, read in one views transaction."""

    head: dict[str, Any]
    sessions: list[dict[str, Any]]
    entries: list[dict[str, Any]]
    memories: list[dict[str, Any]]


def exported(store: Store, *, user_id: str | None = None, session_id: str | None = None,
             as_of: int | None = None) -> Exported:
    """The sessions, entries and memories an export holds (see the module doc)."""
    head = {"type": "memlog.export", "version": EXPORT_VERSION,
            "seq": store.log.head().seq if as_of is None else as_of,
            "user_id": user_id, "session_id": session_id}
    with store.read(as_of) as views:
        if session_id is not None and views.session(session_id) is None:
            raise SessionNotFoundError(f"session {session_id} not found")
        chosen = [v for v in views.sessions() if _keeps_session(v, user_id, session_id)]
        ids = {v.session_id for v in chosen}
        entries = [_entry(v) for v in views.entries_by_time()
                   if _keeps_entry(v, ids, user_id, session_id)]
        users = [user_id] if user_id is not None else [] if session_id is not None else _memory_users(views)
        memories = [{"type": "memory", "id": m.memory_id, "user_id": m.user_id, "key": m.key,
                     "content": m.content} for u in users for m in views.memories(u)]
    sessions = [_session(v) for v in chosen]
    return Exported(head, sessions, entries, memories)


def _keeps_session(view: SessionView, user_id: str | None, session_id: str | None) -> bool:
    if session_id is not None:
        return view.session_id == session_id
    return user_id is None or view.user_id == user_id


def _keeps_entry(view: EntryView, sessions: set[str], user_id: str | None, session_id: str | None) -> bool:
    if view.state not in SHOWN_STATES or view.entry is None:
        return False
    if session_id is not None:
        return view.session_id == session_id
    if user_id is None:
        return True
    return view.session_id in sessions or view.entry.user_id == user_id


def _memory_users(views: Any) -> list[str]:
    """Every user with a memory version in the views (keys ``user SEP key SEP seq``)."""
    users: set[str] = set()
    for key in views.txn.cursor(db=views.dbs[b"memories"]).iternext(keys=True, values=False):
        users.add(bytes(key).split(b"\x00", 1)[0].decode())
    return sorted(users)


def _session(view: SessionView) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "session", "id": view.session_id, "user_id": view.user_id,
                            "agent_ids": list(view.agent_ids), "tags": list(view.tags),
                            "metadata": dict(view.metadata), "channel": view.channel,
                            "archived": view.archived, "started_at": format_micros(view.started_at)}
    if view.closed_at is not None:
        data["closed"] = True
    return {k: v for k, v in data.items() if v not in (None, [], {})}


def _entry(view: EntryView) -> dict[str, Any]:
    result = msgspec.to_builtins(entry_result(view))
    data: dict[str, Any] = {"type": "entry", "id": result["id"], "kind": result["type"],
                            "content": result["content"]}
    for name in _ENTRY_FIELDS:
        value = result.get(name)
        if value not in (None, [], {}, ()):
            data[name] = value
    return data


def export_jsonl(store: Store, **filters: Any) -> Iterator[str]:
    """The export as JSONL lines (each ending in a newline)."""
    found = exported(store, **filters)
    for item in (found.head, *found.sessions, *found.entries, *found.memories):
        yield _json.encode(item).decode() + "\n"


def export_markdown(store: Store, **filters: Any) -> Iterator[str]:
    """The export as a markdown document, one section per session."""
    found = exported(store, **filters)
    yield f"# memlog export (seq {found.head['seq']})\n"
    by_session: dict[str | None, list[dict[str, Any]]] = {}
    for entry in found.entries:
        by_session.setdefault(entry.get("session_id"), []).append(entry)
    if by_session.get(None):
        yield "\n## Outside sessions (project context, user preferences)\n"
        yield from (_md_entry(e) for e in by_session[None])
    for session in found.sessions:
        yield _md_session(session)
        yield from (_md_entry(e) for e in by_session.get(session["id"], []))
    users = sorted({m["user_id"] for m in found.memories})
    for user in users:
        yield f"\n## Memories of {user}\n\n"
        yield "".join(f"- **{m['key']}** ({m['id']}): {m['content']}\n"
                      for m in found.memories if m["user_id"] == user)


def _md_session(session: dict[str, Any]) -> str:
    facts = [f"{name}: {', '.join(v) if isinstance(v, list) else v}" for name in
             ("user_id", "agent_ids", "tags", "channel") if (v := session.get(name))]
    facts += [f"{k} = {v}" for k, v in session.get("metadata", {}).items()]
    state = " (archived)" if session.get("archived") else " (closed)" if session.get("closed") else ""
    return f"\n## Session {session['id']}{state}\n\n" + "".join(f"- {f}\n" for f in facts)


def _md_value(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _md_entry(entry: dict[str, Any]) -> str:
    who = entry.get("role") or ""
    if entry.get("agent_id"):
        who = f"{who} ({entry['agent_id']})" if who else entry["agent_id"]
    title = " · ".join(p for p in (entry.get("occurred_at"), entry["kind"], who, entry["id"]) if p)
    lines = [f"\n### {title}\n\n{entry['content']}\n"]
    details = {k: v for k, v in shown_details(entry.get("details", {})).items() if v not in (None, [], ())}
    extra = [f"{k}: {_md_value(v)}" for k, v in details.items()]
    extra += [f"{name}: {_md_value(entry[name])}" for name in ("tags", "importance", "derived_from")
              if entry.get(name) is not None]
    if extra:
        lines.append("\n" + "".join(f"- {x}\n" for x in extra))
    return "".join(lines)
